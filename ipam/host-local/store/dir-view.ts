/**
 * An exact in-memory picture of a network directory's reservation files and their owner keys,
 * built either from the trusted owner index (no per-file I/O) or by scanning the directory
 * (see disk.ts for when each is used and why that is safe).
 */
import { O_NOFOLLOW, O_NONBLOCK, O_RDONLY } from "../../../shared/sys/constants.ts";
import { fstat, joinPath, lstatAtIfExists, open, readAll, readDir, type DirEntry } from "../../../shared/sys/file.ts";
import { close } from "../../../shared/sys/libc.ts";
import { encodeEntries, INDEX_NAME, INDEX_TMP_NAME, IndexBody, type IndexEntry } from "./index-file.ts";
import { goTrimSpace } from "./owner.ts";

/** Files in the network directory that are bookkeeping, never reservations. */
export const LOCK_NAME = "lock";
export const LAST_RESERVED_PREFIX = "last_reserved_ip.";
/**
 * The store's scratch file (disk.ts writes a new reservation or `last_reserved_ip.<n>` here
 * first, under the lock). Dot-prefixed, so it can never parse as an IP: Go's GetByID and our
 * STATUS and GC never count it; only a crash can leave it, and the next scan removes it.
 */
export const TEMP_NAME = ".host-local.tmp";

export function isBookkeepingName(name: string): boolean {
  return (
    name === LOCK_NAME || name.startsWith(LAST_RESERVED_PREFIX) || name === INDEX_NAME || name === INDEX_TMP_NAME || name === TEMP_NAME
  );
}

/** A file younger than this when read may still be replaced within one timestamp tick. */
const STABLE_AFTER_NS = 2_000_000_000n;

/** True when a file with this ctime, seen at `nowNs`, can be trusted by (ino, ctime, size) later. */
export function isStable(ctimeNs: bigint, nowNs: bigint): boolean {
  return nowNs - ctimeNs > STABLE_AFTER_NS;
}

const decoder = new TextDecoder();

/**
 * Reads one file as upstream's walk does (content trimmed), except that a symbolic link is never
 * followed (O_NOFOLLOW): it reads as unreadable. Returns undefined when the file no longer exists,
 * and an entry with key null when it cannot be read. Opened with O_NONBLOCK so that a planted FIFO
 * cannot hang the plugin.
 */
export function readEntry(dir: string, name: string, nowNs: bigint): IndexEntry | undefined {
  let fd: number;
  try {
    fd = open(joinPath(dir, name), O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
  } catch (err) {
    if ((err as { code?: unknown }).code === "ENOENT") return undefined;
    return { name, ino: "0", ctimeNs: "0", size: 0, stable: false, key: null };
  }
  try {
    const st = fstat(fd);
    const identity = { name, ino: st.ino.toString(), ctimeNs: st.ctimeNs.toString(), size: st.size };
    if (!st.isFile()) return { ...identity, stable: false, key: null };
    let key: string | null;
    try {
      key = goTrimSpace(decoder.decode(readAll(fd, st.size)));
    } catch {
      key = null;
    }
    return { ...identity, stable: isStable(st.ctimeNs, nowNs), key };
  } finally {
    close(fd);
  }
}

/**
 * How a scan proves that a file its index line describes is unchanged, so that it need not be read:
 * - "stat": lstat shows the line's inode, ctime and size, and the line was stable when written
 *   (exact: a replacement of the file shows another ctime);
 * - "listing": its directory entry names the line's inode (no call per file). A file replaced
 *   under the same name by one that got the freed inode number (ext4 and xfs reuse them) keeps
 *   its recorded owner; disk.ts uses this only where that is acceptable, and never lets such a
 *   picture be trusted by a later session.
 */
export type Verification = "stat" | "listing";

/**
 * True when `base`'s line for the top-level file `d` still describes it (see Verification);
 * `dirFd` is the directory, open, for "stat".
 */
function describes(dirFd: number, base: IndexBody, d: DirEntry, verification: Verification): boolean {
  if (d.kind !== "file") return false;
  if (verification === "listing") return base.lineContinues(d.name, `${d.ino}\t`);
  if (!base.has(d.name)) return false;
  const st = lstatAtIfExists(dirFd, d.name);
  return st !== undefined && st.isFile() && base.lineContinues(d.name, `${st.ino}\t${st.ctimeNs}\t${st.size}\t1\t`);
}

export interface ScanResult {
  /** The directory's picture: the index lines still describing their files, plus the files read. */
  readonly view: DirView;
  /** How many files had to be read (the rest were proven unchanged). */
  readonly filesRead: number;
  /** Every line kept was proven by stat (so when none was kept). */
  readonly exact: boolean;
  /** The scratch file TEMP_NAME was found (a crash leftover when the scan runs under the lock). */
  readonly sawTemp: boolean;
}

/**
 * Lists the directory once (recursively, as upstream's walk) and pictures every file that is not
 * bookkeeping. A top-level file whose line in `previous` still describes it (see Verification)
 * keeps that line without being read; every other file is read, and lines of files that are gone
 * or changed are dropped. Files in subdirectories are always read. A `previous` with a malformed
 * line is not used at all.
 */
export function scanDirectory(dir: string, previous: IndexBody | null, verification: Verification, nowNs: bigint): ScanResult {
  const base = previous !== null && previous.wellFormed() ? previous : new IndexBody("");
  const kept: string[] = [];
  const read: IndexEntry[] = [];
  let nested = false;
  let filesRead = 0;
  let sawTemp = false;
  const listing = readDir(dir);
  const dirFd = verification === "stat" && previous !== null ? open(dir, O_RDONLY) : -1;
  const visit = (rel: string, d: DirEntry, depth: number) => {
    if (d.kind === "dir") {
      nested = true;
      let children: DirEntry[];
      try {
        children = readDir(joinPath(dir, rel));
      } catch {
        return; // upstream's walk skips unreadable directories
      }
      for (const c of children) visit(`${rel}/${c.name}`, c, depth + 1);
      return;
    }
    if (depth === 0) {
      if (rel === TEMP_NAME) sawTemp = true;
      if (isBookkeepingName(rel)) return;
      if (describes(dirFd, base, d, verification)) {
        kept.push(rel);
        return;
      }
    }
    filesRead++;
    const e = readEntry(dir, rel, nowNs);
    if (e !== undefined) read.push(depth === 0 ? e : { ...e, stable: false });
  };
  try {
    for (const d of listing) visit(d.name, d, 0);
  } finally {
    if (dirFd >= 0) close(dirFd);
  }
  if (kept.length === 0) {
    // Everything was read: the entries themselves are the body (searched as text from now on).
    return { view: new DirView(new IndexBody(encodeEntries(read)), nested), filesRead, exact: true, sawTemp };
  }
  const view = new DirView(base, nested);
  if (kept.length !== base.size()) {
    const keep = new Set(kept);
    for (const name of base.names()) if (!keep.has(name)) view.remove(name);
  }
  for (const e of read) view.add(e);
  return { view, filesRead, exact: verification === "stat", sawTemp };
}

/**
 * The entries of a directory: the lines of an index body (searched as text, see index-file.ts)
 * plus this session's changes, kept apart so that writing them back can append instead of
 * rewriting the whole index.
 */
export class DirView {
  readonly #base: IndexBody;
  /** Entries added (or replaced) in this session, by name. */
  readonly #added = new Map<string, IndexEntry>();
  /** Names of the base removed (or replaced) in this session. */
  readonly #removed = new Set<string>();
  /** Whether the directory had subdirectories. */
  readonly nested: boolean;
  /** Changed since it was loaded: must be written back. */
  dirty = false;
  /**
   * Not proven to match the disk (found to disagree with it, or verified by listing only): the
   * next session must not trust it.
   */
  unproven = false;

  constructor(base: IndexBody, nested: boolean) {
    this.#base = base;
    this.nested = nested;
  }

  #inBase(name: string): boolean {
    return !this.#removed.has(name) && this.#base.has(name);
  }

  /** Every entry (parses the whole base). */
  entries(): IndexEntry[] {
    const out = this.#base.entries().filter((e) => !this.#removed.has(e.name));
    return [...out, ...this.#added.values()];
  }

  has(name: string): boolean {
    return this.#added.has(name) || this.#inBase(name);
  }

  /**
   * How the file `name` is pictured: absent, held, or empty (a crash leftover, see disk.ts); one
   * lookup, without parsing its line (an allocation asks this of every taken address it passes).
   */
  holding(name: string): "absent" | "held" | "empty" {
    const added = this.#added.get(name);
    if (added !== undefined) return added.key === "" ? "empty" : "held";
    if (this.#removed.has(name)) return "absent";
    const start = this.#base.lineStart(name);
    if (start < 0) return "absent";
    return this.#base.lineHasKey(start, "") ? "empty" : "held";
  }

  /** Names of the files whose trimmed content is exactly `key`. */
  namesWithKey(key: string): string[] {
    const names = this.#base.namesWithKey(key).filter((n) => !this.#removed.has(n));
    for (const e of this.#added.values()) if (e.key === key) names.push(e.name);
    return names;
  }

  add(e: IndexEntry): void {
    if (this.#base.has(e.name)) this.#removed.add(e.name);
    this.#added.set(e.name, e);
  }

  remove(name: string): void {
    this.#added.delete(name);
    if (this.#base.has(name)) this.#removed.add(name);
  }

  /** Lines to append to the base's file, or null when the base itself changed (rewrite needed). */
  appendedLines(): string | null {
    return this.#removed.size === 0 ? encodeEntries(this.#added.values()) : null;
  }

  /** The whole body as it is now. */
  body(): string {
    return this.#base.without(this.#removed) + encodeEntries(this.#added.values());
  }
}
