/**
 * portmap benchmark (issue 4): ADD and DEL of 1, 20 and 200 port mappings (half tcp, half udp),
 * ours with the iptables and the nftables backend next to the Go portmap 1.1.1 (iptables, one
 * process per rule), each chained after a bridge + host-local ADD that is not timed. Only the
 * portmap process is timed, invoked as a runtime does (env + config on stdin). Rounds are
 * interleaved across implementations so load on a shared machine hits them alike. Runs itself
 * inside a throwaway network namespace (`unshare -n`) unless already in one (CNI_BENCH_INNER=1,
 * as when run.ts calls it).
 *
 *   bun test/bench/portmap.ts [ROUNDS=5]
 *
 * Prints one line per scenario: `portmap <ADD|DEL> N=<n> <impl> median_ms=… min_ms=… max_ms=… n=…`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const OURS = process.env.CNI_BENCH_OURS ?? join(ROOT, "dist/bin");
const GO = process.env.CNI_BENCH_GO ?? "/usr/lib/cni";
const ROUNDS = Number(process.argv[2] ?? 5);
const SIZES = [1, 20, 200] as const;
const BRIDGE = "pmbench0";

if (process.env.CNI_BENCH_INNER !== "1") {
  const r = spawnSync("unshare", ["-n", process.execPath, import.meta.path, ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, CNI_BENCH_INNER: "1" },
  });
  process.exit(r.status ?? 1);
}
spawnSync("ip", ["link", "set", "lo", "up"]);
spawnSync("sysctl", ["-qw", "net.ipv4.ip_forward=1"]);

interface Impl {
  label: string;
  dir: string;
  /** Extra portmap keys (the backend for ours; Go 1.1.1 only has iptables). */
  extra: Record<string, unknown>;
}

const impls: Impl[] = [
  { label: "ours-iptables", dir: OURS, extra: { backend: "iptables" } },
  { label: "ours-nftables", dir: OURS, extra: { backend: "nftables" } },
  ...(existsSync(join(GO, "portmap")) ? [{ label: "go-1.1.1-iptables", dir: GO, extra: {} }] : []),
];

/** Runs one plugin; returns its wall time (ms) and stdout. Throws on failure. */
function invoke(file: string, env: Record<string, string>, stdin: string): { ms: number; out: string } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(file, [], { env: { PATH: process.env.PATH ?? "", ...env }, input: stdin, argv0: file, encoding: "utf8", maxBuffer: 64 << 20 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${file} ${env.CNI_COMMAND} failed: ${r.stdout} ${r.stderr}`);
  return { ms, out: r.stdout };
}

function mappings(n: number): { hostPort: number; containerPort: number; protocol: string }[] {
  return Array.from({ length: n }, (_, i) => ({ hostPort: 30000 + i, containerPort: 8000 + i, protocol: i % 2 ? "udp" : "tcp" }));
}

const dataDir = mkdtempSync(join(tmpdir(), "cni-bench-portmap-"));
const bridgeConf = JSON.stringify({
  cniVersion: "1.0.0",
  name: "pm-bench",
  type: "bridge",
  bridge: BRIDGE,
  isGateway: true,
  ipam: { type: "host-local", dataDir, ranges: [[{ subnet: "10.97.0.0/16" }]] },
});

function readlinkOrEmpty(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return "";
  }
}

/** One round: untimed bridge ADD, timed portmap ADD + DEL, untimed bridge DEL. */
function round(impl: Impl, n: number, id: string): { add: number; del: number } {
  const holder = spawnSync("sh", ["-c", "unshare -n sleep 600 >/dev/null 2>&1 & echo $!"], { encoding: "utf8" }).stdout.trim();
  const netns = `/proc/${holder}/ns/net`;
  try {
    // `unshare` may not have entered its namespace yet when `sh` reports the pid.
    const own = readlinkSync("/proc/self/ns/net");
    for (let i = 0; i < 500 && readlinkOrEmpty(netns) === own; i++) Bun.sleepSync(2);
    if (readlinkOrEmpty(netns) === own || readlinkOrEmpty(netns) === "") throw new Error(`netns holder ${holder} did not start`);
    const env = { CNI_CONTAINERID: id, CNI_NETNS: netns, CNI_IFNAME: "eth0", CNI_PATH: OURS };
    const prevResult = JSON.parse(invoke(join(OURS, "bridge"), { ...env, CNI_COMMAND: "ADD" }, bridgeConf).out) as unknown;
    const pm = JSON.stringify({ cniVersion: "1.0.0", name: "pm-bench", type: "portmap", ...impl.extra, runtimeConfig: { portMappings: mappings(n) }, prevResult });
    const pmEnv = { ...env, CNI_PATH: impl.dir };
    const add = invoke(join(impl.dir, "portmap"), { ...pmEnv, CNI_COMMAND: "ADD" }, pm).ms;
    const del = invoke(join(impl.dir, "portmap"), { ...pmEnv, CNI_COMMAND: "DEL" }, pm).ms;
    invoke(join(OURS, "bridge"), { ...env, CNI_COMMAND: "DEL" }, bridgeConf);
    return { add, del };
  } finally {
    process.kill(Number(holder));
  }
}

function summary(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  return `median_ms=${mid.toFixed(1)} min_ms=${s[0]!.toFixed(1)} max_ms=${s[s.length - 1]!.toFixed(1)} n=${s.length}`;
}

try {
  for (const n of SIZES) {
    const times = new Map(impls.map((i) => [i.label, { add: [] as number[], del: [] as number[] }]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const impl of impls) {
        const t = round(impl, n, `pmb-${n}-${r}`);
        times.get(impl.label)!.add.push(t.add);
        times.get(impl.label)!.del.push(t.del);
      }
    }
    for (const verb of ["add", "del"] as const) {
      for (const impl of impls) {
        console.log(`portmap ${verb.toUpperCase()} N=${String(n).padEnd(3)} ${impl.label.padEnd(18)} ${summary(times.get(impl.label)![verb])}`);
      }
    }
  }
} finally {
  spawnSync("ip", ["link", "del", BRIDGE]);
  rmSync(dataDir, { recursive: true, force: true });
}
