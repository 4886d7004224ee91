/** The libc layer: syscalls, errno, owned fds and file locks. The only bun:ffi user. */
export * from "./errno.ts";
export { SyscallError, hasErrno } from "./errors.ts";
export { OwnedFd } from "./fd.ts";
export { FileLock } from "./flock.ts";
export * as libc from "./libc.ts";
