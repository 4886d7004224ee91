/**
 * Kernel ABI constants used with the libc wrappers, kernel names verbatim.
 * Values are for Linux on x86_64 and arm64 (the asm-generic values, identical on both).
 */

// <linux/socket.h>, <bits/socket_type.h>
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

// <asm-generic/socket.h>
export const SOL_SOCKET = 1;
export const SO_REUSEADDR = 2;
export const SO_BROADCAST = 6;
export const SO_SNDBUF = 7;
export const SO_RCVBUF = 8;
export const SO_RCVTIMEO = 20;
export const SO_SNDTIMEO = 21;
export const SO_BINDTODEVICE = 25;
/** The receive buffer beyond net.core.rmem_max (CAP_NET_ADMIN). */
export const SO_RCVBUFFORCE = 33;

// <linux/socket.h> msg flags
export const MSG_PEEK = 0x2;
export const MSG_TRUNC = 0x20;
export const MSG_DONTWAIT = 0x40;

// <linux/sched.h>
export const CLONE_NEWNS = 0x00020000;
export const CLONE_NEWNET = 0x40000000;

// <asm-generic/fcntl.h>
export const O_RDONLY = 0;
export const O_WRONLY = 1;
export const O_RDWR = 2;
export const O_CREAT = 0o100;
export const O_EXCL = 0o200;
export const O_TRUNC = 0o1000;
export const O_APPEND = 0o2000;
export const O_NONBLOCK = 0o4000;
export const O_CLOEXEC = 0o2000000;
/** Fails with ELOOP when the last path component is a symbolic link; <asm/fcntl.h> of arm/arm64 differs from asm-generic. */
export const O_NOFOLLOW = process.arch === "arm64" || process.arch === "arm" ? 0o100000 : 0o400000;

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

/** The calling thread's own netns file (differs from /proc/self in Workers; proc(5)). */
export const THREAD_NETNS_PATH = "/proc/thread-self/ns/net";
