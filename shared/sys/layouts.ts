/**
 * Byte layouts of the kernel and C library structures the libc wrappers fill or read: the size and
 * the offsets of the fields used, under the headers' own struct and field names. Each is the same
 * on x86_64 and arm64: both are LP64 (long, size_t, time_t and pointers are 8 bytes) and
 * little-endian (host-order fields are written with DataView's little-endian flag), and none of
 * these is one of the structures whose layout differs between them (struct stat, struct
 * epoll_event). shared/sys/arch-abi.test.ts compares every number here with sizeof() and offsetof()
 * from the headers of the architecture it runs on.
 */

/** struct statx (<linux/stat.h>; one layout for every architecture): the fields FileStat reads. */
export const STATX = {
  size: 256,
  /** __u32 */
  stx_mask: 0,
  /** __u32 */
  stx_uid: 20,
  /** __u16 */
  stx_mode: 28,
  /** __u64 */
  stx_ino: 32,
  /** __u64 */
  stx_size: 40,
  /** struct statx_timestamp */
  stx_ctime: 96,
  /** struct statx_timestamp */
  stx_mtime: 112,
  /** __u32 */
  stx_dev_major: 136,
  /** __u32 */
  stx_dev_minor: 140,
  /** __u64 (Linux 5.8) */
  stx_mnt_id: 144,
} as const;

/** struct statx_timestamp (<linux/stat.h>): __s64 tv_sec, __u32 tv_nsec. */
export const STATX_TIMESTAMP = { tv_sec: 0, tv_nsec: 8 } as const;

/**
 * struct linux_dirent64, the records getdents64(2) fills (glibc's struct dirent64 in <dirent.h>):
 * u64 d_ino, s64 d_off, u16 d_reclen, u8 d_type, then d_name NUL-terminated.
 */
export const LINUX_DIRENT64 = { d_ino: 0, d_off: 8, d_reclen: 16, d_type: 18, d_name: 19 } as const;

/** struct statfs (<bits/statfs.h>): f_type is a long. */
export const STATFS = { size: 120, f_type: 0 } as const;

/** struct timespec (<time.h>): time_t tv_sec, long tv_nsec. */
export const TIMESPEC = { size: 16, tv_sec: 0, tv_nsec: 8 } as const;

/** struct timeval (<sys/time.h>): time_t tv_sec, suseconds_t tv_usec. */
export const TIMEVAL = { size: 16, tv_sec: 0, tv_usec: 8 } as const;

/** struct ucred (<sys/socket.h>): pid_t pid, uid_t uid, gid_t gid. */
export const UCRED = { size: 12, pid: 0, uid: 4, gid: 8 } as const;

/** sigset_t as glibc declares it (<signal.h>): 1024 bits in 64-bit words, signal n at bit n - 1. */
export const SIGSET_T = { size: 128 } as const;

/** struct sockaddr_un (<sys/un.h>): sa_family_t sun_family, char sun_path[108]. */
export const SOCKADDR_UN = { size: 110, sun_family: 0, sun_path: 2 } as const;

/** struct sockaddr_in (<netinet/in.h>): family in host order, port and address in network order. */
export const SOCKADDR_IN = { size: 16, sin_family: 0, sin_port: 2, sin_addr: 4 } as const;

/** struct sockaddr_in6 (<netinet/in.h>): family and scope id in host order, port and address in network order. */
export const SOCKADDR_IN6 = { size: 28, sin6_family: 0, sin6_port: 2, sin6_flowinfo: 4, sin6_addr: 8, sin6_scope_id: 24 } as const;

/** struct sockaddr_nl (<linux/netlink.h>): __kernel_sa_family_t nl_family, pad, __u32 nl_pid, __u32 nl_groups. */
export const SOCKADDR_NL = { size: 12, nl_family: 0, nl_pid: 4, nl_groups: 8 } as const;
