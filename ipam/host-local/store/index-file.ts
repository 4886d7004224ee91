/**
 * The owner index file `<network dir>/.host-local-owners`: a cache of "which reservation file
 * holds which owner key", written only by this implementation (see disk.ts for the design).
 *
 * Layout: one fixed-width header line carrying the directory stamp, then one line per file:
 * ```
 * #host-local owner index v2 nested=0 stamp=01795311489977000000
 * "10.1.2.3"\t1234\t1795311480000000000\t9\t1\t"c1\r\neth0"
 * ```
 * Fields: name and owner key as JSON strings (the key `null` when the file could not be read),
 * inode, ctime (ns), size, stable (0/1). JSON strings never contain a raw tab or newline, so a
 * line is found by searching the raw text for `\n"<name>"\t` or `\t"<key>"\n`: a lookup costs one
 * read and a substring search of the file, never a parse of every entry, and a new reservation is
 * one appended line (disk.ts keeps the file exact). At 20,000 reservations the file is about
 * 1.5 MB.
 *
 * The header starts with `#`, so the whitespace-trimmed content can never equal a reservation
 * key (container IDs start with an alphanumeric): Go's recursive walk reads this file but never
 * matches, never releases and never reports it. A file in the older v1 layout (one JSON
 * document) is not recognised: the directory is then scanned and the index rewritten.
 */
import { O_APPEND, O_NOFOLLOW, O_RDONLY, O_WRONLY } from "../../../shared/sys/constants.ts";
import { joinPath, readTextFile, replaceFile, stat, utimes, writeFile } from "../../../shared/sys/file.ts";

export const INDEX_NAME = ".host-local-owners";
export const INDEX_TMP_NAME = ".host-local-owners.tmp";

const HEADER_PREFIX = "#host-local owner index v2 nested=";
const STAMP_KEY = " stamp=";
const STAMP_DIGITS = 20;
const HEADER_LENGTH = HEADER_PREFIX.length + 1 + STAMP_KEY.length + STAMP_DIGITS + 1;
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

/** An index as read from disk: the header's facts and the unparsed entry lines. */
export interface IndexFile {
  /** mtime (ns) the directory had right after this index was written; NO_STAMP if unknown. */
  readonly stamp: bigint;
  /** True when the directory had subdirectories (their files are always re-read). */
  readonly nested: boolean;
  readonly body: IndexBody;
}

function header(nested: boolean, stamp: bigint): string {
  return `${HEADER_PREFIX}${nested ? 1 : 0}${STAMP_KEY}${stamp.toString().padStart(STAMP_DIGITS, "0")}\n`;
}

/** One entry as an index line (with its newline). */
export function encodeEntry(e: IndexEntry): string {
  const key = e.key === null ? "null" : JSON.stringify(e.key);
  return `${JSON.stringify(e.name)}\t${e.ino}\t${e.ctimeNs}\t${e.size}\t${e.stable ? 1 : 0}\t${key}\n`;
}

/** The index body of `entries`. */
export function encodeEntries(entries: Iterable<IndexEntry>): string {
  let out = "";
  for (const e of entries) out += encodeEntry(e);
  return out;
}

/** A malformed entry line: the index must not be used. */
export class IndexCorruptError extends Error {
  override name = "IndexCorruptError";
}

const DIGITS = /^[0-9]+$/;

function parseJsonString(text: string, nullable: boolean): string | null {
  if (nullable && text === "null") return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new IndexCorruptError(`bad field ${text.slice(0, 40)}`);
  }
  if (typeof v !== "string") throw new IndexCorruptError(`bad field ${text.slice(0, 40)}`);
  return v;
}

/** Parses one line (without its newline). Throws IndexCorruptError when malformed. */
export function decodeEntry(line: string): IndexEntry {
  const f = line.split("\t");
  if (f.length !== 6) throw new IndexCorruptError(`bad line ${line.slice(0, 60)}`);
  const [name, ino, ctimeNs, size, stable, key] = f as [string, string, string, string, string, string];
  if (!DIGITS.test(ino) || !DIGITS.test(ctimeNs) || !DIGITS.test(size) || (stable !== "0" && stable !== "1")) {
    throw new IndexCorruptError(`bad line ${line.slice(0, 60)}`);
  }
  return { name: parseJsonString(name, false)!, ino, ctimeNs, size: Number(size), stable: stable === "1", key: parseJsonString(key, true) };
}

/** A JSON string without escapes: its text between the quotes is the name itself. */
const PLAIN_JSON_STRING = /^"[^"\\\x00-\x1f]*"$/;

/** The name whose JSON string is exactly `quoted` (how encodeEntry writes it), or undefined. */
function lineName(quoted: string): string | undefined {
  if (PLAIN_JSON_STRING.test(quoted)) return quoted.slice(1, -1);
  try {
    const name: unknown = JSON.parse(quoted);
    return typeof name === "string" && JSON.stringify(name) === quoted ? name : undefined;
  } catch {
    return undefined;
  }
}

/**
 * After this many lookups by name in one body, it indexes its lines by name (one pass over the
 * text) instead of searching the text again: an allocation that meets thousands of taken
 * addresses then costs one pass plus O(1) per address, where a single lookup (the usual ADD)
 * stays one substring search.
 */
const SEARCHES_BEFORE_INDEXING = 4;

/**
 * The entry lines of an index, searched as text. `text` is "" or newline-terminated lines; each
 * name occurs on at most one line (disk.ts never writes a name twice).
 */
export class IndexBody {
  readonly text: string;
  /** Name → start offset of its line; built on demand (see SEARCHES_BEFORE_INDEXING). */
  #lines: Map<string, number> | undefined;
  /** Lines not indexed by a name of their own (malformed first field, or a name seen before). */
  #strayLines = 0;
  #searches = 0;
  /** The last key hasKey was asked about (an allocation asks about "" for every taken address) and its field text. */
  #keyFieldOf: string | undefined;
  #keyField = "";

  constructor(text: string) {
    this.text = text;
  }

  /** True once the lines are indexed by name (lookups no longer search the text). */
  get indexed(): boolean {
    return this.#lines !== undefined;
  }

  /** Start offset of `name`'s line, or -1. */
  lineStart(name: string): number {
    if (this.#lines === undefined && ++this.#searches > SEARCHES_BEFORE_INDEXING) this.#lines = this.#indexLines();
    if (this.#lines !== undefined) return this.#lines.get(name) ?? -1;
    const needle = `${JSON.stringify(name)}\t`;
    if (this.text.startsWith(needle)) return 0;
    const at = this.text.indexOf(`\n${needle}`);
    return at < 0 ? -1 : at + 1;
  }

  /**
   * Every line's name and start offset, in one pass. A line is found under a name exactly when
   * the text search finds it: it starts with the name's JSON string followed by a tab (the first
   * such line wins).
   */
  #indexLines(): Map<string, number> {
    const lines = new Map<string, number>();
    const text = this.text;
    for (let start = 0; start < text.length; ) {
      const end = text.indexOf("\n", start);
      const stop = end < 0 ? text.length : end;
      const tab = text.indexOf("\t", start);
      if (tab > start && tab < stop) {
        const quoted = text.slice(start, tab);
        const name = lineName(quoted);
        if (name !== undefined && !lines.has(name)) lines.set(name, start);
        else this.#strayLines++;
      } else {
        this.#strayLines++;
      }
      start = stop + 1;
    }
    return lines;
  }

  /** Every name with a line (builds the name index). */
  names(): IterableIterator<string> {
    this.#lines ??= this.#indexLines();
    return this.#lines.keys();
  }

  /** How many names have a line (builds the name index). */
  size(): number {
    this.#lines ??= this.#indexLines();
    return this.#lines.size;
  }

  /** True when every line is indexed under a name of its own (builds the name index). */
  wellFormed(): boolean {
    this.#lines ??= this.#indexLines();
    return this.#strayLines === 0;
  }

  has(name: string): boolean {
    return this.lineStart(name) >= 0;
  }

  /**
   * Whether `name`'s line starts with `fields` right after the name and its tab (e.g. the inode
   * number and a tab); false when there is no line.
   */
  lineContinues(name: string, fields: string): boolean {
    const start = this.lineStart(name);
    return start >= 0 && this.text.startsWith(fields, this.text.indexOf("\t", start) + 1);
  }

  /** Whether `name`'s line ends with the owner key `key`; false when there is no line. */
  hasKey(name: string, key: string): boolean {
    const start = this.lineStart(name);
    return start >= 0 && this.lineHasKey(start, key);
  }

  /** Whether the line starting at `start` (from lineStart) ends with the owner key `key`. */
  lineHasKey(start: number, key: string): boolean {
    if (key !== this.#keyFieldOf) {
      this.#keyFieldOf = key;
      this.#keyField = `\t${JSON.stringify(key)}`;
    }
    const field = this.#keyField;
    const end = this.text.indexOf("\n", start);
    return end - start > field.length && this.text.startsWith(field, end - field.length);
  }

  /** Names of the entries whose key is exactly `key`. */
  namesWithKey(key: string): string[] {
    const needle = `\t${JSON.stringify(key)}\n`;
    const names: string[] = [];
    for (let at = this.text.indexOf(needle); at >= 0; at = this.text.indexOf(needle, at + needle.length)) {
      const start = this.text.lastIndexOf("\n", at) + 1;
      names.push(decodeEntry(this.text.slice(start, at + needle.length - 1)).name);
    }
    return names;
  }

  /** Every entry, parsed. */
  entries(): IndexEntry[] {
    const out: IndexEntry[] = [];
    let start = 0;
    while (start < this.text.length) {
      const end = this.text.indexOf("\n", start);
      if (end < 0) throw new IndexCorruptError("unterminated line");
      out.push(decodeEntry(this.text.slice(start, end)));
      start = end + 1;
    }
    return out;
  }

  /** The text without the lines of `names` (names without a line are ignored). */
  without(names: Iterable<string>): string {
    const cuts: number[] = [];
    for (const name of names) {
      const start = this.lineStart(name);
      if (start >= 0) cuts.push(start);
    }
    if (cuts.length === 0) return this.text;
    cuts.sort((a, b) => a - b);
    let out = "";
    let from = 0;
    for (const start of cuts) {
      out += this.text.slice(from, start);
      from = this.text.indexOf("\n", start) + 1;
    }
    return out + this.text.slice(from);
  }
}

/** Parses an index's header; null for anything that is not a v2 index (the file is then ignored). */
export function decodeIndex(text: string): IndexFile | null {
  if (text.length < HEADER_LENGTH || !text.startsWith(HEADER_PREFIX) || text[HEADER_LENGTH - 1] !== "\n") return null;
  const nestedFlag = text[HEADER_PREFIX.length];
  if (nestedFlag !== "0" && nestedFlag !== "1") return null;
  if (text.slice(HEADER_PREFIX.length + 1, HEADER_PREFIX.length + 1 + STAMP_KEY.length) !== STAMP_KEY) return null;
  const digits = text.slice(HEADER_LENGTH - 1 - STAMP_DIGITS, HEADER_LENGTH - 1);
  if (!DIGITS.test(digits)) return null;
  const body = text.slice(HEADER_LENGTH);
  if (body !== "" && !body.endsWith("\n")) return null; // torn
  return { stamp: BigInt(digits), nested: nestedFlag === "1", body: new IndexBody(body) };
}

/** Reads the index of a network directory; null when missing or not a v2 index. */
export function readIndexFile(dir: string): IndexFile | null {
  let text: string;
  try {
    text = readTextFile(joinPath(dir, INDEX_NAME), O_RDONLY | O_NOFOLLOW);
  } catch {
    return null;
  }
  return decodeIndex(text);
}

/**
 * Stamps the directory after the index's entry lines are on disk, with the lock held:
 * 1. the directory's mtime is set to a whole second at least 3 s in the past — any later change
 *    of the directory's entries (a create, unlink or rename by anyone, Go included) sets the mtime
 *    to the current time, which can then never equal this value, whatever the timestamp
 *    granularity of the filesystem;
 * 2. the mtime the filesystem actually stored is written into the header in place (an in-place
 *    write does not touch the directory).
 * Returns the stamp (NO_STAMP when the filesystem stored none).
 */
function stampDirectory(dir: string, path: string, nested: boolean, nowMs: number): bigint {
  const past = Math.floor(nowMs / 1000) - 3;
  utimes(dir, nowMs / 1000, past);
  const stamp = stat(dir).mtimeNs;
  if (stamp === NO_STAMP) return NO_STAMP;
  writeFile(path, header(nested, stamp), 0o600, O_WRONLY | O_NOFOLLOW); // in place: no O_TRUNC
  return stamp;
}

/**
 * Writes a whole index: the body goes to a temp file renamed over the index (readers never see a
 * torn body, a planted symbolic link is replaced, not written through) with NO_STAMP in its header, then the directory is stamped (see stampDirectory)
 * unless `stamp` is false. If any step fails the header keeps NO_STAMP and the next reader
 * rescans. Returns the stamp.
 */
export function writeIndexFile(dir: string, nested: boolean, body: string, nowMs: number, stamp: boolean): bigint {
  const path = joinPath(dir, INDEX_NAME);
  replaceFile(path, header(nested, NO_STAMP) + body, 0o600, joinPath(dir, INDEX_TMP_NAME));
  return stamp ? stampDirectory(dir, path, nested, nowMs) : NO_STAMP;
}

/**
 * Appends entry lines to the index this session read as trusted, then stamps the directory. Only
 * for a session that changed the directory (created a reservation): should the process die before
 * the new stamp is written, the directory's mtime is that change's, which no stamp can equal, so
 * the next reader rescans instead of trusting a half-written tail.
 */
export function appendIndexFile(dir: string, nested: boolean, lines: string, nowMs: number): bigint {
  const path = joinPath(dir, INDEX_NAME);
  writeFile(path, lines, 0o600, O_WRONLY | O_APPEND | O_NOFOLLOW);
  return stampDirectory(dir, path, nested, nowMs);
}
