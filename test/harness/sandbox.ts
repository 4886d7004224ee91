/**
 * Whether this process may run the privileged integration tests: it is root AND lives in a
 * throwaway network namespace made by test/run.ts (`unshare -n`), so nothing it does to links,
 * routes or firewall rules can reach the real host.
 */
import { readlinkSync } from "node:fs";

/**
 * Set by test/run.ts in the environment of the `bun test` it starts inside `unshare -n`; the value
 * is the id (`net:[<inode>]`) of the namespace run.ts itself was in, i.e. the real host's.
 */
export const SANDBOX_ENV = "CNI_TEST_THROWAWAY_NETNS";

export function isRoot(): boolean {
  return typeof process.getuid === "function" && process.getuid() === 0;
}

/** The inode text (`net:[4026531840]`) of a process's network namespace, or "" when unreadable. */
export function netnsIdOf(pid: number | "self" | "thread-self"): string {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return "";
  }
}

/**
 * Root, started by run.ts, and really not in the namespace run.ts was in (nor in PID 1's, when that
 * is readable: some sandboxes hide it).
 */
export function sandboxed(): boolean {
  const host = process.env[SANDBOX_ENV] ?? "";
  if (!isRoot() || !host.startsWith("net:[")) return false;
  const own = netnsIdOf("self");
  const init = netnsIdOf(1);
  return own !== "" && own !== host && own !== init;
}
