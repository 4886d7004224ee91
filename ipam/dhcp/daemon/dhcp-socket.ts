/**
 * The client's UDP socket: created INSIDE the container netns (one synchronous withNetNS window),
 * bound to the container interface with SO_BINDTODEVICE on 0.0.0.0:68, non-blocking; used from the
 * host thread afterwards (a socket keeps the netns it was created in).
 *
 * Receiving never blocks the event loop: {@link DhcpSocket.receive} polls with MSG_DONTWAIT and
 * sleeps between polls, so many leases progress concurrently on the daemon's one thread.
 */
import { NetNS, withNetNS } from "../../../shared/netns/index.ts";
import { EAGAIN, SyscallError, libc } from "../../../shared/sys/index.ts";
import {
  AF_INET,
  MSG_DONTWAIT,
  SOCK_CLOEXEC,
  SOCK_DGRAM,
  SOCK_NONBLOCK,
  SOL_SOCKET,
  SO_BINDTODEVICE,
  SO_BROADCAST,
  SO_REUSEADDR,
} from "../../../shared/sys/constants.ts";
import { decodeMessage, ipv4Bytes, type DhcpMessage } from "../packet.ts";

// <linux/in.h>
const SOL_IP = 0;
const IP_TRANSPARENT = 19;

export const DHCP_SERVER_PORT = 67;
export const DHCP_CLIENT_PORT = 68;
/** How often a waiting receive polls its socket. */
const POLL_INTERVAL_MS = 20;

/** struct sockaddr_in (16 bytes): family in host order, port and address in network order. */
export function sockaddrIn(ip: string, port: number): Uint8Array {
  const out = new Uint8Array(16);
  const dv = new DataView(out.buffer);
  dv.setUint16(0, AF_INET, true);
  dv.setUint16(2, port, false);
  out.set(ipv4Bytes(ip), 4);
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class DhcpSocket {
  #fd: number;
  readonly ifName: string;
  readonly #buf = new Uint8Array(1500);

  private constructor(fd: number, ifName: string) {
    this.#fd = fd;
    this.ifName = ifName;
  }

  /**
   * Opens the socket in `ns`, bound to `ifName` port 68 on 0.0.0.0, or on `sourceIp` (with
   * IP_TRANSPARENT: the address need not be configured, CAP_NET_ADMIN) to send from a leased address.
   */
  static open(ns: NetNS, ifName: string, sourceIp = "0.0.0.0"): DhcpSocket {
    const fd = withNetNS(ns, () => libc.socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    try {
      libc.setsockoptInt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
      libc.setsockoptInt(fd, SOL_SOCKET, SO_BROADCAST, 1);
      libc.setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, new TextEncoder().encode(`${ifName}\0`));
      if (sourceIp !== "0.0.0.0") libc.setsockoptInt(fd, SOL_IP, IP_TRANSPARENT, 1);
      libc.bind(fd, sockaddrIn(sourceIp, DHCP_CLIENT_PORT));
    } catch (err) {
      libc.close(fd);
      throw err;
    }
    return new DhcpSocket(fd, ifName);
  }

  get isOpen(): boolean {
    return this.#fd >= 0;
  }

  /** Sends one message to `ip`:67 (255.255.255.255 for a broadcast). */
  send(bytes: Uint8Array, ip: string): void {
    if (this.#fd < 0) throw new Error("DHCP socket is closed");
    libc.sendto(this.#fd, bytes, 0, sockaddrIn(ip, DHCP_SERVER_PORT));
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
   * Waits until `deadline` (epoch ms) for a message `accept` takes; malformed or unwanted
   * datagrams are skipped. Resolves undefined on timeout, when `cancelled()` turns true, or when
   * the socket was closed meanwhile.
   */
  async receive(deadline: number, accept: (m: DhcpMessage) => boolean, cancelled: () => boolean = () => false): Promise<DhcpMessage | undefined> {
    for (;;) {
      if (this.#fd < 0 || cancelled()) return undefined;
      const raw = this.#tryRecv();
      if (raw !== undefined) {
        let m: DhcpMessage | undefined;
        try {
          m = decodeMessage(raw);
        } catch {
          m = undefined;
        }
        if (m !== undefined && accept(m)) return m;
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
