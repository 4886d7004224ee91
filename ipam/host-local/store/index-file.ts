/**
 * The owner index file `<network dir>/.host-local-owners`: a cache of "which reservation file
 * holds which owner key", written only by this implementation (see disk.ts for the design).
 *
 * Layout: one fixed-width header line carrying the directory stamp, then one JSON document:
 * ```
 * #host-local owner index v1 stamp=01795311489977000000
 * {"nested":false,"entries":[["10.1.2.3","1234","1795311480000000000",9,1,"c1\r\neth0"],...]}
 * ```
 * The header starts with `#`, so the whitespace-trimmed content can never equal a reservation
 * key (container IDs start with an alphanumeric): Go's recursive walk reads this file but never
 * matches, never releases and never reports it.
 */
import { closeSync, constants, openSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { O_CLOEXEC } from "../../../shared/sys/constants.ts";

export const INDEX_NAME = ".host-local-owners";
export const INDEX_TMP_NAME = ".host-local-owners.tmp";

const HEADER_PREFIX = "#host-local owner index v1 stamp=";
const STAMP_DIGITS = 20;
const HEADER_LENGTH = HEADER_PREFIX.length + STAMP_DIGITS + 1;
/** A stamp that no directory can have: the index is then never trusted without a rescan. */
export const NO_STAMP = 0n;

/** What the index knows about one file in the network directory. */
export interface IndexEntry {
  /** Path relative to the network directory (`10.1.2.3`, or `sub/x` for a nested file). */
  readonly name: string;
  /** Inode number and ctime (ns) of the file when its content was read, as decimal strings. */
  readonly ino: string;
  readonly ctimeNs: string;
  readonly size: number;
  /**
   * True when the file was already old (ctime well before the moment it was read): a later
   * replacement of the file then necessarily shows a different ctime, so an unchanged
   * (ino, ctime, size) proves the content unchanged.
   */
  readonly stable: boolean;
  /** Whitespace-trimmed content; null when the file could not be read. */
  readonly key: string | null;
}

export interface IndexSnapshot {
  /** mtime (ns) the directory had right after this index was written; NO_STAMP if unknown. */
  readonly stamp: bigint;
  /** True when the directory had subdirectories (their files are always re-read). */
  readonly nested: boolean;
  readonly entries: readonly IndexEntry[];
}

function header(stamp: bigint): string {
  return `${HEADER_PREFIX}${stamp.toString().padStart(STAMP_DIGITS, "0")}\n`;
}

/** Serialises a snapshot (header + JSON body). */
export function encodeIndex(s: IndexSnapshot): string {
  const rows = s.entries.map((e) => [e.name, e.ino, e.ctimeNs, e.size, e.stable ? 1 : 0, e.key]);
  return header(s.stamp) + JSON.stringify({ nested: s.nested, entries: rows }) + "\n";
}

/** Parses an index; null for anything malformed (a torn or foreign file is just ignored). */
export function decodeIndex(text: string): IndexSnapshot | null {
  if (text.length < HEADER_LENGTH || !text.startsWith(HEADER_PREFIX) || text[HEADER_LENGTH - 1] !== "\n") return null;
  const digits = text.slice(HEADER_PREFIX.length, HEADER_LENGTH - 1);
  if (!/^[0-9]+$/.test(digits)) return null;
  let body: unknown;
  try {
    body = JSON.parse(text.slice(HEADER_LENGTH));
  } catch {
    return null;
  }
  if (typeof body !== "object" || body === null) return null;
  const { nested, entries: rows } = body as { nested?: unknown; entries?: unknown };
  if (typeof nested !== "boolean" || !Array.isArray(rows)) return null;
  const entries: IndexEntry[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const r: unknown = rows[i];
    if (!Array.isArray(r) || r.length !== 6) return null;
    const [name, ino, ctimeNs, size, stable, key] = r as unknown[];
    if (
      typeof name !== "string" ||
      typeof ino !== "string" ||
      typeof ctimeNs !== "string" ||
      typeof size !== "number" ||
      (stable !== 0 && stable !== 1) ||
      (typeof key !== "string" && key !== null)
    ) {
      return null;
    }
    entries[i] = { name, ino, ctimeNs, size, stable: stable === 1, key };
  }
  return { stamp: BigInt(digits), nested, entries };
}

/** Reads the index of a network directory; null when missing or malformed. */
export function readIndexFile(dir: string): IndexSnapshot | null {
  let text: string;
  try {
    text = readFileSync(join(dir, INDEX_NAME), "utf8");
  } catch {
    return null;
  }
  return decodeIndex(text);
}

/**
 * Writes the index and stamps the directory, with the lock held:
 * 1. the body goes to a temp file renamed over the index (readers never see a torn body), with
 *    NO_STAMP in its header;
 * 2. the directory's mtime is set to a whole second at least 3 s in the past — any later change
 *    of the directory's entries (a create, unlink or rename by anyone, Go included) sets the mtime
 *    to the current time, which can then never equal this value, whatever the timestamp
 *    granularity of the filesystem;
 * 3. the mtime the filesystem actually stored is written into the header in place (an in-place
 *    write does not touch the directory).
 * If any step fails the header keeps NO_STAMP and the next reader rescans. Returns the stamp.
 */
export function writeIndexFile(dir: string, s: Omit<IndexSnapshot, "stamp">, nowMs: number, stampDirectory: boolean): bigint {
  const path = join(dir, INDEX_NAME);
  const tmp = join(dir, INDEX_TMP_NAME);
  writeFileSync(tmp, encodeIndex({ ...s, stamp: NO_STAMP }), { mode: 0o600 });
  renameSync(tmp, path);
  if (!stampDirectory) return NO_STAMP;
  const past = Math.floor(nowMs / 1000) - 3;
  utimesSync(dir, nowMs / 1000, past);
  const stamp = statSync(dir, { bigint: true }).mtimeNs;
  if (stamp === NO_STAMP) return NO_STAMP;
  const fd = openSync(path, constants.O_WRONLY | O_CLOEXEC);
  try {
    writeSync(fd, header(stamp), 0);
  } finally {
    closeSync(fd);
  }
  return stamp;
}
