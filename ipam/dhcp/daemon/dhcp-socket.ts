/**
 * The client's UDP socket, for DHCPv4 (0.0.0.0:68) or DHCPv6 ([::]:546): created INSIDE the
 * container netns (one synchronous withNetNS window), bound to the container interface with
 * SO_BINDTODEVICE, non-blocking; used from the host thread afterwards (a socket keeps the netns it
 * was created in).
 *
 * Receiving never blocks the event loop: {@link DhcpSocket.receive} polls with MSG_DONTWAIT and
 * sleeps between polls, so many leases progress concurrently on the daemon's one thread.
 */
import { NetNS } from "../../../shared/netns/netns.ts";
import { withNetNS } from "../../../shared/netns/enter.ts";
import { EAGAIN, SyscallError } from "../../../shared/sys/errno.ts";
import * as libc from "../../../shared/sys/libc.ts";
import {
  AF_INET,
  AF_INET6,
  IP_TRANSPARENT,
  MSG_DONTWAIT,
  SOCK_CLOEXEC,
  SOCK_DGRAM,
  SOCK_NONBLOCK,
  SOL_IP,
  SOL_SOCKET,
  SO_BINDTODEVICE,
  SO_BROADCAST,
  SO_REUSEADDR,
} from "../../../shared/sys/constants.ts";
import { inet6Address, inetAddress } from "../../../shared/sys/sockaddr.ts";
import { ipToBytes, parseIP } from "../../../shared/ip/addr.ts";
import { DHCP_CLIENT_PORT, DHCP_SERVER_PORT } from "../packet.ts";
import { DHCP6_CLIENT_PORT, DHCP6_SERVER_PORT } from "../packet6.ts";

/** How often a waiting receive polls its socket. */
const POLL_INTERVAL_MS = 20;
/** Largest datagram kept (DHCP messages are far smaller). */
const RECV_BUFFER = 4096;

function addressBytes(ip: string): Uint8Array {
  const parsed = parseIP(ip);
  if (parsed === null) throw new RangeError(`not an IP address: ${JSON.stringify(ip)}`);
  return ipToBytes(parsed);
}

/** struct sockaddr_in of an IPv4 address and a port. */
export function sockaddrIn(ip: string, port: number): Uint8Array {
  return inetAddress(addressBytes(ip), port);
}

/** struct sockaddr_in6 of an IPv6 address, a port and a scope id (interface index). */
export function sockaddrIn6(ip: string, port: number, scopeId = 0): Uint8Array {
  return inet6Address(addressBytes(ip), port, scopeId);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class DhcpSocket {
  #fd: number;
  readonly ifName: string;
  readonly #family: 4 | 6;
  /** Interface index, the scope of IPv6 link-local destinations. */
  readonly #scopeId: number;
  readonly #buf = new Uint8Array(RECV_BUFFER);

  private constructor(fd: number, ifName: string, family: 4 | 6, scopeId: number) {
    this.#fd = fd;
    this.ifName = ifName;
    this.#family = family;
    this.#scopeId = scopeId;
  }

  static #open(ns: NetNS, family: 4 | 6, ifName: string, setup: (fd: number) => void, scopeId = 0): DhcpSocket {
    const fd = withNetNS(ns, () => libc.socket(family === 4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    try {
      libc.setsockoptInt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
      libc.setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, new TextEncoder().encode(`${ifName}\0`));
      setup(fd);
    } catch (err) {
      libc.close(fd);
      throw err;
    }
    return new DhcpSocket(fd, ifName, family, scopeId);
  }

  /**
   * A DHCPv4 socket in `ns`, bound to `ifName` port 68 on 0.0.0.0, or on `sourceIp` (with
   * IP_TRANSPARENT: the address need not be configured, CAP_NET_ADMIN) to send from a leased address.
   */
  static open(ns: NetNS, ifName: string, sourceIp = "0.0.0.0"): DhcpSocket {
    return DhcpSocket.#open(ns, 4, ifName, (fd) => {
      libc.setsockoptInt(fd, SOL_SOCKET, SO_BROADCAST, 1);
      if (sourceIp !== "0.0.0.0") libc.setsockoptInt(fd, SOL_IP, IP_TRANSPARENT, 1);
      libc.bind(fd, sockaddrIn(sourceIp, DHCP_CLIENT_PORT));
    });
  }

  /** A DHCPv6 socket in `ns`, bound to `ifName` (index `ifIndex`) port 546 on [::]; it sends from the link-local address. */
  static open6(ns: NetNS, ifName: string, ifIndex: number): DhcpSocket {
    return DhcpSocket.#open(ns, 6, ifName, (fd) => libc.bind(fd, sockaddrIn6("::", DHCP6_CLIENT_PORT)), ifIndex);
  }

  get isOpen(): boolean {
    return this.#fd >= 0;
  }

  /** Sends one message to the server port of `ip` (255.255.255.255 for a v4 broadcast, ff02::1:2 for all v6 servers). */
  send(bytes: Uint8Array, ip: string): void {
    if (this.#fd < 0) throw new Error("DHCP socket is closed");
    const to = this.#family === 4 ? sockaddrIn(ip, DHCP_SERVER_PORT) : sockaddrIn6(ip, DHCP6_SERVER_PORT, this.#scopeId);
    libc.sendto(this.#fd, bytes, 0, to);
  }

  /** Drops whatever is queued (stale replies of an earlier exchange). */
  drain(): void {
    while (this.#fd >= 0 && this.#tryRecv() !== undefined);
  }

  #tryRecv(): Uint8Array | undefined {
    try {
      const n = libc.recvfrom(this.#fd, this.#buf, MSG_DONTWAIT);
      return this.#buf.slice(0, Math.min(n, this.#buf.byteLength));
    } catch (err) {
      if (err instanceof SyscallError && err.errno === EAGAIN) return undefined;
      throw err;
    }
  }

  /**
   * Waits until `deadline` (epoch ms) for a datagram `take` turns into a value (undefined:
   * malformed or unwanted, skipped). Resolves undefined on timeout, when `cancelled()` turns true,
   * or when the socket was closed meanwhile.
   */
  async receive<T>(deadline: number, take: (raw: Uint8Array) => T | undefined, cancelled: () => boolean = () => false): Promise<T | undefined> {
    for (;;) {
      if (this.#fd < 0 || cancelled()) return undefined;
      const raw = this.#tryRecv();
      if (raw !== undefined) {
        const v = take(raw);
        if (v !== undefined) return v;
        continue;
      }
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await sleep(Math.min(POLL_INTERVAL_MS, left));
    }
  }

  close(): void {
    if (this.#fd < 0) return;
    const fd = this.#fd;
    this.#fd = -1;
    libc.close(fd);
  }
}
