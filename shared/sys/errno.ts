/**
 * Linux errno numbers and their names/messages (asm-generic/errno-base.h, asm-generic/errno.h;
 * identical on x86_64 and arm64). Messages follow Go's `syscall.Errno.Error()` wording (glibc's
 * strerror text with a lower-case first letter), so error text matches upstream plugins; and the
 * error every failing system call turns into (SyscallError): lower layers throw it (or a subclass
 * such as NetlinkError); plugins map it to CNI code 999.
 */

export const EPERM = 1;
export const ENOENT = 2;
export const ESRCH = 3;
export const EINTR = 4;
export const EIO = 5;
export const ENXIO = 6;
export const EBADF = 9;
export const EAGAIN = 11;
/** Same value as EAGAIN on Linux. */
export const EWOULDBLOCK = EAGAIN;
export const ENOMEM = 12;
export const EACCES = 13;
export const EFAULT = 14;
export const EBUSY = 16;
export const EEXIST = 17;
export const EXDEV = 18;
export const ENODEV = 19;
export const ENOTDIR = 20;
export const EISDIR = 21;
export const EINVAL = 22;
export const EMFILE = 24;
export const ENOSPC = 28;
export const ERANGE = 34;
export const ENAMETOOLONG = 36;
export const ENOSYS = 38;
export const ENOTEMPTY = 39;
export const ELOOP = 40;
export const ENODATA = 61;
export const EPROTO = 71;
export const EMSGSIZE = 90;
export const ENOPROTOOPT = 92;
export const EPROTONOSUPPORT = 93;
export const EOPNOTSUPP = 95;
/** Same value as EOPNOTSUPP on Linux. */
export const ENOTSUP = EOPNOTSUPP;
export const EAFNOSUPPORT = 97;
export const EADDRINUSE = 98;
export const EADDRNOTAVAIL = 99;
export const ENETDOWN = 100;
export const ENETUNREACH = 101;
export const ENOBUFS = 105;
export const ETIMEDOUT = 110;
export const ECONNREFUSED = 111;
export const EHOSTUNREACH = 113;

/** errno → [name, message]. Covers the values a plugin can plausibly meet. */
const TABLE: ReadonlyMap<number, readonly [string, string]> = new Map([
  [1, ["EPERM", "operation not permitted"]],
  [2, ["ENOENT", "no such file or directory"]],
  [3, ["ESRCH", "no such process"]],
  [4, ["EINTR", "interrupted system call"]],
  [5, ["EIO", "input/output error"]],
  [6, ["ENXIO", "no such device or address"]],
  [7, ["E2BIG", "argument list too long"]],
  [8, ["ENOEXEC", "exec format error"]],
  [9, ["EBADF", "bad file descriptor"]],
  [10, ["ECHILD", "no child processes"]],
  [11, ["EAGAIN", "resource temporarily unavailable"]],
  [12, ["ENOMEM", "cannot allocate memory"]],
  [13, ["EACCES", "permission denied"]],
  [14, ["EFAULT", "bad address"]],
  [16, ["EBUSY", "device or resource busy"]],
  [17, ["EEXIST", "file exists"]],
  [18, ["EXDEV", "invalid cross-device link"]],
  [19, ["ENODEV", "no such device"]],
  [20, ["ENOTDIR", "not a directory"]],
  [21, ["EISDIR", "is a directory"]],
  [22, ["EINVAL", "invalid argument"]],
  [23, ["ENFILE", "too many open files in system"]],
  [24, ["EMFILE", "too many open files"]],
  [25, ["ENOTTY", "inappropriate ioctl for device"]],
  [26, ["ETXTBSY", "text file busy"]],
  [27, ["EFBIG", "file too large"]],
  [28, ["ENOSPC", "no space left on device"]],
  [29, ["ESPIPE", "illegal seek"]],
  [30, ["EROFS", "read-only file system"]],
  [31, ["EMLINK", "too many links"]],
  [32, ["EPIPE", "broken pipe"]],
  [33, ["EDOM", "numerical argument out of domain"]],
  [34, ["ERANGE", "numerical result out of range"]],
  [35, ["EDEADLK", "resource deadlock avoided"]],
  [36, ["ENAMETOOLONG", "file name too long"]],
  [37, ["ENOLCK", "no locks available"]],
  [38, ["ENOSYS", "function not implemented"]],
  [39, ["ENOTEMPTY", "directory not empty"]],
  [40, ["ELOOP", "too many levels of symbolic links"]],
  [42, ["ENOMSG", "no message of desired type"]],
  [61, ["ENODATA", "no data available"]],
  [62, ["ETIME", "timer expired"]],
  [71, ["EPROTO", "protocol error"]],
  [74, ["EBADMSG", "bad message"]],
  [75, ["EOVERFLOW", "value too large for defined data type"]],
  [77, ["EBADFD", "file descriptor in bad state"]],
  [88, ["ENOTSOCK", "socket operation on non-socket"]],
  [89, ["EDESTADDRREQ", "destination address required"]],
  [90, ["EMSGSIZE", "message too long"]],
  [91, ["EPROTOTYPE", "protocol wrong type for socket"]],
  [92, ["ENOPROTOOPT", "protocol not available"]],
  [93, ["EPROTONOSUPPORT", "protocol not supported"]],
  [94, ["ESOCKTNOSUPPORT", "socket type not supported"]],
  [95, ["EOPNOTSUPP", "operation not supported"]],
  [96, ["EPFNOSUPPORT", "protocol family not supported"]],
  [97, ["EAFNOSUPPORT", "address family not supported by protocol"]],
  [98, ["EADDRINUSE", "address already in use"]],
  [99, ["EADDRNOTAVAIL", "cannot assign requested address"]],
  [100, ["ENETDOWN", "network is down"]],
  [101, ["ENETUNREACH", "network is unreachable"]],
  [102, ["ENETRESET", "network dropped connection on reset"]],
  [103, ["ECONNABORTED", "software caused connection abort"]],
  [104, ["ECONNRESET", "connection reset by peer"]],
  [105, ["ENOBUFS", "no buffer space available"]],
  [106, ["EISCONN", "transport endpoint is already connected"]],
  [107, ["ENOTCONN", "transport endpoint is not connected"]],
  [110, ["ETIMEDOUT", "connection timed out"]],
  [111, ["ECONNREFUSED", "connection refused"]],
  [112, ["EHOSTDOWN", "host is down"]],
  [113, ["EHOSTUNREACH", "no route to host"]],
  [114, ["EALREADY", "operation already in progress"]],
  [115, ["EINPROGRESS", "operation now in progress"]],
  [116, ["ESTALE", "stale file handle"]],
  [121, ["EREMOTEIO", "remote I/O error"]],
  [122, ["EDQUOT", "disk quota exceeded"]],
  [125, ["ECANCELED", "operation canceled"]],
  [130, ["EOWNERDEAD", "owner died"]],
  [131, ["ENOTRECOVERABLE", "state not recoverable"]],
  [132, ["ERFKILL", "operation not possible due to RF-kill"]],
]);

/** Symbolic name of an errno (`17` → `"EEXIST"`); unknown values give `"errno <n>"`. */
export function errnoName(errno: number): string {
  return TABLE.get(errno)?.[0] ?? `errno ${errno}`;
}

/** Go-style message of an errno (`17` → `"file exists"`); unknown values give `"errno <n>"`. */
export function errnoMessage(errno: number): string {
  return TABLE.get(errno)?.[1] ?? `errno ${errno}`;
}

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
