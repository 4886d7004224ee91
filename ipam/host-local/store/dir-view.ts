/**
 * An exact in-memory picture of a network directory's reservation files and their owner keys,
 * built either from the trusted owner index (no per-file I/O) or by scanning the directory
 * (see disk.ts for when each is used and why that is safe).
 */
import { O_NOFOLLOW, O_NONBLOCK, O_RDONLY } from "../../../shared/sys/constants.ts";
import { fstat, joinPath, lstatIfExists, open, readAll, readDir, type DirEntry } from "../../../shared/sys/file.ts";
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

/** True when `prev` still describes the file at `name` (same inode, ctime and size). */
function unchanged(dir: string, prev: IndexEntry): boolean {
  if (!prev.stable) return false;
  const st = lstatIfExists(joinPath(dir, prev.name));
  return st !== undefined && st.isFile() && st.ino.toString() === prev.ino && st.ctimeNs.toString() === prev.ctimeNs && st.size === prev.size;
}

export interface ScanResult {
  readonly entries: IndexEntry[];
  readonly nested: boolean;
  /** How many files had to be read (the rest were proven unchanged by lstat). */
  readonly filesRead: number;
  /** The scratch file TEMP_NAME was found (a crash leftover when the scan runs under the lock). */
  readonly sawTemp: boolean;
}

/**
 * Lists the directory (recursively, as upstream's walk) and returns an entry for every file that
 * is not bookkeeping. Top-level files that `previous` describes and that are provably unchanged
 * keep their entry without being read; everything else is read. Files in subdirectories are
 * always read.
 */
export function scanDirectory(dir: string, previous: ReadonlyMap<string, IndexEntry> | null, nowNs: bigint): ScanResult {
  const entries: IndexEntry[] = [];
  let nested = false;
  let filesRead = 0;
  let sawTemp = false;
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
      const prev = previous?.get(rel);
      if (prev !== undefined && d.kind === "file" && unchanged(dir, prev)) {
        entries.push(prev);
        return;
      }
    }
    filesRead++;
    const e = readEntry(dir, rel, nowNs);
    if (e !== undefined) entries.push(depth === 0 ? e : { ...e, stable: false });
  };
  for (const d of readDir(dir)) visit(d.name, d, 0);
  return { entries, nested, filesRead, sawTemp };
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
  /** Found to disagree with the disk: must not be trusted by the next reader. */
  invalid = false;

  constructor(base: IndexBody, nested: boolean) {
    this.#base = base;
    this.nested = nested;
  }

  /** A view of scanned entries (the index body is built from them). */
  static of(entries: Iterable<IndexEntry>, nested: boolean): DirView {
    return new DirView(new IndexBody(encodeEntries(entries)), nested);
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

  /** The entry of `name`, or undefined. */
  get(name: string): IndexEntry | undefined {
    return this.#added.get(name) ?? (this.#inBase(name) ? this.#base.get(name) : undefined);
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
