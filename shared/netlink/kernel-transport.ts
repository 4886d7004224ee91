/**
 * The kernel side of a netlink socket: a bound AF_NETLINK descriptor (SOCK_CLOEXEC) with extended
 * ACKs, moving whole datagrams for the protocol logic of socket.ts. {@link openNetlinkSocket} is
 * how a socket is opened, in the calling thread's netns.
 */
import { AF_NETLINK, MSG_PEEK, MSG_TRUNC, SOCK_CLOEXEC, SOCK_RAW } from "../sys/constants.ts";
import { ENOPROTOOPT, SyscallError } from "../sys/errno.ts";
import { OwnedFd } from "../sys/fd.ts";
import { SOCKADDR_NL } from "../sys/layouts.ts";
import { bind, close, getsockname, recvfrom, sendto, setsockoptInt, socket } from "../sys/libc.ts";
import { netlinkAddress } from "../sys/sockaddr.ts";
import { readU32 } from "./codec.ts";
import { NETLINK_CAP_ACK, NETLINK_EXT_ACK, NETLINK_ROUTE, SOL_NETLINK } from "./constants/netlink.ts";
import { NETLINK_NETFILTER } from "./constants/nfnetlink.ts";
import { deferRelease, releaseDeferrable } from "./netfilter-release.ts";
import { NetlinkSocket, type NetlinkTransport } from "./socket.ts";

/** Opens and binds a netlink socket of `protocol` (NETLINK_ROUTE unless said) in the calling thread's netns. */
export function openNetlinkSocket(protocol = NETLINK_ROUTE): NetlinkSocket {
  return NetlinkSocket.overTransport(new KernelTransport(protocol));
}

/**
 * The receive buffer, one for the whole process and shared by every socket: a plugin call opens
 * several sockets (one per namespace and protocol), and each fresh 64 KiB typed array costs page
 * faults that a profile of a bridge ADD showed at several milliseconds. Sharing is safe because
 * receiving is synchronous and every reader decodes or copies a datagram before the next receive
 * on any socket. Grown on demand when a datagram is larger (sized with MSG_PEEK|MSG_TRUNC).
 */
const RECV_BUFFER_SIZE = 64 * 1024;
let recvBuffer: Uint8Array | undefined;

/**
 * A bound AF_NETLINK socket (SOCK_CLOEXEC) with extended ACKs enabled. A NETLINK_NETFILTER one
 * may have its close deferred (netfilter-release.ts).
 */
export class KernelTransport implements NetlinkTransport {
  readonly #file: OwnedFd;
  readonly #deferClose: boolean;
  readonly portId: number;

  constructor(protocol: number) {
    const file = new OwnedFd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol));
    try {
      for (const opt of [NETLINK_EXT_ACK, NETLINK_CAP_ACK]) {
        try {
          setsockoptInt(file.fd, SOL_NETLINK, opt, 1);
        } catch (err) {
          // Older kernels lack these options; errors are still decoded, only without the text.
          if (!(err instanceof SyscallError && err.errno === ENOPROTOOPT)) throw err;
        }
      }
      bind(file.fd, netlinkAddress());
      const addr = new Uint8Array(SOCKADDR_NL.size);
      getsockname(file.fd, addr);
      this.portId = readU32(addr, SOCKADDR_NL.nl_pid);
    } catch (err) {
      file.close();
      throw err;
    }
    this.#file = file;
    this.#deferClose = protocol === NETLINK_NETFILTER && releaseDeferrable();
  }

  get fd(): number {
    return this.#file.fd;
  }

  send(msg: Uint8Array): void {
    sendto(this.#file.fd, msg, 0, netlinkAddress());
  }

  /** Receives one whole datagram (valid until the next receive on any socket), growing the shared buffer when the kernel's is larger. */
  receive(): Uint8Array {
    const fd = this.#file.fd;
    let buf = (recvBuffer ??= new Uint8Array(RECV_BUFFER_SIZE));
    const size = recvfrom(fd, buf, MSG_PEEK | MSG_TRUNC);
    if (size > buf.byteLength) buf = recvBuffer = new Uint8Array(size + 4096);
    const n = recvfrom(fd, buf, 0);
    return buf.subarray(0, n);
  }

  close(): void {
    if (this.#deferClose && this.#file.isOpen) {
      const fd = this.#file.release();
      if (!deferRelease(fd)) close(fd);
      return;
    }
    this.#file.close();
  }
}
