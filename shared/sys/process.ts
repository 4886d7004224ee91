/**
 * libc calls only the resident agent makes (agent/): who is at the other end of a unix socket, a
 * thread's own working directory and umask, and re-executing the process with a socket kept open.
 * Bound in their own dlopen group on first use, so a plugin process never pays for them.
 */
import type * as Ffi from "bun:ffi";
import {
  AF_UNIX,
  F_DUPFD_CLOEXEC,
  F_GETFD,
  F_SETFD,
  FD_CLOEXEC,
  O_CLOEXEC,
  O_PATH,
  SIG_BLOCK,
  SIG_IGN,
  SIG_UNBLOCK,
  SO_PEERCRED,
  SOCK_CLOEXEC,
  SOCK_STREAM,
  SOL_SOCKET,
} from "./constants.ts";
import { SyscallError } from "./errno.ts";
import { SIGSET_T, UCRED } from "./layouts.ts";
import { bind, close, getsockopt, socket } from "./libc.ts";
import { unixAddress } from "./sockaddr.ts";

let ffi: typeof Ffi | undefined;

function load() {
  ffi = require("bun:ffi") as typeof Ffi;
  return ffi.dlopen("libc.so.6", {
    __errno_location: { args: [], returns: "ptr" },
    open: { args: ["ptr", "i32", "u32"], returns: "i32" },
    close: { args: ["i32"], returns: "i32" },
    fchdir: { args: ["i32"], returns: "i32" },
    umask: { args: ["u32"], returns: "u32" },
    fcntl: { args: ["i32", "i32", "i32"], returns: "i32" },
    dup2: { args: ["i32", "i32"], returns: "i32" },
    listen: { args: ["i32", "i32"], returns: "i32" },
    sigprocmask: { args: ["i32", "ptr", "ptr"], returns: "i32" },
    signal: { args: ["i32", "u64"], returns: "i64" },
    execve: { args: ["ptr", "ptr", "ptr"], returns: "i32" },
  }).symbols;
}

let bound: ReturnType<typeof load> | undefined;
const sym = () => (bound ??= load());

function fail(call: string, detail: string): never {
  const loc = sym().__errno_location();
  throw new SyscallError(call, loc === null ? 0 : ffi!.read.i32(loc, 0), detail);
}

function cstr(s: string): Buffer {
  return Buffer.from(`${s}\0`);
}

/** A unix socket peer's process and user at connect time (SO_PEERCRED; the kernel's word, not the peer's). */
export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
}

/** SO_PEERCRED of a connected unix socket. */
export function peerCredentials(fd: number): PeerCredentials {
  const cred = new Uint8Array(UCRED.size);
  getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred);
  const v = new DataView(cred.buffer);
  return { pid: v.getInt32(UCRED.pid, true), uid: v.getUint32(UCRED.uid, true), gid: v.getUint32(UCRED.gid, true) };
}

/**
 * Sets the calling thread's working directory to `path` (a directory; O_PATH, no read access
 * needed; opened without O_DIRECTORY, whose value differs between x86_64 and arm64: fchdir refuses
 * a non-directory anyway).
 */
export function chdirThread(path: string): void {
  const fd = sym().open(cstr(path), O_PATH | O_CLOEXEC, 0);
  if (fd < 0) fail("open", JSON.stringify(path));
  try {
    if (sym().fchdir(fd) !== 0) fail("fchdir", JSON.stringify(path));
  } finally {
    sym().close(fd);
  }
}

/** umask(2): sets the calling thread's (or process's) file mode mask; returns the previous one. */
export function setUmask(mask: number): number {
  return sym().umask(mask & 0o777);
}

/** The most pending connections a listening socket queues (the kernel caps it at somaxconn). */
const LISTEN_BACKLOG = 4096;

/**
 * A listening unix stream socket bound at `path` (which must not exist; the file's mode follows the
 * umask). Returns its fd (close-on-exec).
 */
export function listenUnix(path: string): number {
  const addr = unixAddress(path);
  const fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  try {
    bind(fd, addr);
    if (sym().listen(fd, LISTEN_BACKLOG) !== 0) fail("listen", JSON.stringify(path));
  } catch (err) {
    close(fd);
    throw err;
  }
  return fd;
}

/** A close-on-exec duplicate of `fd` numbered at least `min` (fcntl F_DUPFD_CLOEXEC). */
export function dupAbove(fd: number, min: number): number {
  const copy = sym().fcntl(fd, F_DUPFD_CLOEXEC, min);
  if (copy < 0) fail("fcntl", `F_DUPFD_CLOEXEC fd=${fd}`);
  return copy;
}

/** Makes `fd` survive execve(2) as `target` (dup2 when the numbers differ; FD_CLOEXEC cleared). */
export function keepAcrossExec(fd: number, target: number): void {
  if (fd !== target && sym().dup2(fd, target) < 0) fail("dup2", `${fd} -> ${target}`);
  const flags = sym().fcntl(target, F_GETFD, 0);
  if (flags < 0) fail("fcntl", `F_GETFD fd=${target}`);
  if (sym().fcntl(target, F_SETFD, flags & ~FD_CLOEXEC) < 0) fail("fcntl", `F_SETFD fd=${target}`);
}

/** A sigset_t holding `signals` (signal n at bit n - 1 of the 64-bit words). */
export function signalSet(signals: readonly number[]): BigUint64Array {
  const set = new BigUint64Array(SIGSET_T.size / 8);
  for (const n of signals) set[Math.floor((n - 1) / 64)]! |= 1n << BigInt((n - 1) % 64);
  return set;
}

/**
 * sigprocmask(2) of the calling thread: blocks (or unblocks) `signals`. A blocked signal stays
 * pending, and the mask survives execve(2). (Bun's start-up does not keep a signal that is pending
 * or arrives before a handler is installed: the default action ends the new image. A signal that
 * must not end it across execve is ignored instead: ignoreSignal.)
 */
export function blockSignals(signals: readonly number[], block: boolean): void {
  if (sym().sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, signalSet(signals), null) !== 0) fail("sigprocmask", signals.join(","));
}

/**
 * signal(2) with SIG_IGN: `signal` is ignored, one pending is discarded, and it stays ignored across
 * execve(2) until the new image installs a handler.
 */
export function ignoreSignal(signal: number): void {
  if (sym().signal(signal, SIG_IGN) === -1n) fail("signal", `${signal} SIG_IGN`);
}

/** execve(2): replaces the process image; returns only by throwing. */
export function execve(path: string, argv: readonly string[], env: Readonly<Record<string, string>>): never {
  const calls = sym();
  const argvStrings = argv.map(cstr);
  const envStrings = Object.entries(env).map(([k, v]) => cstr(`${k}=${v}`));
  // NULL-terminated tables of pointers (8 bytes on both architectures) into the strings above (alive until execve returns).
  const table = (list: Buffer[]) => BigUint64Array.from([...list.map((b) => BigInt(ffi!.ptr(b))), 0n]);
  calls.execve(cstr(path), table(argvStrings), table(envStrings));
  fail("execve", `${JSON.stringify(path)} (${argvStrings.length} args, ${envStrings.length} variables)`);
}
