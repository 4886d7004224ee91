/**
 * A DHCPv6 lease (ours; upstream's daemon is DHCPv4 only, #720): one address in one IA_NA,
 * acquired with SOLICIT/ADVERTISE/REQUEST/REPLY, renewed at T1 (RENEW), rebound at T2 (REBIND, then
 * SOLICIT with the address as a hint), released on DEL; at the end of the valid lifetime the
 * interface is set down, as for DHCPv4. T1/T2 of 0 mean 0.5 and 0.8 × the preferred lifetime
 * (RFC 8415 §21.4). The maintenance loop is lease.ts's; identities and exchanges client6.ts's.
 */
import type { Result } from "../../../shared/cni/types.ts";
import { NetNS } from "../../../shared/netns/netns.ts";
import { loadDhcpConfig } from "../config.ts";
import { INFINITY, decodeMessage6, dns6, encodeMessage6, findIaNa, type Dhcp6Message } from "../packet6.ts";
import { abortableRetries, withRetries } from "./client.ts";
import { duidFor, iaidFor, leasedAddress, rebind6Once, renew6Once, sendRelease6, solicitOnce, type Client6Params } from "./client6.ts";
import { DhcpSocket } from "./dhcp-socket.ts";
import { Lease, type LeaseDeps, type LeaseRequest, type LeaseTimes } from "./lease.ts";
import type { LeaseRecord } from "./lease-store.ts";
import { awaitLinkLocal, inspectLink, raiseLink } from "./link.ts";

/** Lifetimes are capped here (an infinite one would overflow the timers): 10 years. */
const MAX_LIFETIME = 10 * 365 * 24 * 3600;

/** Timers of a REPLY for `iaid`, in seconds. */
export function leaseTimes6(reply: Dhcp6Message, iaid: number): LeaseTimes {
  const ia = findIaNa(reply, iaid);
  const a = leasedAddress(reply, iaid);
  const cap = (n: number): number => (n === INFINITY ? MAX_LIFETIME : Math.min(n, MAX_LIFETIME));
  const lease = cap(a?.valid ?? 0);
  const preferred = Math.min(cap(a?.preferred ?? 0), lease);
  const t1 = ia !== undefined && ia.t1 > 0 ? cap(ia.t1) : preferred * 0.5;
  const t2 = ia !== undefined && ia.t2 > 0 ? cap(ia.t2) : preferred * 0.8;
  return { lease, t1: Math.min(t1, lease), t2: Math.min(Math.max(t2, t1), lease) };
}

/** Opens a DHCPv6 socket on the interface (which must have a usable link-local address), runs `fn`, closes it. */
async function withSocket6<T>(nsPath: string, ifName: string, fn: (s: DhcpSocket) => Promise<T> | T): Promise<T> {
  const sock = openSocket6(nsPath, ifName);
  try {
    return await fn(sock);
  } finally {
    sock.close();
  }
}

function openSocket6(nsPath: string, ifName: string): DhcpSocket {
  const link = inspectLink(nsPath, ifName, false);
  if (link.linkLocal === undefined) throw new Error(`${ifName} has no usable IPv6 link-local address`);
  const ns = NetNS.open(nsPath);
  try {
    return DhcpSocket.open6(ns, ifName, link.index);
  } finally {
    ns.close();
  }
}

export class Lease6 extends Lease<Dhcp6Message> {
  readonly family = 6 as const;
  readonly #params: Client6Params;
  readonly #prefixLength: number;

  private constructor(req: LeaseRequest, deps: LeaseDeps, reply: Dhcp6Message, boundAt: number) {
    super(req, deps, reply, boundAt);
    this.#params = { duid: duidFor(req.key), iaid: iaidFor(req.ifName), timeoutMs: deps.flags.timeoutMs };
    this.#prefixLength = loadDhcpConfig({ config: JSON.parse(req.stdinData) as Record<string, unknown>, args: req.cniArgs }).ipv6PrefixLength;
  }

  /** SOLICIT … REPLY for a new lease; persists it. Rejects after `-resendtimeout` without a REPLY. */
  static async acquire(req: LeaseRequest, deps: LeaseDeps, signal: AbortSignal): Promise<Lease6> {
    const nsPath = deps.flags.hostPrefix + req.netns;
    await awaitLinkLocal(nsPath, req.ifName, await raiseLink(nsPath, req.ifName));
    const params: Client6Params = { duid: duidFor(req.key), iaid: iaidFor(req.ifName), timeoutMs: deps.flags.timeoutMs };
    const { cancelled, sleep } = abortableRetries(signal);
    const reply = await withRetries(
      () => withSocket6(nsPath, req.ifName, (s) => solicitOnce(s, params, cancelled)),
      deps.flags,
      Date.now() + deps.flags.resendTimeoutMs,
      cancelled,
      sleep,
    );
    const lease = new Lease6(req, deps, reply, Date.now());
    lease.persist();
    deps.log(`${lease.tag}: bound ${lease.address} (valid ${leaseTimes6(reply, params.iaid).lease}s)`);
    return lease;
  }

  /** Rebuilds a persisted lease (daemon restart); the caller starts its loop. */
  static resume(r: LeaseRecord, deps: LeaseDeps): Lease6 {
    const req: LeaseRequest = { key: r.key, containerID: r.containerID, netns: r.netns, ifName: r.ifName, cniArgs: r.cniArgs, stdinData: r.stdinData };
    const lease = new Lease6(req, deps, decodeMessage6(Buffer.from(r.ack, "base64")), r.boundAt);
    if (leasedAddress(lease.reply, lease.#params.iaid) === undefined) throw new Error("persisted DHCPv6 reply holds no address");
    lease.resumed = true;
    return lease;
  }

  protected times(reply: Dhcp6Message): LeaseTimes {
    return leaseTimes6(reply, this.#params.iaid);
  }

  protected addressOf(reply: Dhcp6Message): string {
    return leasedAddress(reply, this.#params.iaid)?.address ?? "";
  }

  protected encode(reply: Dhcp6Message): Uint8Array {
    return encodeMessage6(reply);
  }

  /** `<address>/<ipv6PrefixLength>` and the DNS servers and domain list the server sent. */
  result(): Result {
    const result: Result = { ips: [{ address: `${this.address}/${this.#prefixLength}` }] };
    const { nameservers, search } = dns6(this.reply);
    if (nameservers.length > 0 || search.length > 0) {
      result.dns = {};
      if (nameservers.length > 0) result.dns.nameservers = nameservers;
      if (search.length > 0) result.dns.search = search;
    }
    return result;
  }

  protected renewAttempt(reply: Dhcp6Message, cancelled: () => boolean): Promise<Dhcp6Message> {
    return withSocket6(this.nsPath, this.req.ifName, (s) => renew6Once(s, this.#params, reply, cancelled));
  }

  protected rebindAttempt(reply: Dhcp6Message, cancelled: () => boolean): Promise<Dhcp6Message> {
    return withSocket6(this.nsPath, this.req.ifName, (s) =>
      rebind6Once(s, this.#params, reply, cancelled).catch(() => solicitOnce(s, this.#params, cancelled, this.addressOf(reply))),
    );
  }

  protected sendRelease(reply: Dhcp6Message): void {
    const sock = openSocket6(this.nsPath, this.req.ifName);
    try {
      sendRelease6(sock, this.#params, reply);
    } finally {
      sock.close();
    }
  }
}
