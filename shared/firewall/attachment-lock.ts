/**
 * What keeps `cni-plugins reload` (operator/reload, docs/operator.md) from racing a pod's ADD or
 * DEL: one lock for every writer of the firewall state the plugins own, and a mark DEL leaves.
 *
 * - The lock: an exclusive flock(2) on `<dir>/lock` (one per node), taken by ADD and DEL around
 *   their rule writes (ipMasq, portmap, the firewall plugin, bridge spoof-check) and by reload
 *   around its checks and writes. It is held only around synchronous work, never across an await,
 *   so two writers never plan against a table the other is changing (no rule is added twice). A
 *   writer that answers later (firewalld, over D-Bus: its work returns a Promise) has the lock only
 *   until it returns, i.e. while it starts.
 * - The deletion mark: DEL, holding the lock, leaves
 *   `<dir>/deleted/<host netns inode>/<h16(network)>-<h16(containerID/ifName)>` (the attachment as
 *   JSON) BEFORE it removes anything; ADD removes it. Reload skips an attachment whose mark is newer
 *   than the runtime's cache entry for it, so it never puts back the rules of a container being
 *   deleted (its cache entry and netns outlive the plugins' DEL). Reload sweeps marks whose
 *   attachment has no cache entry any more.
 *
 * The state lives under /run (lost at reboot, as the rules are). A DEL whose lock or mark cannot be
 * written still removes its rules: DEL must not fail on this; ADD fails instead of writing unguarded.
 * Marks are kept for at least MARK_TTL_MS and less than twice that, in one directory per period of
 * MARK_TTL_MS; each DEL removes the directories of older periods (a few entries to list, whatever
 * the pod churn), so marks never pile up on a node where no reload runs. By then the runtime has long
 * dropped the attachment's cache entry (it does so right after DEL), or, if it never did, the
 * container's namespace is gone and reload skips it as dead.
 */
import { hashPrefix } from "./naming.ts";
import type { LockWaiter } from "../sys/lock-waiter.ts";
import { FileLock } from "../sys/flock.ts";
import { joinPath, mkdirAll, readDir, readTextFile, replaceFile, rmdir, stat, statIfExists, unlinkIfExists } from "../sys/file.ts";
import { annotate } from "../error/annotate.ts";

export const RELOAD_STATE_DIR = "/run/cni/reload";

/** One attachment, as the runtime names it (network, CNI_CONTAINERID, CNI_IFNAME). */
export interface AttachmentKey {
  network: string;
  containerID: string;
  ifName: string;
}

/** A deletion mark as found on disk. */
export interface DeletionMark extends AttachmentKey {
  /** When DEL left it (ms since the epoch). */
  atMs: number;
  path: string;
}

function lockPath(dir: string): string {
  return joinPath(dir, "lock");
}

/** How long a deletion mark is kept at least (see the module doc). */
export const MARK_TTL_MS = 60 * 60 * 1000;

/** This netns's part of the marks (throwaway namespaces never share them). */
function marksDir(dir: string): string {
  return joinPath(dir, "deleted", String(stat("/proc/thread-self/ns/net").ino));
}

/** The period of `ms` (its marks' directory name). */
function periodOf(ms: number): number {
  return Math.floor(ms / MARK_TTL_MS);
}

function markName(a: AttachmentKey): string {
  return `${hashPrefix(a.network, 16)}-${hashPrefix(`${a.containerID}/${a.ifName}`, 16)}`;
}

/** Where the attachment's mark is, if it has one: in this period's directory or the previous one's. */
function markPaths(dir: string, a: AttachmentKey, nowMs = Date.now()): [string, string] {
  const base = marksDir(dir);
  const p = periodOf(nowMs);
  return [joinPath(base, String(p), markName(a)), joinPath(base, String(p - 1), markName(a))];
}

function openLock(dir: string): FileLock {
  mkdirAll(dir, 0o700);
  return FileLock.open(lockPath(dir), 0o600);
}

/**
 * Holds the node's firewall lock until disposed, waiting as long as needed (blocks the thread); in
 * the resident agent `waiter` (the call's scope) ends the wait when the call is ended.
 */
export function lockFirewall(dir = RELOAD_STATE_DIR, waiter?: LockWaiter): Disposable {
  const lock = openLock(dir);
  try {
    lock.lock(waiter);
  } catch (err) {
    lock.close();
    throw err;
  }
  return lock;
}

/** The lock if it is free now; undefined when another writer holds it. */
export function tryLockFirewall(dir = RELOAD_STATE_DIR): Disposable | undefined {
  const lock = openLock(dir);
  let held = false;
  try {
    held = lock.tryLock();
  } finally {
    if (!held) lock.close();
  }
  return held ? lock : undefined;
}

/** Removes the attachment's deletion mark (nothing when there is none). The caller holds the lock. */
export function clearDeletionMark(a: AttachmentKey, dir = RELOAD_STATE_DIR): void {
  for (const path of markPaths(dir, a)) unlinkIfExists(path);
}

/** When DEL marked the attachment (ms since the epoch), undefined without a mark. */
export function deletionMarkTime(a: AttachmentKey, dir = RELOAD_STATE_DIR): number | undefined {
  for (const path of markPaths(dir, a)) {
    const st = statIfExists(path);
    if (st !== undefined) return Number(st.mtimeNs / 1_000_000n);
  }
  return undefined;
}

/** The names in `dir`, [] when it cannot be read. */
function namesIn(dir: string): string[] {
  try {
    return readDir(dir).map((e) => e.name);
  } catch {
    return [];
  }
}

/** Every deletion mark of this netns (unreadable ones are skipped). */
export function deletionMarks(dir = RELOAD_STATE_DIR): DeletionMark[] {
  const out: DeletionMark[] = [];
  for (const period of namesIn(marksDir(dir))) {
    const periodDir = joinPath(marksDir(dir), period);
    for (const name of namesIn(periodDir)) {
      if (name.includes(".tmp")) continue;
      const path = joinPath(periodDir, name);
      try {
        const k = JSON.parse(readTextFile(path)) as Partial<AttachmentKey>;
        if (typeof k.network !== "string" || typeof k.containerID !== "string" || typeof k.ifName !== "string") continue;
        out.push({ network: k.network, containerID: k.containerID, ifName: k.ifName, atMs: Number(stat(path).mtimeNs / 1_000_000n), path });
      } catch {
        // gone meanwhile, or not ours
      }
    }
  }
  return out;
}

/** Removes the directories of periods before the previous one (see the module doc). The caller holds the lock. */
function sweepOldMarks(dir: string, nowMs: number): void {
  const base = marksDir(dir);
  for (const period of namesIn(base)) {
    if (!/^\d+$/.test(period) || Number(period) >= periodOf(nowMs) - 1) continue;
    const periodDir = joinPath(base, period);
    for (const name of namesIn(periodDir)) unlinkIfExists(joinPath(periodDir, name));
    rmdir(periodDir);
  }
}

function writeMark(dir: string, a: AttachmentKey, nowMs: number): void {
  const [path, previous] = markPaths(dir, a, nowMs);
  unlinkIfExists(previous);
  mkdirAll(path.slice(0, path.lastIndexOf("/")), 0o700);
  replaceFile(path, JSON.stringify({ network: a.network, containerID: a.containerID, ifName: a.ifName }), 0o600);
}

/**
 * The writers' side of the lock and the marks, over one state directory. The lock is released when
 * `fn` returns: when that is a Promise, before anything it waits for (see the module doc).
 */
export interface AttachmentLock {
  /** ADD's firewall writes: `fn` under the lock, after removing a deletion mark of the same attachment. */
  whileAdding<T>(a: AttachmentKey, fn: () => T): T;
  /**
   * DEL's firewall removals: `fn` under the lock, after marking the attachment deleted. When the
   * lock or the mark cannot be had (a read-only or full /run), `fn` still runs: DEL must not fail
   * on it.
   */
  whileDeleting<T>(a: AttachmentKey, fn: () => T): T;
}

/**
 * The lock and marks under `dir` (the node's: {@link RELOAD_STATE_DIR}); `waiter`: how a wait for the
 * lock ends (lockFirewall).
 */
export function attachmentLock(dir = RELOAD_STATE_DIR, waiter?: LockWaiter): AttachmentLock {
  return {
    whileAdding(a, fn) {
      using _lock = annotate(`failed to take the firewall lock ${lockPath(dir)}`, () => lockFirewall(dir, waiter));
      clearDeletionMark(a, dir);
      return fn();
    },
    whileDeleting(a, fn) {
      let lock: Disposable | undefined;
      try {
        lock = lockFirewall(dir, waiter);
        const now = Date.now();
        writeMark(dir, a, now);
        sweepOldMarks(dir, now);
      } catch {
        // best effort (see above)
      }
      try {
        return fn();
      } finally {
        lock?.[Symbol.dispose]();
      }
    },
  };
}

/** No coordination at all: the in-memory fakes of unit tests, which no other writer sees. */
export const UNCOORDINATED: AttachmentLock = {
  whileAdding: (_a, fn) => fn(),
  whileDeleting: (_a, fn) => fn(),
};
