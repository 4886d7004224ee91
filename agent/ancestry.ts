/**
 * Whether a caller is a descendant of the agent: a delegate that a call served here runs as a
 * process (an IPAM plugin found under another inode than this build's, a foreign IPAM that runs
 * ours as its own child, a chained plugin that execs another). Such a nested call must never wait
 * for capacity or ordering that only its ancestor, a call of this agent, can free: the agent
 * refuses it, and its shim runs the standalone executable (docs/resident.md, "Failure modes and
 * limits").
 *
 * Ancestry is the kernel's: the parent links of /proc/<pid>/stat, followed up to the agent or to a
 * process started before it. (Every ancestor of a process started before it, re-parented or not,
 * is older still, so none of them can be the agent: the walk usually ends at the caller's parent,
 * the container runtime.) A process whose parent exited is re-parented (to init or a subreaper)
 * and is no longer seen as nested; its call then waits at most the agent's admission bound before
 * it is refused, so no wait is unbounded either way.
 */
import { readProcText } from "../shared/sys/file.ts";

/** Deeper delegation than this is not followed (a chain of plugins is a few processes long). */
const MAX_DEPTH = 64;

/** What /proc/<pid>/stat says of a process's place in the tree; undefined when it is gone. */
export interface Lineage {
  parent: number;
  /** When it started, in clock ticks since boot (field 22). */
  started: number;
}

/** Process `pid`'s lineage (fields 4 and 22 of /proc/<pid>/stat, counted after the parenthesised name). */
export function lineageOf(pid: number): Lineage | undefined {
  let stat: string;
  try {
    stat = readProcText(`/proc/${pid}/stat`);
  } catch {
    return undefined;
  }
  // After ") ": state (3), ppid (4), ..., starttime (22).
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { parent: Number(fields[1]), started: Number(fields[19]) };
}

/** Who the agent is, as ancestry knows it: its pid and when it started. */
export interface AgentLineage {
  pid: number;
  started: number;
}

/**
 * True when `agent` is `parent` (the parent of the process asking), or `parent`'s parent, and so
 * on: that process descends from the agent.
 */
export function descendsFrom(parent: number, agent: AgentLineage, lineage: (pid: number) => Lineage | undefined = lineageOf): boolean {
  let p = parent;
  for (let depth = 0; depth < MAX_DEPTH && p > 1; depth++) {
    if (p === agent.pid) return true;
    const l = lineage(p);
    if (l === undefined || l.started < agent.started) return false;
    p = l.parent;
  }
  return false;
}
