/**
 * Whether a caller is a descendant of the agent: a delegate that a call served here runs as a
 * process (an IPAM plugin found under another inode than this build's, a foreign IPAM that runs
 * ours as its own child, a chained plugin that execs another). Such a nested call must never wait
 * for capacity or ordering that only its ancestor, a call of this agent, can free: the agent
 * refuses it, and its shim runs the standalone executable (docs/resident.md, "Failure modes and
 * limits").
 *
 * Ancestry is the kernel's: the parent links of /proc/<pid>/stat, followed up to the agent or to a
 * process outside its tree. A process whose parent exited is re-parented (to init or a
 * subreaper) and is no longer seen as nested; its call then waits at most the agent's admission
 * bound before it is refused, so no wait is unbounded either way.
 */
import { readTextFile } from "../shared/sys/file.ts";

/** Deeper delegation than this is not followed (a chain of plugins is a few processes long). */
const MAX_DEPTH = 64;

/** The parent of process `pid` (field 4 of /proc/<pid>/stat, after the parenthesised name); -1 when it cannot be read. */
export function parentOf(pid: number): number {
  try {
    const stat = readTextFile(`/proc/${pid}/stat`);
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1] ?? -1);
  } catch {
    return -1;
  }
}

/** True when `ancestor` is the parent of `pid`, or its parent's parent, and so on. */
export function isDescendantOf(pid: number, ancestor: number, parent: (pid: number) => number = parentOf): boolean {
  let p = pid;
  for (let depth = 0; depth < MAX_DEPTH && p > 1; depth++) {
    p = parent(p);
    if (p === ancestor) return true;
  }
  return false;
}
