/**
 * Synchronous file-system calls over libc (open, read, write, stat, readdir, rename, ...) for the
 * start-up path of plugin processes. Loading node:fs costs a compiled plugin about 4-5 ms and
 * several MB (it brings Node's stream machinery with it), while libc is bound anyway for netlink
 * (docs/performance.md). Failures throw SyscallError, whose `code` (ENOENT, EEXIST, ...) and
 * positive `errno` are what callers test, as they would on a node:fs error.
 */
import {
  AT_EMPTY_PATH,
  AT_FDCWD,
  AT_REMOVEDIR,
  AT_SYMLINK_NOFOLLOW,
  DT_DIR,
  DT_LNK,
  DT_REG,
  DT_UNKNOWN,
  O_CLOEXEC,
  O_CREAT,
  O_EXCL,
  O_RDONLY,
  O_TRUNC,
  O_WRONLY,
  S_IFDIR,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  S_IFSOCK,
  STATX_BASIC_STATS,
  STATX_MNT_ID,
} from "./constants.ts";
import { EAGAIN, EEXIST, EIO, ENOENT, SyscallError } from "./errno.ts";
import { LINUX_DIRENT64, STATX, STATX_TIMESTAMP } from "./layouts.ts";
import { close, getcwd, getdents64, getpid, gettid, linkat, mkdirat, openat, read, renameat, statx, unlinkat, utimensat, write } from "./libc.ts";

/**
 * `path` made absolute against the calling thread's working directory and cleaned, as Go's
 * `filepath.Abs` does (an absolute path is only cleaned).
 */
export function absolutePath(path: string): string {
  return path.startsWith("/") ? joinPath(path) : joinPath(getcwd(), path);
}

/**
 * Joins path elements and cleans the result like Go's `filepath.Join` (and node's `path.join`
 * except for a trailing slash): empty elements are skipped, `//`, `.` and `x/..` collapse, `..`
 * above the root is dropped, and an empty result is ".".
 */
export function joinPath(...parts: string[]): string {
  const joined = parts.filter((p) => p !== "").join("/");
  if (joined === "") return ".";
  const rooted = joined.startsWith("/");
  const out: string[] = [];
  for (const el of joined.split("/")) {
    if (el === "" || el === ".") continue;
    if (el === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!rooted) out.push("..");
      continue;
    }
    out.push(el);
  }
  const body = out.join("/");
  return rooted ? `/${body}` : body === "" ? "." : body;
}

/**
 * What stat(2) says about a file (from struct statx). Fields are decoded when read: a directory
 * verification stats thousands of files and reads two or three fields of each.
 */
export class FileStat {
  readonly #v: DataView;

  constructor(buf: Uint8Array) {
    this.#v = new DataView(buf.buffer, buf.byteOffset, STATX.size);
  }

  /** Device, as glibc's makedev(major, minor) (node:fs `dev`). */
  get dev(): bigint {
    const major = BigInt(this.#v.getUint32(STATX.stx_dev_major, true));
    const minor = BigInt(this.#v.getUint32(STATX.stx_dev_minor, true));
    return ((major & 0xfffff000n) << 32n) | ((major & 0xfffn) << 8n) | ((minor & 0xffffff00n) << 12n) | (minor & 0xffn);
  }
  get ino(): bigint {
    return this.#v.getBigUint64(STATX.stx_ino, true);
  }
  get mode(): number {
    return this.#v.getUint16(STATX.stx_mode, true);
  }
  /** The owner's user id. */
  get uid(): number {
    return this.#v.getUint32(STATX.stx_uid, true);
  }
  get size(): number {
    return Number(this.#v.getBigUint64(STATX.stx_size, true));
  }
  get mtimeNs(): bigint {
    return this.#time(STATX.stx_mtime);
  }
  get ctimeNs(): bigint {
    return this.#time(STATX.stx_ctime);
  }
  /** The id of the file's mount; undefined when the kernel did not fill it in (statWithMount asks for it; Linux 5.8). */
  get mountId(): bigint | undefined {
    if ((this.#v.getUint32(STATX.stx_mask, true) & STATX_MNT_ID) === 0) return undefined;
    return this.#v.getBigUint64(STATX.stx_mnt_id, true);
  }

  #time(at: number): bigint {
    return this.#v.getBigInt64(at + STATX_TIMESTAMP.tv_sec, true) * 1_000_000_000n + BigInt(this.#v.getUint32(at + STATX_TIMESTAMP.tv_nsec, true));
  }

  isFile(): boolean {
    return (this.mode & S_IFMT) === S_IFREG;
  }
  isDirectory(): boolean {
    return (this.mode & S_IFMT) === S_IFDIR;
  }
  isSymbolicLink(): boolean {
    return (this.mode & S_IFMT) === S_IFLNK;
  }
  isSocket(): boolean {
    return (this.mode & S_IFMT) === S_IFSOCK;
  }
}

function statAt(dirfd: number, path: string, flags: number, mask = STATX_BASIC_STATS): FileStat {
  const buf = new Uint8Array(STATX.size);
  statx(dirfd, path, flags, mask, buf);
  return new FileStat(buf);
}

/** stat(2): follows symbolic links. */
export function stat(path: string): FileStat {
  return statAt(AT_FDCWD, path, 0);
}

/**
 * stat(2) that also asks for the id of the mount `path` is on (STATX_MNT_ID; FileStat.mountId),
 * as the first field of /proc/<pid>/mountinfo numbers it. Two names of one directory (a bind
 * mount) share device and inode but not the mount: for /proc/<pid>/root (a link, followed), the
 * mount that process's root directory is.
 */
export function statWithMount(path: string): FileStat {
  return statAt(AT_FDCWD, path, 0, STATX_BASIC_STATS | STATX_MNT_ID);
}

/** lstat(2): a symbolic link itself. */
export function lstat(path: string): FileStat {
  return statAt(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
}

/** fstat(2) of an open fd. */
export function fstat(fd: number): FileStat {
  return statAt(fd, "", AT_EMPTY_PATH);
}

function isErrno(err: unknown, errno: number): boolean {
  return err instanceof SyscallError && err.errno === errno;
}

/** `f()`, or undefined when it fails with ENOENT. */
function unlessMissing<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch (err) {
    if (isErrno(err, ENOENT)) return undefined;
    throw err;
  }
}

/** stat(2), or undefined when the path does not exist (ENOENT). */
export function statIfExists(path: string): FileStat | undefined {
  return unlessMissing(() => stat(path));
}

/** lstat(2), or undefined when the path does not exist (ENOENT). */
export function lstatIfExists(path: string): FileStat | undefined {
  return unlessMissing(() => lstat(path));
}

/**
 * lstat(2) of `name` in the directory open as `dirFd` (fstatat with AT_SYMLINK_NOFOLLOW), or
 * undefined when it does not exist: statting many files of one directory this way spares the
 * kernel a walk of the directory's path for each.
 */
export function lstatAtIfExists(dirFd: number, name: string): FileStat | undefined {
  return unlessMissing(() => statAt(dirFd, name, AT_SYMLINK_NOFOLLOW));
}

/**
 * Whether stat(2) of `path` succeeds (following symbolic links); any failure (ENOENT, ENOTDIR
 * from a file on the way, EACCES) counts as no, as node's `existsSync`.
 */
export function exists(path: string): boolean {
  try {
    stat(path);
    return true;
  } catch {
    return false;
  }
}

/** open(2) with O_CLOEXEC added. */
export function open(path: string, flags: number, mode = 0o666): number {
  return openat(AT_FDCWD, path, flags | O_CLOEXEC, mode);
}

/**
 * Reads an open fd to its end. `sizeHint` (e.g. from fstat) sizes the first buffer. EINTR is
 * retried (by libc.read); EAGAIN (an O_NONBLOCK pipe with nothing yet) calls `onAgain` and retries when given.
 */
export function readAll(fd: number, sizeHint = 0, onAgain?: () => void): Uint8Array {
  let buf = new Uint8Array(Math.max(64, sizeHint + 1));
  let len = 0;
  for (;;) {
    if (len === buf.length) {
      const bigger = new Uint8Array(buf.length * 2);
      bigger.set(buf);
      buf = bigger;
    }
    let n: number;
    try {
      n = read(fd, buf.subarray(len));
    } catch (err) {
      if (onAgain === undefined || !isErrno(err, EAGAIN)) throw err;
      onAgain();
      continue;
    }
    if (n === 0) return buf.subarray(0, len);
    len += n;
  }
}

/**
 * Writes every byte of `data` to an open fd (a short write continues). EINTR is retried (by
 * libc.write); EAGAIN
 * (a full O_NONBLOCK pipe) calls `onAgain` and retries when given.
 */
export function writeAll(fd: number, data: Uint8Array | string, onAgain?: () => void): void {
  const bytes = typeof data === "string" ? encode(data) : data;
  let off = 0;
  while (off < bytes.byteLength) {
    try {
      off += write(fd, bytes.subarray(off));
    } catch (err) {
      if (onAgain === undefined || !isErrno(err, EAGAIN)) throw err;
      onAgain();
    }
  }
}

let encoder: TextEncoder | undefined;
let decoder: TextDecoder | undefined;
const encode = (s: string) => (encoder ??= new TextEncoder()).encode(s);
const decode = (b: Uint8Array) => (decoder ??= new TextDecoder()).decode(b);

/** The whole content of a file (`flags` may add e.g. O_NOFOLLOW). */
export function readFile(path: string, flags = O_RDONLY): Uint8Array {
  const fd = open(path, flags);
  try {
    return readAll(fd, fstat(fd).size);
  } finally {
    close(fd);
  }
}

/**
 * A small file the kernel makes as it is read (/proc/<pid>/stat, status, attr/current), as text:
 * for the resident agent, which reads a few for every call it is offered (agent/peer.ts,
 * ancestry.ts). Read by the runtime's own file code in one call (node:fs, loaded only here and
 * only in the agent): 4 to 5 times faster than open, read and close through bun:ffi one by one, and
 * procfs reports a size of 0, which readTextFile would meet by growing its buffer over several
 * reads. Throws a SyscallError as the rest of this module does.
 */
export function readProcText(path: string): string {
  const fs = require("node:fs") as typeof import("node:fs");
  try {
    return fs.readFileSync(path, "latin1");
  } catch (err) {
    throw new SyscallError("open", -((err as NodeJS.ErrnoException).errno ?? -EIO), path);
  }
}

/** The target of the symbolic link (or /proc magic link, such as /proc/<pid>/ns/net) at `path`; for the agent, as readProcText. */
export function readLinkText(path: string): string {
  const fs = require("node:fs") as typeof import("node:fs");
  try {
    return fs.readlinkSync(path, "latin1");
  } catch (err) {
    throw new SyscallError("readlink", -((err as NodeJS.ErrnoException).errno ?? -EIO), path);
  }
}

/** The whole content of a file as UTF-8 text (`flags` may add e.g. O_NOFOLLOW). */
export function readTextFile(path: string, flags = O_RDONLY): string {
  return decode(readFile(path, flags));
}

/**
 * Writes a file: created with `mode` (before umask) when missing, truncated otherwise, unless
 * other `flags` are given (e.g. O_EXCL, or without O_TRUNC to overwrite in place).
 */
export function writeFile(path: string, data: Uint8Array | string, mode = 0o666, flags = O_WRONLY | O_CREAT | O_TRUNC): void {
  const fd = open(path, flags, mode);
  try {
    writeAll(fd, data);
  } finally {
    close(fd);
  }
}

/** unlink(2). */
export function unlink(path: string): void {
  unlinkat(AT_FDCWD, path);
}

/** rmdir(2) (unlinkat with AT_REMOVEDIR): removes an empty directory. */
export function rmdir(path: string): void {
  unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
}

/** unlink(2) that succeeds when the path is already gone (ENOENT). */
export function unlinkIfExists(path: string): void {
  unlessMissing(() => unlink(path));
}

/** link(2): `to` becomes a second name of `from`; fails with EEXIST when `to` exists in any form. */
export function link(from: string, to: string): void {
  linkat(AT_FDCWD, from, AT_FDCWD, to);
}

/**
 * Creates `path` exclusively for writing (`mode` before umask) and returns its fd; whatever is
 * already at `path` (a leftover, a planted symbolic link) is removed first. For a scratch name the
 * caller alone uses (e.g. under a lock).
 */
export function createFresh(path: string, mode: number): number {
  try {
    return open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
  } catch (err) {
    if (!isErrno(err, EEXIST)) throw err;
  }
  unlinkIfExists(path);
  return open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
}

/** Scratch names made by this thread so far (part of each, so that no two are alike). */
let scratchCount = 0;

/**
 * A scratch name next to `path` (`<path>.tmp<pid>.<tid>.<n>`) that no other writer uses: not
 * another process, not another thread of this one (the resident agent runs calls on many threads
 * of one process), not an earlier write of this thread.
 */
export function scratchName(path: string): string {
  return `${path}.tmp${getpid()}.${gettid()}.${++scratchCount}`;
}

/**
 * Replaces the file at `path` with `data` without ever writing through what `path` was (a planted
 * symbolic link is replaced, not followed): `data` is written to a fresh file at `tmpPath`
 * (createFresh) and renamed over `path`. `tmpPath` must be in the same directory and either
 * reserved for this use by the caller (e.g. under a lock) or a {@link scratchName}, the default.
 */
export function replaceFile(path: string, data: Uint8Array | string, mode: number, tmpPath = scratchName(path)): void {
  try {
    const fd = createFresh(tmpPath, mode);
    try {
      writeAll(fd, data);
    } finally {
      close(fd);
    }
    rename(tmpPath, path);
  } catch (err) {
    try {
      unlinkIfExists(tmpPath);
    } catch {
      // the first failure is the one to report
    }
    throw err;
  }
}

/** rename(2). */
export function rename(from: string, to: string): void {
  renameat(AT_FDCWD, from, AT_FDCWD, to);
}

/** mkdir -p: creates `path` and its missing parents with `mode` (before umask). */
export function mkdirAll(path: string, mode: number): void {
  const st = statIfExists(path);
  if (st !== undefined) {
    if (!st.isDirectory()) throw new SyscallError("mkdir", EEXIST, JSON.stringify(path));
    return;
  }
  let end = path.length;
  while (end > 1 && path[end - 1] === "/") end--;
  const parent = path.slice(0, path.lastIndexOf("/", end - 1));
  if (parent !== "" && parent !== path) mkdirAll(parent, mode);
  try {
    mkdirat(AT_FDCWD, path, mode);
  } catch (err) {
    // Made meanwhile by someone else: fine if it is a directory.
    if (!isErrno(err, EEXIST) || !stat(path).isDirectory()) throw err;
  }
}

/** Sets a file's access and modification times (seconds, fractions allowed). */
export function utimes(path: string, atimeSec: number, mtimeSec: number): void {
  const split = (t: number): [number, number] => {
    const sec = Math.floor(t);
    return [sec, Math.round((t - sec) * 1e9)];
  };
  utimensat(AT_FDCWD, path, split(atimeSec), split(mtimeSec));
}

/** One directory entry, as readdir(3) reports it (the type may need an lstat: see `kind`). */
export interface DirEntry {
  readonly name: string;
  /** The inode number the entry names (d_ino). */
  readonly ino: bigint;
  /** "file", "dir", "symlink" or "other"; from d_type, or from lstat when the filesystem has none. */
  readonly kind: "file" | "dir" | "symlink" | "other";
}

/**
 * The entries of a directory, without "." and "..". (Opened without O_DIRECTORY, whose value
 * differs between x86_64 and arm64; getdents64 refuses a non-directory with ENOTDIR.)
 */
export function readDir(path: string): DirEntry[] {
  const fd = open(path, O_RDONLY);
  const out: DirEntry[] = [];
  try {
    const buf = new Uint8Array(32768);
    const v = new DataView(buf.buffer);
    for (;;) {
      const n = getdents64(fd, buf);
      if (n === 0) break;
      for (let off = 0; off < n; ) {
        const reclen = v.getUint16(off + LINUX_DIRENT64.d_reclen, true);
        const type = buf[off + LINUX_DIRENT64.d_type]!;
        const nameAt = off + LINUX_DIRENT64.d_name;
        const name = decode(buf.subarray(nameAt, buf.indexOf(0, nameAt)));
        const ino = v.getBigUint64(off + LINUX_DIRENT64.d_ino, true);
        off += reclen;
        if (name === "." || name === "..") continue;
        out.push({ name, ino, kind: type === DT_UNKNOWN ? kindOf(`${path}/${name}`) : kindFromType(type) });
      }
    }
  } finally {
    close(fd);
  }
  return out;
}

function kindFromType(type: number): DirEntry["kind"] {
  return type === DT_REG ? "file" : type === DT_DIR ? "dir" : type === DT_LNK ? "symlink" : "other";
}

function kindOf(path: string): DirEntry["kind"] {
  const st = lstatIfExists(path);
  if (st === undefined) return "other";
  return st.isFile() ? "file" : st.isDirectory() ? "dir" : st.isSymbolicLink() ? "symlink" : "other";
}
