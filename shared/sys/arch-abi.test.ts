/**
 * Every architecture-dependent value the TypeScript code gives the kernel or reads from it, against
 * the system's own headers for the architecture this test runs on: test/fixtures/abi/abi.c is
 * compiled with that architecture's C compiler (cc on x86_64, aarch64-linux-gnu-gcc -static on
 * arm64), run (through qemu user-mode emulation when this is the arm64 Bun on an x86_64 host), and
 * each value it prints is compared with the one the modules use. Run under both Buns:
 *   bun test shared/sys/arch-abi.test.ts
 *   qemu-aarch64-static -L /usr/aarch64-linux-gnu <arm64 bun> test shared/sys/arch-abi.test.ts
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { cCompiler, nativeCommand } from "../../test/harness/arch.ts";
import { suiteTempDir } from "../../test/harness/tempdir.ts";
import { HOST_LITTLE_ENDIAN } from "../netlink/codec.ts";
import { FIB_RULE_HDR_SIZE } from "../netlink/constants/fib-rules.ts";
import { BRIDGE_VLAN_INFO_SIZE } from "../netlink/constants/if-bridge.ts";
import { IFF_MULTI_QUEUE, IFF_NO_PI, IFF_TAP, IFF_VNET_HDR, IFNAMSIZ, IFREQ_FLAGS_OFFSET, IFREQ_SIZE, TUNSETGROUP, TUNSETIFF, TUNSETOWNER, TUNSETPERSIST } from "../netlink/constants/if-tun.ts";
import { NETLINK_ADD_MEMBERSHIP, NETLINK_CAP_ACK, NETLINK_EXT_ACK, NETLINK_ROUTE, NLA_ALIGNTO, NLA_HDRLEN, NLMSG_ALIGNTO, NLMSG_HDRLEN, SOL_NETLINK } from "../netlink/constants/netlink.ts";
import { NETLINK_NETFILTER, NFGENMSG_SIZE } from "../netlink/constants/nfnetlink.ts";
import { TC_U32_KEY_SIZE, TC_U32_SEL_SIZE } from "../netlink/constants/pkt-cls.ts";
import { TC_HTB_GLOB_SIZE, TC_HTB_OPT_SIZE } from "../netlink/constants/pkt-sched-htb.ts";
import { TC_RATESPEC_SIZE, TC_RTAB_SIZE, TC_TBF_QOPT_SIZE, TCMSG_SIZE } from "../netlink/constants/pkt-sched.ts";
import { IFADDRMSG_SIZE, IFINFOMSG_SIZE, RTMSG_SIZE, RTNEXTHOP_SIZE } from "../netlink/constants/rtnetlink.ts";
import { TC_MIRRED_SIZE } from "../netlink/constants/tc-act.ts";
import * as k from "./constants.ts";
import { LINUX_DIRENT64, SIGSET_T, SOCKADDR_IN, SOCKADDR_IN6, SOCKADDR_NL, SOCKADDR_UN, STATFS, STATX, STATX_TIMESTAMP, TIMESPEC, TIMEVAL, UCRED } from "./layouts.ts";
import { signalSet } from "./process.ts";

/** Bytes of a value the code reads or writes as a 64-bit (BigInt64) or 32-bit (Int32/Uint32) number. */
const I64 = 8;
const I32 = 4;

/** What the TypeScript side uses, under the key abi.c prints the header's value with. */
const ours: Readonly<Record<string, number>> = {
  "__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__": Number(HOST_LITTLE_ENDIAN),

  // The C types behind the bun:ffi declarations of libc.ts and process.ts: pointers and the
  // execve(2) argument tables, size_t/ssize_t/unsigned long as u64/i64, socklen_t and mode_t as u32;
  // pid_t, uid_t and gid_t as struct ucred's 32-bit fields.
  "sizeof(void *)": I64,
  "sizeof(long)": I64,
  "sizeof(size_t)": I64,
  "sizeof(ssize_t)": I64,
  "sizeof(socklen_t)": I32,
  "sizeof(mode_t)": I32,
  "sizeof(pid_t)": I32,
  "sizeof(uid_t)": I32,
  "sizeof(gid_t)": I32,

  AF_UNSPEC: k.AF_UNSPEC,
  AF_UNIX: k.AF_UNIX,
  AF_INET: k.AF_INET,
  AF_BRIDGE: k.AF_BRIDGE,
  AF_INET6: k.AF_INET6,
  AF_NETLINK: k.AF_NETLINK,
  AF_PACKET: k.AF_PACKET,
  SOCK_STREAM: k.SOCK_STREAM,
  SOCK_DGRAM: k.SOCK_DGRAM,
  SOCK_RAW: k.SOCK_RAW,
  SOCK_NONBLOCK: k.SOCK_NONBLOCK,
  SOCK_CLOEXEC: k.SOCK_CLOEXEC,
  MSG_PEEK: k.MSG_PEEK,
  MSG_TRUNC: k.MSG_TRUNC,
  MSG_DONTWAIT: k.MSG_DONTWAIT,
  SOL_SOCKET: k.SOL_SOCKET,
  SO_REUSEADDR: k.SO_REUSEADDR,
  SO_BROADCAST: k.SO_BROADCAST,
  SO_SNDBUF: k.SO_SNDBUF,
  SO_RCVBUF: k.SO_RCVBUF,
  SO_PEERCRED: k.SO_PEERCRED,
  SO_RCVTIMEO: k.SO_RCVTIMEO,
  SO_SNDTIMEO: k.SO_SNDTIMEO,
  SO_BINDTODEVICE: k.SO_BINDTODEVICE,
  SO_RCVBUFFORCE: k.SO_RCVBUFFORCE,
  SOL_IP: k.SOL_IP,
  IP_TRANSPARENT: k.IP_TRANSPARENT,
  CLONE_FS: k.CLONE_FS,
  CLONE_NEWNS: k.CLONE_NEWNS,
  CLONE_NEWNET: k.CLONE_NEWNET,
  O_RDONLY: k.O_RDONLY,
  O_WRONLY: k.O_WRONLY,
  O_RDWR: k.O_RDWR,
  O_CREAT: k.O_CREAT,
  O_EXCL: k.O_EXCL,
  O_TRUNC: k.O_TRUNC,
  O_APPEND: k.O_APPEND,
  O_NONBLOCK: k.O_NONBLOCK,
  O_CLOEXEC: k.O_CLOEXEC,
  O_NOFOLLOW: k.O_NOFOLLOW,
  O_PATH: k.O_PATH,
  F_GETFD: k.F_GETFD,
  F_SETFD: k.F_SETFD,
  F_DUPFD_CLOEXEC: k.F_DUPFD_CLOEXEC,
  FD_CLOEXEC: k.FD_CLOEXEC,
  AT_FDCWD: k.AT_FDCWD,
  AT_SYMLINK_NOFOLLOW: k.AT_SYMLINK_NOFOLLOW,
  AT_REMOVEDIR: k.AT_REMOVEDIR,
  AT_EMPTY_PATH: k.AT_EMPTY_PATH,
  LOCK_SH: k.LOCK_SH,
  LOCK_EX: k.LOCK_EX,
  LOCK_NB: k.LOCK_NB,
  LOCK_UN: k.LOCK_UN,
  MS_RDONLY: k.MS_RDONLY,
  MS_BIND: k.MS_BIND,
  MS_REC: k.MS_REC,
  MS_PRIVATE: k.MS_PRIVATE,
  MS_SLAVE: k.MS_SLAVE,
  MS_SHARED: k.MS_SHARED,
  MNT_DETACH: k.MNT_DETACH,
  PROC_SUPER_MAGIC: k.PROC_SUPER_MAGIC,
  NSFS_MAGIC: k.NSFS_MAGIC,
  SIGHUP: k.SIGHUP,
  SIGINT: k.SIGINT,
  SIGTERM: k.SIGTERM,
  SIG_BLOCK: k.SIG_BLOCK,
  SIG_UNBLOCK: k.SIG_UNBLOCK,
  SIG_IGN: Number(k.SIG_IGN),
  "sizeof(sigset_t)": SIGSET_T.size,
  "sigset_t word 0 of {SIGHUP, SIGINT, SIGTERM}": Number(signalSet([k.SIGHUP, k.SIGINT, k.SIGTERM])[0]),

  STATX_BASIC_STATS: k.STATX_BASIC_STATS,
  STATX_MNT_ID: k.STATX_MNT_ID,
  "sizeof(struct statx)": STATX.size,
  "offsetof(struct statx, stx_mask)": STATX.stx_mask,
  "offsetof(struct statx, stx_uid)": STATX.stx_uid,
  "offsetof(struct statx, stx_mode)": STATX.stx_mode,
  "offsetof(struct statx, stx_ino)": STATX.stx_ino,
  "offsetof(struct statx, stx_size)": STATX.stx_size,
  "offsetof(struct statx, stx_ctime)": STATX.stx_ctime,
  "offsetof(struct statx, stx_mtime)": STATX.stx_mtime,
  "offsetof(struct statx, stx_dev_major)": STATX.stx_dev_major,
  "offsetof(struct statx, stx_dev_minor)": STATX.stx_dev_minor,
  "offsetof(struct statx, stx_mnt_id)": STATX.stx_mnt_id,
  "offsetof(struct statx_timestamp, tv_sec)": STATX_TIMESTAMP.tv_sec,
  "offsetof(struct statx_timestamp, tv_nsec)": STATX_TIMESTAMP.tv_nsec,
  S_IFMT: k.S_IFMT,
  S_IFREG: k.S_IFREG,
  S_IFDIR: k.S_IFDIR,
  S_IFLNK: k.S_IFLNK,
  S_IFSOCK: k.S_IFSOCK,
  "offsetof(struct dirent64, d_ino)": LINUX_DIRENT64.d_ino,
  "offsetof(struct dirent64, d_off)": LINUX_DIRENT64.d_off,
  "offsetof(struct dirent64, d_reclen)": LINUX_DIRENT64.d_reclen,
  "offsetof(struct dirent64, d_type)": LINUX_DIRENT64.d_type,
  "offsetof(struct dirent64, d_name)": LINUX_DIRENT64.d_name,
  DT_UNKNOWN: k.DT_UNKNOWN,
  DT_DIR: k.DT_DIR,
  DT_REG: k.DT_REG,
  DT_LNK: k.DT_LNK,

  "sizeof(struct statfs)": STATFS.size,
  "offsetof(struct statfs, f_type)": STATFS.f_type,
  "sizeof(struct statfs.f_type)": I64,
  "sizeof(struct timespec)": TIMESPEC.size,
  "offsetof(struct timespec, tv_sec)": TIMESPEC.tv_sec,
  "offsetof(struct timespec, tv_nsec)": TIMESPEC.tv_nsec,
  "sizeof(struct timespec.tv_sec)": I64,
  "sizeof(struct timespec.tv_nsec)": I64,
  "sizeof(struct timeval)": TIMEVAL.size,
  "offsetof(struct timeval, tv_sec)": TIMEVAL.tv_sec,
  "offsetof(struct timeval, tv_usec)": TIMEVAL.tv_usec,
  "sizeof(struct timeval.tv_sec)": I64,
  "sizeof(struct timeval.tv_usec)": I64,
  "sizeof(struct ucred)": UCRED.size,
  "offsetof(struct ucred, pid)": UCRED.pid,
  "offsetof(struct ucred, uid)": UCRED.uid,
  "offsetof(struct ucred, gid)": UCRED.gid,

  "sizeof(struct sockaddr_un)": SOCKADDR_UN.size,
  "offsetof(struct sockaddr_un, sun_family)": SOCKADDR_UN.sun_family,
  "offsetof(struct sockaddr_un, sun_path)": SOCKADDR_UN.sun_path,
  "sizeof(struct sockaddr_un.sun_path)": SOCKADDR_UN.size - SOCKADDR_UN.sun_path,
  "sizeof(struct sockaddr_in)": SOCKADDR_IN.size,
  "offsetof(struct sockaddr_in, sin_family)": SOCKADDR_IN.sin_family,
  "offsetof(struct sockaddr_in, sin_port)": SOCKADDR_IN.sin_port,
  "offsetof(struct sockaddr_in, sin_addr)": SOCKADDR_IN.sin_addr,
  "sizeof(struct sockaddr_in6)": SOCKADDR_IN6.size,
  "offsetof(struct sockaddr_in6, sin6_family)": SOCKADDR_IN6.sin6_family,
  "offsetof(struct sockaddr_in6, sin6_port)": SOCKADDR_IN6.sin6_port,
  "offsetof(struct sockaddr_in6, sin6_flowinfo)": SOCKADDR_IN6.sin6_flowinfo,
  "offsetof(struct sockaddr_in6, sin6_addr)": SOCKADDR_IN6.sin6_addr,
  "offsetof(struct sockaddr_in6, sin6_scope_id)": SOCKADDR_IN6.sin6_scope_id,
  "sizeof(struct sockaddr_nl)": SOCKADDR_NL.size,
  "offsetof(struct sockaddr_nl, nl_family)": SOCKADDR_NL.nl_family,
  "offsetof(struct sockaddr_nl, nl_pid)": SOCKADDR_NL.nl_pid,
  "offsetof(struct sockaddr_nl, nl_groups)": SOCKADDR_NL.nl_groups,

  IFNAMSIZ,
  "sizeof(struct ifreq)": IFREQ_SIZE,
  "offsetof(struct ifreq, ifr_flags)": IFREQ_FLAGS_OFFSET,
  TUNSETIFF,
  TUNSETPERSIST,
  TUNSETOWNER,
  TUNSETGROUP,
  IFF_TAP,
  IFF_NO_PI,
  IFF_MULTI_QUEUE,
  IFF_VNET_HDR,

  NETLINK_ROUTE,
  NETLINK_NETFILTER,
  SOL_NETLINK,
  NETLINK_ADD_MEMBERSHIP,
  NETLINK_CAP_ACK,
  NETLINK_EXT_ACK,
  NLMSG_HDRLEN,
  NLMSG_ALIGNTO,
  NLA_HDRLEN,
  NLA_ALIGNTO,
  "sizeof(struct nlmsghdr)": NLMSG_HDRLEN,
  "sizeof(struct nlattr)": NLA_HDRLEN,
  "sizeof(struct ifinfomsg)": IFINFOMSG_SIZE,
  "sizeof(struct ifaddrmsg)": IFADDRMSG_SIZE,
  "sizeof(struct rtmsg)": RTMSG_SIZE,
  "sizeof(struct rtnexthop)": RTNEXTHOP_SIZE,
  "sizeof(struct fib_rule_hdr)": FIB_RULE_HDR_SIZE,
  "sizeof(struct bridge_vlan_info)": BRIDGE_VLAN_INFO_SIZE,
  "sizeof(struct nfgenmsg)": NFGENMSG_SIZE,
  "sizeof(struct tcmsg)": TCMSG_SIZE,
  "sizeof(struct tc_ratespec)": TC_RATESPEC_SIZE,
  TC_RTAB_SIZE,
  "sizeof(struct tc_tbf_qopt)": TC_TBF_QOPT_SIZE,
  "sizeof(struct tc_htb_glob)": TC_HTB_GLOB_SIZE,
  "sizeof(struct tc_htb_opt)": TC_HTB_OPT_SIZE,
  "sizeof(struct tc_u32_sel)": TC_U32_SEL_SIZE,
  "sizeof(struct tc_u32_key)": TC_U32_KEY_SIZE,
  "sizeof(struct tc_mirred)": TC_MIRRED_SIZE,
};

const SOURCE = join(import.meta.dir, "../../test/fixtures/abi/abi.c");

/** Compiles abi.c for this process's architecture and returns what it prints. */
function headerValues(dir: string): Record<string, number> {
  const program = join(dir, "abi");
  const cc = Bun.spawnSync([...cCompiler(), "-Wall", "-Wextra", "-Werror", "-o", program, SOURCE], { stdout: "pipe", stderr: "pipe" });
  if (cc.exitCode !== 0) throw new Error(`compiling ${SOURCE} failed (exit ${cc.exitCode}): ${cc.stderr.toString()}`);
  const run = Bun.spawnSync(nativeCommand([program]), { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`${program} failed (exit ${run.exitCode}): ${run.stderr.toString()}`);
  return JSON.parse(run.stdout.toString()) as Record<string, number>;
}

describe(`kernel ABI values on ${process.arch}, against the headers`, () => {
  const dir = suiteTempDir("cni-abi-");
  let headers: Record<string, number> = {};
  beforeAll(() => {
    headers = headerValues(dir);
  });

  test("abi.c prints exactly the values compared here", () => {
    expect(Object.keys(headers).sort()).toEqual(Object.keys(ours).sort());
  });

  test.each(Object.entries(ours))("%s", (key, value) => {
    expect(value).toBe(headers[key]!);
  });
});
