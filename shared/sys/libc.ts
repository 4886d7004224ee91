/**
 * Thin synchronous wrappers over the libc calls the plugins need. This directory is the only
 * importer of `bun:ffi` in the project.
 *
 * - bun:ffi is loaded and libc `dlopen`ed on the first call, not at module load: loading bun:ffi
 *   costs about 1.4 ms and the dlopen about 0.5 ms plus 0.02 ms per symbol (docs/performance.md),
 *   which a process that imports this module but never calls it (VERSION, an early error) skips.
 * - Every wrapper reads errno through `__errno_location()` immediately after a failing call and
 *   throws {@link SyscallError}; never dlsym `errno` (oven-sh/bun#22212).
 * - `isize`/`i64` returns arrive as BigInt and are converted with `Number()`.
 * - Calls that may be interrupted by a signal without side effects (read, write, recvfrom,
 *   sendto, blocking flock) are retried on EINTR.
 * - The argument and return types are the C ones on LP64 (x86_64 and arm64 alike): int is i32,
 *   size_t, ssize_t and unsigned long are 64-bit, socklen_t and mode_t u32.
 */

import type * as Ffi from "bun:ffi";
import { LOCK_NB } from "./constants.ts";
import { EINTR, EINVAL, SyscallError } from "./errno.ts";
import { STATFS, TIMESPEC, TIMEVAL } from "./layouts.ts";
import { spanEnd, spanStart } from "./phases.ts";

/** glibc's soname (Debian/Ubuntu/RHEL). A musl build would bind "libc.so" instead. */
const LIBC_NAME = "libc.so.6";

let ffi: typeof Ffi | undefined;

function load() {
  ffi = require("bun:ffi") as typeof Ffi;
  return ffi.dlopen(LIBC_NAME, {
    __errno_location: { args: [], returns: "ptr" },
    socket: { args: ["i32", "i32", "i32"], returns: "i32" },
    bind: { args: ["i32", "ptr", "u32"], returns: "i32" },
    getsockname: { args: ["i32", "ptr", "ptr"], returns: "i32" },
    sendto: { args: ["i32", "ptr", "u64", "i32", "ptr", "u32"], returns: "i64" },
    recvfrom: { args: ["i32", "ptr", "u64", "i32", "ptr", "ptr"], returns: "i64" },
    setsockopt: { args: ["i32", "i32", "i32", "ptr", "u32"], returns: "i32" },
    getsockopt: { args: ["i32", "i32", "i32", "ptr", "ptr"], returns: "i32" },
    close: { args: ["i32"], returns: "i32" },
    read: { args: ["i32", "ptr", "u64"], returns: "i64" },
    write: { args: ["i32", "ptr", "u64"], returns: "i64" },
    setns: { args: ["i32", "i32"], returns: "i32" },
    unshare: { args: ["i32"], returns: "i32" },
    flock: { args: ["i32", "i32"], returns: "i32" },
    ioctl: { args: ["i32", "u64", "ptr"], returns: "i32" },
    statfs: { args: ["ptr", "ptr"], returns: "i32" },
    fstatfs: { args: ["i32", "ptr"], returns: "i32" },
    getpid: { args: [], returns: "i32" },
    gettid: { args: [], returns: "i32" },
    mount: { args: ["ptr", "ptr", "ptr", "u64", "ptr"], returns: "i32" },
    umount2: { args: ["ptr", "i32"], returns: "i32" },
    if_nametoindex: { args: ["ptr"], returns: "u32" },
    openat: { args: ["i32", "ptr", "i32", "u32"], returns: "i32" },
    statx: { args: ["i32", "ptr", "i32", "u32", "ptr"], returns: "i32" },
    getdents64: { args: ["i32", "ptr", "u64"], returns: "i64" },
    unlinkat: { args: ["i32", "ptr", "i32"], returns: "i32" },
    renameat: { args: ["i32", "ptr", "i32", "ptr"], returns: "i32" },
    linkat: { args: ["i32", "ptr", "i32", "ptr", "i32"], returns: "i32" },
    mkdirat: { args: ["i32", "ptr", "u32"], returns: "i32" },
    utimensat: { args: ["i32", "ptr", "ptr", "i32"], returns: "i32" },
    getcwd: { args: ["ptr", "u64"], returns: "ptr" },
  });
}

type Libc = ReturnType<typeof load>["symbols"];
let libc: Libc | undefined;

/** The bound symbols; opens libc on first use. */
function sym(): Libc {
  if (libc === undefined) {
    const started = spanStart();
    libc = load().symbols;
    spanEnd("dlopen", started);
  }
  return libc;
}

/** errno of the calling thread. Call it right after the failing call, before anything else. */
function errno(): number {
  const loc = sym().__errno_location();
  if (loc === null) return 0;
  return ffi!.read.i32(loc, 0);
}

let encoder: TextEncoder | undefined;

/** A NUL-terminated copy of `s` for `const char *` arguments. */
function cstr(s: string): Uint8Array {
  // C would see only the part before the NUL: refuse rather than act on a truncated path.
  if (s.includes("\0")) throw new SyscallError("cstring", EINVAL, JSON.stringify(s), { suffix: ": contains a NUL byte" });
  return (encoder ??= new TextEncoder()).encode(`${s}\0`);
}

/** A pointer argument that is NULL for an empty or missing buffer (FFI cannot point at 0 bytes). */
function ptrOrNull(b: Uint8Array | null | undefined): Uint8Array | null {
  return b === null || b === undefined || b.byteLength === 0 ? null : b;
}

/** Throws the SyscallError for a failed call (errno read first). */
function fail(syscall: string, detail: string): never {
  const e = errno();
  throw new SyscallError(syscall, e, detail);
}

/** Runs an integer-returning call; throws on -1. */
function check(ret: number, syscall: string, detail: string): number {
  if (ret === -1) fail(syscall, detail);
  return ret;
}

/** Runs a size-returning call, retrying on EINTR; throws on -1. */
function checkSize(call: () => bigint, syscall: string, detail: string): number {
  for (;;) {
    const ret = Number(call());
    if (ret !== -1) return ret;
    const e = errno();
    if (e !== EINTR) throw new SyscallError(syscall, e, detail);
  }
}

/** socket(2). Returns the new fd (pass SOCK_CLOEXEC in `type`). */
export function socket(domain: number, type: number, protocol: number): number {
  return check(sym().socket(domain, type, protocol), "socket", `domain=${domain} type=${type} proto=${protocol}`);
}

/** bind(2) with a ready-made sockaddr. */
export function bind(fd: number, addr: Uint8Array): void {
  check(sym().bind(fd, addr, addr.byteLength), "bind", `fd=${fd}`);
}

/** getsockname(2) into `addr`; returns the kernel's address length. */
export function getsockname(fd: number, addr: Uint8Array): number {
  const len = new Uint32Array([addr.byteLength]);
  check(sym().getsockname(fd, addr, len), "getsockname", `fd=${fd}`);
  return len[0] ?? 0;
}

/** sendto(2); `addr` null sends to the connected/default peer. Returns bytes sent. */
export function sendto(fd: number, buf: Uint8Array, flags = 0, addr: Uint8Array | null = null): number {
  const a = ptrOrNull(addr);
  const started = spanStart();
  const n = checkSize(
    () => sym().sendto(fd, ptrOrNull(buf), buf.byteLength, flags, a, a === null ? 0 : a.byteLength),
    "sendto",
    `fd=${fd}`,
  );
  spanEnd("socket", started);
  return n;
}

/**
 * recvfrom(2) without a source address. Returns the byte count; with MSG_TRUNC on a datagram or
 * netlink socket this is the full datagram length, which may exceed `buf.byteLength`.
 */
export function recvfrom(fd: number, buf: Uint8Array, flags = 0): number {
  const started = spanStart();
  const n = checkSize(() => sym().recvfrom(fd, ptrOrNull(buf), buf.byteLength, flags, null, null), "recvfrom", `fd=${fd}`);
  spanEnd("socket", started);
  return n;
}

/** setsockopt(2) with a raw option value. */
export function setsockopt(fd: number, level: number, opt: number, val: Uint8Array): void {
  check(sym().setsockopt(fd, level, opt, ptrOrNull(val), val.byteLength), "setsockopt", `fd=${fd} level=${level} opt=${opt}`);
}

/** setsockopt(2) with a 32-bit integer value (the common case). */
export function setsockoptInt(fd: number, level: number, opt: number, value: number): void {
  setsockopt(fd, level, opt, new Uint8Array(Int32Array.of(value).buffer));
}

/** setsockopt(2) with a struct timeval of `ms` milliseconds (SO_RCVTIMEO, SO_SNDTIMEO). */
export function setsockoptTimeval(fd: number, level: number, opt: number, ms: number): void {
  const tv = new Uint8Array(TIMEVAL.size);
  const v = new DataView(tv.buffer);
  v.setBigInt64(TIMEVAL.tv_sec, BigInt(Math.floor(ms / 1000)), true);
  v.setBigInt64(TIMEVAL.tv_usec, BigInt((ms % 1000) * 1000), true);
  setsockopt(fd, level, opt, tv);
}

/** getsockopt(2) into `val`; returns the option length the kernel wrote. */
export function getsockopt(fd: number, level: number, opt: number, val: Uint8Array): number {
  const len = new Uint32Array([val.byteLength]);
  check(sym().getsockopt(fd, level, opt, val, len), "getsockopt", `fd=${fd} level=${level} opt=${opt}`);
  return len[0] ?? 0;
}

/** close(2). EINTR is not retried (Linux always releases the fd). */
export function close(fd: number): void {
  check(sym().close(fd), "close", `fd=${fd}`);
}

/** read(2), retried on EINTR. Returns bytes read (0 at EOF). */
export function read(fd: number, buf: Uint8Array): number {
  if (buf.byteLength === 0) return 0;
  return checkSize(() => sym().read(fd, buf, buf.byteLength), "read", `fd=${fd}`);
}

/** write(2), retried on EINTR. Returns bytes written (may be short). */
export function write(fd: number, buf: Uint8Array): number {
  if (buf.byteLength === 0) return 0;
  return checkSize(() => sym().write(fd, buf, buf.byteLength), "write", `fd=${fd}`);
}

/** setns(2): moves the calling thread into the namespace behind `fd`. */
export function setns(fd: number, nstype: number): void {
  const started = spanStart();
  check(sym().setns(fd, nstype), "setns", `fd=${fd}`);
  spanEnd("setns", started);
}

/** unshare(2) for the calling thread. */
export function unshare(flags: number): void {
  check(sym().unshare(flags), "unshare", `flags=0x${flags.toString(16)}`);
}

/**
 * flock(2). A blocking request (no LOCK_NB) is retried on EINTR; with LOCK_NB a held lock throws
 * EWOULDBLOCK (= EAGAIN).
 */
export function flock(fd: number, op: number): void {
  const started = spanStart();
  for (;;) {
    if (sym().flock(fd, op) === 0) return spanEnd("flock", started);
    const e = errno();
    if (e !== EINTR || (op & LOCK_NB) !== 0) throw new SyscallError("flock", e, `fd=${fd} op=${op}`);
  }
}

/** ioctl(2) with a pointer argument (e.g. a struct ifreq). Returns the call's result. */
export function ioctl(fd: number, req: number, arg: Uint8Array): number {
  return check(sym().ioctl(fd, req, arg), "ioctl", `fd=${fd} req=0x${req.toString(16)}`);
}

/** The filesystem magic (`f_type`, a long) of a struct statfs. */
function statfsType(buf: Uint8Array): { type: number } {
  return { type: Number(new DataView(buf.buffer).getBigInt64(STATFS.f_type, true)) };
}

/** statfs(2); returns the filesystem magic (`f_type`). */
export function statfs(path: string): { type: number } {
  const out = new Uint8Array(STATFS.size);
  check(sym().statfs(cstr(path), out), "statfs", JSON.stringify(path));
  return statfsType(out);
}

/** fstatfs(2); returns the filesystem magic (`f_type`). */
export function fstatfs(fd: number): { type: number } {
  const out = new Uint8Array(STATFS.size);
  check(sym().fstatfs(fd, out), "fstatfs", `fd=${fd}`);
  return statfsType(out);
}

/** getpid(2). */
export function getpid(): number {
  return sym().getpid();
}

/** gettid(2): the calling thread's id (equals getpid() on the main JS thread). */
export function gettid(): number {
  return sym().gettid();
}

/** mount(2). `null` source/fstype/data are passed as NULL. */
export function mount(source: string | null, target: string, fstype: string | null, flags: number, data: string | null = null): void {
  check(
    sym().mount(
      source === null ? null : cstr(source),
      cstr(target),
      fstype === null ? null : cstr(fstype),
      flags,
      data === null ? null : cstr(data),
    ),
    "mount",
    JSON.stringify(target),
  );
}

/** umount2(2). */
export function umount2(path: string, flags: number): void {
  check(sym().umount2(cstr(path), flags), "umount2", JSON.stringify(path));
}

/** if_nametoindex(3) in the calling thread's netns; throws ENODEV when absent. */
export function ifNameToIndex(name: string): number {
  const idx = sym().if_nametoindex(cstr(name));
  if (idx === 0) fail("if_nametoindex", JSON.stringify(name));
  return idx;
}

/** openat(2), retried on EINTR. Returns the new fd (pass O_CLOEXEC in `flags`). */
export function openat(dirfd: number, path: string, flags: number, mode = 0): number {
  const p = cstr(path);
  for (;;) {
    const fd = sym().openat(dirfd, p, flags, mode);
    if (fd !== -1) return fd;
    const e = errno();
    if (e !== EINTR) throw new SyscallError("open", e, JSON.stringify(path));
  }
}

/**
 * statx(2) into `buf` (STATX.size bytes, layouts.ts): `path` relative to `dirfd`; with AT_EMPTY_PATH and ""
 * the file behind `dirfd` itself.
 */
export function statx(dirfd: number, path: string, flags: number, mask: number, buf: Uint8Array): void {
  if (sym().statx(dirfd, cstr(path), flags, mask, buf) === -1) fail("statx", path === "" ? `fd=${dirfd}` : JSON.stringify(path));
}

/** getdents64(2): directory entries of `fd` into `buf`; returns the bytes filled (0 at the end). */
export function getdents64(fd: number, buf: Uint8Array): number {
  return checkSize(() => sym().getdents64(fd, buf, buf.byteLength), "getdents64", `fd=${fd}`);
}

/** unlinkat(2) (AT_REMOVEDIR in `flags` removes a directory). */
export function unlinkat(dirfd: number, path: string, flags = 0): void {
  check(sym().unlinkat(dirfd, cstr(path), flags), "unlink", JSON.stringify(path));
}

/** renameat(2). */
export function renameat(fromDirfd: number, from: string, toDirfd: number, to: string): void {
  check(sym().renameat(fromDirfd, cstr(from), toDirfd, cstr(to)), "rename", `${JSON.stringify(from)} ${JSON.stringify(to)}`);
}

/** linkat(2): a new name `to` for the file `from` (fails with EEXIST if `to` exists, even as a symbolic link). */
export function linkat(fromDirfd: number, from: string, toDirfd: number, to: string, flags = 0): void {
  check(sym().linkat(fromDirfd, cstr(from), toDirfd, cstr(to), flags), "link", `${JSON.stringify(from)} ${JSON.stringify(to)}`);
}

/** mkdirat(2). */
export function mkdirat(dirfd: number, path: string, mode: number): void {
  check(sym().mkdirat(dirfd, cstr(path), mode), "mkdir", JSON.stringify(path));
}

/**
 * getcwd(3): the calling thread's working directory (a thread of the resident agent has its own;
 * `process.cwd()` is the process's, cached by the runtime).
 */
export function getcwd(): string {
  const buf = new Uint8Array(4097);
  if (sym().getcwd(buf, buf.byteLength) === null) fail("getcwd", "");
  return new TextDecoder().decode(buf.subarray(0, buf.indexOf(0)));
}

/** utimensat(2) with access and modification times in (seconds, nanoseconds). */
export function utimensat(dirfd: number, path: string, atime: [number, number], mtime: [number, number], flags = 0): void {
  // struct timespec times[2]: access, then modification.
  const times = new Uint8Array(2 * TIMESPEC.size);
  const v = new DataView(times.buffer);
  for (const [i, [sec, nsec]] of [atime, mtime].entries()) {
    v.setBigInt64(i * TIMESPEC.size + TIMESPEC.tv_sec, BigInt(sec), true);
    v.setBigInt64(i * TIMESPEC.size + TIMESPEC.tv_nsec, BigInt(nsec), true);
  }
  check(sym().utimensat(dirfd, cstr(path), times, flags), "utimensat", JSON.stringify(path));
}

