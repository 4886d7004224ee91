/**
 * `make bench`: start-up and ADD/DEL medians of our plugins next to the Go reference binaries
 * (/usr/lib/cni, apt containernetworking-plugins), measured in the same run, as a runtime invokes
 * them (env + stdin, one process per call). Runs itself inside a throwaway network namespace.
 *
 *   bun test/bench/run.ts [ROUNDS]
 *
 * Prints one line per scenario: `<scenario> <impl> median_ms=… p90_ms=… n=…`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const OURS = process.env.CNI_BENCH_OURS ?? join(ROOT, "dist/bin");
const GO = process.env.CNI_BENCH_GO ?? "/usr/lib/cni";
const ROUNDS = Number(process.argv[2] ?? 200);

if (process.env.CNI_BENCH_INNER !== "1") {
  const r = spawnSync("unshare", ["-n", process.execPath, import.meta.path, ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, CNI_BENCH_INNER: "1" },
  });
  process.exit(r.status ?? 1);
}
spawnSync("ip", ["link", "set", "lo", "up"]);

function run(file: string, env: Record<string, string>, stdin: string): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(file, [], { env: { PATH: process.env.PATH ?? "", ...env }, input: stdin, argv0: file });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${file} ${env.CNI_COMMAND} failed: ${r.stdout} ${r.stderr}`);
  return ms;
}

function stats(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return `median_ms=${q(0.5).toFixed(2)} p90_ms=${q(0.9).toFixed(2)} n=${s.length}`;
}

const impls = [["ours", OURS] as const, ...(existsSync(join(GO, "host-local")) ? [["go", GO] as const] : [])];
const netns = spawnSync("sh", ["-c", "unshare -n sleep 3600 >/dev/null 2>&1 & echo $!"], { encoding: "utf8" }).stdout.trim();
const nsPath = `/proc/${netns}/ns/net`;

try {
  for (const [impl, dir] of impls) {
    const times: number[] = [];
    for (let i = 0; i < ROUNDS; i++) times.push(run(join(dir, "loopback"), { CNI_COMMAND: "VERSION" }, ""));
    console.log(`startup(VERSION,loopback) ${impl.padEnd(4)} ${stats(times)}`);
  }
  for (const [impl, dir] of impls) {
    const add: number[] = [];
    const del: number[] = [];
    const conf = JSON.stringify({ cniVersion: "1.0.0", name: "bench-lo", type: "loopback" });
    for (let i = 0; i < ROUNDS / 2; i++) {
      const env = { CNI_CONTAINERID: `c${i}`, CNI_NETNS: nsPath, CNI_IFNAME: "lo", CNI_PATH: dir };
      add.push(run(join(dir, "loopback"), { ...env, CNI_COMMAND: "ADD" }, conf));
      del.push(run(join(dir, "loopback"), { ...env, CNI_COMMAND: "DEL" }, conf));
    }
    console.log(`loopback ADD              ${impl.padEnd(4)} ${stats(add)}`);
    console.log(`loopback DEL              ${impl.padEnd(4)} ${stats(del)}`);
  }
  for (const [impl, dir] of impls) {
    const dataDir = mkdtempSync(join(tmpdir(), "cni-bench-"));
    const conf = JSON.stringify({
      cniVersion: "1.0.0",
      name: "bench-hl",
      type: "host-local",
      ipam: { type: "host-local", dataDir, ranges: [[{ subnet: "10.77.0.0/16" }], [{ subnet: "fd77::/64" }]] },
    });
    const add: number[] = [];
    const del: number[] = [];
    for (let i = 0; i < ROUNDS / 2; i++) {
      const env = { CNI_CONTAINERID: `c${i}`, CNI_NETNS: nsPath, CNI_IFNAME: "eth0", CNI_PATH: dir };
      add.push(run(join(dir, "host-local"), { ...env, CNI_COMMAND: "ADD" }, conf));
    }
    for (let i = 0; i < ROUNDS / 2; i++) {
      const env = { CNI_CONTAINERID: `c${i}`, CNI_NETNS: nsPath, CNI_IFNAME: "eth0", CNI_PATH: dir };
      del.push(run(join(dir, "host-local"), { ...env, CNI_COMMAND: "DEL" }, conf));
    }
    console.log(`host-local ADD (dual)     ${impl.padEnd(4)} ${stats(add)}`);
    console.log(`host-local DEL (dual)     ${impl.padEnd(4)} ${stats(del)}`);
    rmSync(dataDir, { recursive: true, force: true });
  }
  for (const [impl, dir] of impls) {
    const dataDir = mkdtempSync(join(tmpdir(), "cni-bench-"));
    const conf = JSON.stringify({
      cniVersion: "1.0.0",
      name: "bench-par",
      ipam: { type: "host-local", dataDir, subnet: "10.78.0.0/16" },
    });
    const confFile = join(dataDir, "conf.json");
    writeFileSync(confFile, conf);
    const script = (cmd: string) =>
      `for i in $(seq 1 50); do CNI_COMMAND=${cmd} CNI_CONTAINERID=p$i CNI_NETNS=${nsPath} CNI_IFNAME=eth0 ` +
      `CNI_PATH=${dir} ${dir}/host-local < $CONF > /dev/null || echo FAIL & done; wait`;
    for (const cmd of ["ADD", "DEL"]) {
      const t0 = process.hrtime.bigint();
      const r = spawnSync("bash", ["-c", script(cmd)], { env: { ...process.env, CONF: confFile }, encoding: "utf8" });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      console.log(`host-local 50 concurrent ${cmd} ${impl.padEnd(4)} total_ms=${ms.toFixed(0)} failures=${(r.stdout.match(/FAIL/g) ?? []).length}`);
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
} finally {
  process.kill(Number(netns));
}

// portmap: 1, 20 and 200 port mappings ADD/DEL, ours (iptables, nftables) next to Go (test/bench/portmap.ts).
const portmapBench = spawnSync(process.execPath, [join(import.meta.dir, "portmap.ts")], { stdio: "inherit", env: { ...process.env, CNI_BENCH_OURS: OURS, CNI_BENCH_GO: GO } });
if (portmapBench.status !== 0) process.exitCode = 1;

// macvlan + host-local ADD/DEL medians next to Go (test/bench/macvlan.ts).
const macvlanBench = spawnSync(process.execPath, [join(import.meta.dir, "macvlan.ts")], { stdio: "inherit", env: { ...process.env, CNI_BENCH_OURS: OURS, CNI_BENCH_GO: GO } });
if (macvlanBench.status !== 0) process.exitCode = 1;
