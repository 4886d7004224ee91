/**
 * The error every failing system call turns into: which call, which errno, and what it was doing.
 * Lower layers throw it (or a subclass such as NetlinkError); plugins map it to CNI code 999.
 */

import { errnoMessage, errnoName } from "./errno.ts";

export { errnoMessage, errnoName } from "./errno.ts";

/**
 * A failed system call. `message` reads `<syscall> <detail>: <errno text> (<CODE>)`, for example
 * `setns fd=7: operation not permitted (EPERM)`. Compare `errno` or `code`, never the message.
 */
export class SyscallError extends Error {
  override name = "SyscallError";
  /** The call that failed (`"setns"`, `"flock"`, or a netlink message type for NetlinkError). */
  readonly syscall: string;
  /** Positive errno value. */
  readonly errno: number;
  /** Symbolic errno name, e.g. `"EEXIST"`. */
  readonly code: string;
  /** What the call was applied to (a path, an fd, an interface); may be empty. */
  readonly detail: string;

  constructor(syscall: string, errno: number, detail = "", options?: { cause?: unknown; suffix?: string }) {
    const where = detail === "" ? syscall : `${syscall} ${detail}`;
    const suffix = options?.suffix === undefined ? "" : options.suffix;
    super(
      `${where}: ${errnoMessage(errno)} (${errnoName(errno)})${suffix}`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.syscall = syscall;
    this.errno = errno;
    this.code = errnoName(errno);
    this.detail = detail;
  }
}

/** True when `err` is a SyscallError (or subclass) carrying one of `errnos`. */
export function hasErrno(err: unknown, ...errnos: number[]): err is SyscallError {
  return err instanceof SyscallError && errnos.includes(err.errno);
}
