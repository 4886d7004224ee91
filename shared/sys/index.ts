/**
 * The public face of shared/sys/, the libc layer: syscalls, errno, owned fds and file locks. The
 * only bun:ffi user. Every file not re-exported here is private to the package; other packages import the modules named here, never this file (build/lint-layers.ts).
 */
export * from "./errno.ts";
export { OwnedFd } from "./fd.ts";
export { FileLock } from "./flock.ts";
export * as libc from "./libc.ts";
export { AF_BRIDGE, AF_INET, AF_INET6, AF_NETLINK, AF_UNSPEC, CLONE_FS, CLONE_NEWNET, IP_TRANSPARENT, MSG_DONTWAIT, MSG_PEEK, MSG_TRUNC, NSFS_MAGIC, O_APPEND, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_RDWR, O_WRONLY, PROC_SUPER_MAGIC, SIGHUP, SIGINT, SIGTERM, SO_BINDTODEVICE, SO_BROADCAST, SO_RCVTIMEO, SO_REUSEADDR, SOCK_CLOEXEC, SOCK_DGRAM, SOCK_NONBLOCK, SOCK_RAW, SOL_IP, SOL_SOCKET, THREAD_NETNS_PATH } from "./constants.ts";
export { bindDatagram, receiveDatagram, sendDatagram } from "./datagram.ts";
export { lockFd } from "./fd-lock.ts";
export type { LockWaiter } from "./lock-waiter.ts";
export { absolutePath, createFresh, exists, fstat, joinPath, link, lstatAtIfExists, lstatIfExists, mkdirAll, open, readAll, readDir, readLinkText, readProcText, readTextFile, replaceFile, rmdir, stat, statIfExists, statWithMount, unlink, unlinkIfExists, utimes, writeAll, writeFile } from "./file.ts";
export type { DirEntry, FileStat } from "./file.ts";
export { SOCKADDR_NL } from "./layouts.ts";
export { bind, close, getsockname, recvfrom, sendto, setns, setsockopt, setsockoptInt, setsockoptTimeval, socket, statfs, unshare } from "./libc.ts";
export { PathError } from "./path-error.ts";
export { mark, phasesReport, spanEnd, spanStart } from "./phases.ts";
export { blockSignals, chdirThread, dupAbove, execve, ignoreSignal, keepAcrossExec, listenUnix, peerCredentials, setUmask } from "./process.ts";
export type { PeerCredentials } from "./process.ts";
export { inet6Address, inetAddress, netlinkAddress, unixAddress } from "./sockaddr.ts";
export { listenPrivately, SocketPathError } from "./socket-file.ts";
