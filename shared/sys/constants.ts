/**
 * Kernel and C library constants used with the libc wrappers, kernel names verbatim, each group
 * with the header it comes from. x86_64 and arm64 share the asm-generic value of nearly all of
 * them; the few that arm64's own <asm/...> headers define differently are chosen per architecture
 * here ({@link ARM64}), and nowhere else. shared/sys/arch-abi.test.ts compares every value with the
 * headers of the architecture it runs on (test/fixtures/abi/abi.c). Struct layouts are in
 * layouts.ts.
 */

/** This process runs on arm64 (aarch64); otherwise on x86_64, the other architecture a build targets. */
const ARM64 = process.arch === "arm64";

// <bits/socket.h> (<linux/socket.h>, <linux/net.h>)
export const AF_UNSPEC = 0;
export const AF_UNIX = 1;
export const AF_INET = 2;
export const AF_BRIDGE = 7;
export const AF_INET6 = 10;
export const AF_NETLINK = 16;
export const AF_PACKET = 17;
export const SOCK_STREAM = 1;
export const SOCK_DGRAM = 2;
export const SOCK_RAW = 3;
export const SOCK_NONBLOCK = 0o4000;
export const SOCK_CLOEXEC = 0o2000000;

// <asm/socket.h>: asm-generic/socket.h on both x86_64 and arm64
export const SOL_SOCKET = 1;
export const SO_REUSEADDR = 2;
export const SO_BROADCAST = 6;
export const SO_SNDBUF = 7;
export const SO_RCVBUF = 8;
/** getsockopt option: the credentials of a unix socket's peer at connect(2) (struct ucred). */
export const SO_PEERCRED = 17;
/** struct timeval options (the 64-bit time_t ones on both architectures). */
export const SO_RCVTIMEO = 20;
export const SO_SNDTIMEO = 21;
export const SO_BINDTODEVICE = 25;
/** The receive buffer beyond net.core.rmem_max (CAP_NET_ADMIN). */
export const SO_RCVBUFFORCE = 33;

// <linux/socket.h> msg flags
export const MSG_PEEK = 0x2;
export const MSG_TRUNC = 0x20;
export const MSG_DONTWAIT = 0x40;

// <linux/in.h>
export const SOL_IP = 0;
/** Bind to an address that is not configured (CAP_NET_ADMIN). */
export const IP_TRANSPARENT = 19;

// <linux/sched.h>
/** unshare(2): give the calling thread its own root, working directory and umask. */
export const CLONE_FS = 0x00000200;
export const CLONE_NEWNS = 0x00020000;
export const CLONE_NEWNET = 0x40000000;

// <asm/fcntl.h>: asm-generic/fcntl.h on x86_64; arm64's own header changes O_DIRECTORY, O_NOFOLLOW,
// O_DIRECT and O_LARGEFILE (of which only O_NOFOLLOW is used)
export const O_RDONLY = 0;
export const O_WRONLY = 1;
export const O_RDWR = 2;
export const O_CREAT = 0o100;
export const O_EXCL = 0o200;
export const O_TRUNC = 0o1000;
export const O_APPEND = 0o2000;
export const O_NONBLOCK = 0o4000;
export const O_CLOEXEC = 0o2000000;
/**
 * Fails with ELOOP when the last path component is a symbolic link: 0o400000 in
 * include/uapi/asm-generic/fcntl.h (x86_64), 0o100000 in arch/arm64/include/uapi/asm/fcntl.h.
 */
export const O_NOFOLLOW = ARM64 ? 0o100000 : 0o400000;
/** A handle that only locates a file (no read or write access). */
export const O_PATH = 0o10000000;
export const F_GETFD = 1;
export const F_SETFD = 2;
export const F_DUPFD_CLOEXEC = 1030;
export const FD_CLOEXEC = 1;

// <linux/fcntl.h>: the *at calls
/** `dirfd` meaning "relative to the current directory". */
export const AT_FDCWD = -100;
export const AT_SYMLINK_NOFOLLOW = 0x100;
export const AT_REMOVEDIR = 0x200;
export const AT_EMPTY_PATH = 0x1000;

// <linux/fcntl.h> / <sys/file.h>
export const LOCK_SH = 1;
export const LOCK_EX = 2;
export const LOCK_NB = 4;
export const LOCK_UN = 8;

// <linux/mount.h>
export const MS_RDONLY = 1;
export const MS_BIND = 4096;
export const MS_REC = 16384;
export const MS_PRIVATE = 1 << 18;
export const MS_SLAVE = 1 << 19;
export const MS_SHARED = 1 << 20;
export const MNT_DETACH = 2;

// <linux/magic.h>
export const PROC_SUPER_MAGIC = 0x9fa0;
export const NSFS_MAGIC = 0x6e736673;

// <linux/stat.h>: statx(2) masks and the file types of stx_mode
/** Every field of struct stat. */
export const STATX_BASIC_STATS = 0x7ff;
/** stx_mnt_id, asked for and (in stx_mask) given (Linux 5.8). */
export const STATX_MNT_ID = 0x1000;
export const S_IFMT = 0o170000;
export const S_IFREG = 0o100000;
export const S_IFDIR = 0o040000;
export const S_IFLNK = 0o120000;
export const S_IFSOCK = 0o140000;

// <dirent.h>: d_type of getdents64(2) records
export const DT_UNKNOWN = 0;
export const DT_DIR = 4;
export const DT_REG = 8;
export const DT_LNK = 10;

// <asm/signal.h>, <asm-generic/signal-defs.h>: the asm-generic values on both x86_64 and arm64
export const SIGHUP = 1;
export const SIGINT = 2;
export const SIGTERM = 15;
export const SIG_BLOCK = 0;
export const SIG_UNBLOCK = 1;
/** The disposition "ignore" ((__sighandler_t) 1), as signal(2) takes it. */
export const SIG_IGN = 1n;

/** The calling thread's own netns file (differs from /proc/self in Workers; proc(5)). */
export const THREAD_NETNS_PATH = "/proc/thread-self/ns/net";
