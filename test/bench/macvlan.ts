/**
 * macvlan + host-local ADD/DEL medians, ours next to the Go reference, in one run, inside a throwaway
 * network namespace (the master is a veth created here). `bun test/bench/macvlan.ts [ROUNDS]`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const OURS = process.env.CNI_BENCH_OURS ?? join(ROOT, "dist/bin");
const GO = process.env.CNI_BENCH_GO ?? "/usr/lib/cni";
const ROUNDS = Number(process.argv[2] ?? 20);

if (process.env.CNI_BENCH_INNER !== "1") {
  const r = spawnSync("unshare", ["-n", process.execPath, import.meta.path, ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, CNI_BENCH_INNER: "1" },
  });
  process.exit(r.status ?? 1);
}

const sh = (...argv: string[]) => spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8" });
sh("ip", "link", "set", "lo", "up");
sh("ip", "link", "add", "mvmaster", "type", "veth", "peer", "name", "mvpeer");
sh("ip", "link", "set", "mvmaster", "up");
sh("ip", "link", "set", "mvpeer", "up");

function timed(file: string, env: Record<string, string>, stdin: string): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(file, [], { env: { PATH: process.env.PATH ?? "", ...env }, input: stdin, argv0: file });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${file} ${env.CNI_COMMAND} failed: ${r.stdout} ${r.stderr}`);
  return ms;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const impls = [["ours", OURS], ...(existsSync(join(GO, "macvlan")) ? [["go", GO]] : [])] as [string, string][];
const times: Record<string, { add: number[]; del: number[] }> = {};
const dataDir = mkdtempSync(join(tmpdir(), "cni-bench-mv-"));
try {
  for (let i = 0; i < ROUNDS; i++) {
    for (const [impl, dir] of impls) {
      const holder = sh("sh", "-c", "unshare -n sleep 60 >/dev/null 2>&1 & echo $!").stdout.trim();
      const conf = JSON.stringify({
        cniVersion: "1.0.0",
        name: `bench-mv-${impl}`,
        type: "macvlan",
        master: "mvmaster",
        mode: "bridge",
        ipam: { type: "host-local", subnet: impl === "go" ? "10.61.0.0/16" : "10.62.0.0/16", dataDir },
      });
      const env = { CNI_CONTAINERID: `c${i}`, CNI_NETNS: `/proc/${holder}/ns/net`, CNI_IFNAME: "eth0", CNI_PATH: dir };
      const t = (times[impl] ??= { add: [], del: [] });
      t.add.push(timed(join(dir, "macvlan"), { ...env, CNI_COMMAND: "ADD" }, conf));
      t.del.push(timed(join(dir, "macvlan"), { ...env, CNI_COMMAND: "DEL" }, conf));
      process.kill(Number(holder));
    }
  }
  for (const [impl, t] of Object.entries(times)) {
    console.log(`macvlan+host-local ${impl.padEnd(4)} add_ms=${median(t.add).toFixed(1)} del_ms=${median(t.del).toFixed(1)} n=${t.add.length}`);
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
