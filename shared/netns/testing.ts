/**
 * Test support (imported only by *.test.ts): throwaway network namespaces held open by
 * `unshare -n sleep infinity` children, addressed as /proc/<pid>/ns/net (no bind mounts, nothing
 * left behind), and the root guard for tests that need them.
 */

import { readlinkSync } from "node:fs";
import { NetNS } from "./netns.ts";

/** True when namespace tests can run (root). */
export function canUseNetns(): boolean {
  return typeof process.getuid === "function" && process.getuid() === 0;
}

/** Prints why root-only tests of `suite` are skipped (once per call) and returns the skip flag. */
export function skipUnlessRoot(suite: string): boolean {
  const skip = !canUseNetns();
  if (skip) console.warn(`[skip] ${suite}: needs root to create network namespaces (uid ${process.getuid?.()})`);
  return skip;
}

/** A throwaway netns kept alive by a child process. Dispose to kill the child (the netns goes with it). */
export interface ScratchNetns {
  readonly pid: number;
  /** /proc/<pid>/ns/net */
  readonly path: string;
  /** An open handle (closed by dispose). */
  readonly ns: NetNS;
  [Symbol.dispose](): void;
}

/** Starts `unshare -n sleep infinity` and waits (synchronously, ≤ 5 s) until its netns differs from ours. */
export function createScratchNetns(): ScratchNetns {
  const proc = Bun.spawn(["unshare", "-n", "sleep", "infinity"], { stdin: "ignore", stdout: "ignore", stderr: "inherit" });
  const path = `/proc/${proc.pid}/ns/net`;
  const own = readlinkSync("/proc/thread-self/ns/net");
  const deadline = Date.now() + 5000;
  for (;;) {
    let target = "";
    try {
      target = readlinkSync(path);
    } catch {
      // child not visible yet
    }
    if (target !== "" && target !== own) break;
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill(9);
      throw new Error(`unshare -n child did not enter a new netns (exit ${proc.exitCode})`);
    }
    Bun.sleepSync(2);
  }
  const ns = NetNS.open(path);
  return {
    pid: proc.pid,
    path,
    ns,
    [Symbol.dispose]() {
      ns.close();
      proc.kill(9);
    },
  };
}

/** Runs `cmd` (e.g. `ip -j link`) inside the scratch netns with nsenter and returns stdout; throws on failure. */
export function runIn(netns: ScratchNetns, cmd: string[]): string {
  const r = Bun.spawnSync(["nsenter", `--net=${netns.path}`, ...cmd], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: exit ${r.exitCode}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}
