/**
 * A DHCPv4 lease (upstream HEAD lease.go): acquire with DISCOVER/OFFER/REQUEST/ACK and upstream's
 * retries; renew with a unicast REQUEST to the server (INIT-REBOOT while the interface does not
 * carry the address); rebind with a broadcast REQUEST for the current address (RFC 2131 §4.4.5),
 * then DISCOVER with it as a hint; RELEASE from the leased address. The maintenance loop is
 * lease.ts's. With `applyMtu`, option 26 is set on the interface at binding and each renewal.
 */
import type { Result } from "../../../shared/cni/types.ts";
import { NetNS } from "../../../shared/netns/netns.ts";
import { loadDhcpConfig } from "../config.ts";
import { mtuFromAck, resultFromAck } from "../lease-result.ts";
import { BROADCAST_IP, OPT_LEASE_TIME, OPT_REBINDING_TIME, OPT_RENEWAL_TIME, decodeMessage, encodeMessage, optionUint32, type DhcpMessage } from "../packet.ts";
import {
  abortableRetries,
  acquireOnce,
  clientIdFor,
  macBytes,
  rebootOnce,
  renewOnce,
  sendRelease,
  serverIdOf,
  withRetries,
  type ClientParams,
} from "./client.ts";
import { DhcpSocket } from "./dhcp-socket.ts";
import { Lease, type LeaseDeps, type LeaseRequest, type LeaseTimes } from "./lease.ts";
import type { LeaseRecord } from "./lease-store.ts";
import { inspectLink, raiseLink, setLinkMtu } from "./link.ts";

/** Lease time when the server sends no option 51 (upstream: 60 min). */
const DEFAULT_LEASE_SECONDS = 3600;

/** Lease timers from an ACK, in seconds: lease, T1, T2 (upstream defaults 50 % / 85 %). */
export function leaseTimes(ack: DhcpMessage): LeaseTimes {
  const lease = optionUint32(ack, OPT_LEASE_TIME) ?? DEFAULT_LEASE_SECONDS;
  const t1 = optionUint32(ack, OPT_RENEWAL_TIME) ?? lease * 0.5;
  const t2 = optionUint32(ack, OPT_REBINDING_TIME) ?? lease * 0.85;
  return { lease, t1: Math.min(t1, lease), t2: Math.min(Math.max(t2, t1), lease) };
}

/** What a lease takes from the network config. */
interface ClientConfig {
  params: ClientParams;
  priority: number;
  applyMtu: boolean;
}

/** A DHCPv4 socket in the lease's netns (bound to `sourceIp` when given). */
function openSocket(nsPath: string, ifName: string, sourceIp?: string): DhcpSocket {
  const ns = NetNS.open(nsPath);
  try {
    return DhcpSocket.open(ns, ifName, sourceIp);
  } finally {
    ns.close();
  }
}

/** Opens a DHCPv4 socket in the lease's netns, runs `fn`, closes it. */
async function withSocket<T>(nsPath: string, ifName: string, fn: (s: DhcpSocket) => Promise<T>): Promise<T> {
  const sock = openSocket(nsPath, ifName);
  try {
    return await fn(sock);
  } finally {
    sock.close();
  }
}

export class Lease4 extends Lease<DhcpMessage> {
  readonly family = 4 as const;
  readonly #params: ClientParams;
  readonly #priority: number;
  /** `ipam.applyMtu`: option 26 is set on the interface and reported in the result. */
  readonly #applyMtu: boolean;

  private constructor(req: LeaseRequest, deps: LeaseDeps, c: ClientConfig, ack: DhcpMessage, boundAt: number) {
    super(req, deps, ack, boundAt);
    this.#params = c.params;
    this.#priority = c.priority;
    this.#applyMtu = c.applyMtu;
  }

  static #clientConfig(req: LeaseRequest, deps: LeaseDeps, mac: string): ClientConfig {
    const conf = loadDhcpConfig({ config: JSON.parse(req.stdinData) as Record<string, unknown>, args: req.cniArgs });
    const f = deps.flags;
    return {
      params: {
        clientId: clientIdFor(req.key),
        mac: macBytes(mac),
        provide: conf.provide,
        request: conf.request,
        timeoutMs: f.timeoutMs,
        resendMaxMs: f.resendMaxMs,
        resendTimeoutMs: f.resendTimeoutMs,
      },
      priority: conf.priority,
      applyMtu: conf.applyMtu,
    };
  }

  /** INIT → BOUND for a new lease; persists it. Rejects after `-resendtimeout` without an ACK. */
  static async acquire(req: LeaseRequest, deps: LeaseDeps, signal: AbortSignal): Promise<Lease4> {
    const nsPath = deps.flags.hostPrefix + req.netns;
    const { mac } = await raiseLink(nsPath, req.ifName);
    const c = Lease4.#clientConfig(req, deps, mac);
    const { cancelled, sleep } = abortableRetries(signal);
    const ack = await withRetries(
      () => withSocket(nsPath, req.ifName, (s) => acquireOnce(s, c.params, cancelled)),
      c.params,
      Date.now() + c.params.resendTimeoutMs,
      cancelled,
      sleep,
    );
    const lease = new Lease4(req, deps, c, ack, Date.now());
    try {
      lease.result(); // refuses an ACK without a usable subnet mask
      lease.#setMtu();
    } catch (err) {
      await lease.release();
      throw err;
    }
    lease.persist();
    deps.log(`${req.key}: bound ${ack.yiaddr} from ${serverIdOf(ack)} (lease ${leaseTimes(ack).lease}s)`);
    return lease;
  }

  /** Rebuilds a persisted lease (daemon restart); the caller starts its loop. */
  static resume(r: LeaseRecord, deps: LeaseDeps): Lease4 {
    const req: LeaseRequest = { key: r.key, containerID: r.containerID, netns: r.netns, ifName: r.ifName, cniArgs: r.cniArgs, stdinData: r.stdinData };
    const ack = decodeMessage(Buffer.from(r.ack, "base64"));
    const mac = Buffer.from(ack.chaddr.subarray(0, 6)).toString("hex").replace(/(..)(?!$)/g, "$1:");
    const lease = new Lease4(req, deps, Lease4.#clientConfig(req, deps, mac), ack, r.boundAt);
    lease.resumed = true;
    return lease;
  }

  protected times(ack: DhcpMessage): LeaseTimes {
    return leaseTimes(ack);
  }

  protected addressOf(ack: DhcpMessage): string {
    return ack.yiaddr;
  }

  protected encode(ack: DhcpMessage): Uint8Array {
    return encodeMessage(ack);
  }

  /** The CNI result of the current ACK; with `applyMtu` and option 26, the interface and its MTU. */
  result(): Result {
    const result = resultFromAck(this.reply, this.#priority);
    const mtu = this.#applyMtu ? mtuFromAck(this.reply) : undefined;
    if (mtu !== undefined) result.interfaces = [{ name: this.req.ifName, mtu, sandbox: this.req.netns }];
    return result;
  }

  /** Applies option 26 to the interface (`applyMtu`); throws when the kernel refuses it. */
  #setMtu(): void {
    const mtu = this.#applyMtu ? mtuFromAck(this.reply) : undefined;
    if (mtu === undefined) return;
    try {
      setLinkMtu(this.nsPath, this.req.ifName, mtu);
    } catch (err) {
      throw new Error(`failed to set the MTU ${mtu} from DHCP option 26 on ${this.req.ifName}: ${(err as Error).message}`, { cause: err });
    }
  }

  protected override afterBound(): void {
    try {
      this.#setMtu();
    } catch (err) {
      this.deps.log(`${this.tag}: ${(err as Error).message}`);
    }
  }

  /** Whether the interface carries the leased address (else unicast replies to it cannot be received). */
  #configured(ack: DhcpMessage): boolean {
    return inspectLink(this.nsPath, this.req.ifName, false).addresses.includes(ack.yiaddr);
  }

  /** RENEWING: unicast REQUEST to the server; INIT-REBOOT while the address is not configured. */
  protected renewAttempt(ack: DhcpMessage, cancelled: () => boolean): Promise<DhcpMessage> {
    const configured = this.#configured(ack);
    return withSocket(this.nsPath, this.req.ifName, (s) =>
      configured ? renewOnce(s, this.#params, ack, serverIdOf(ack), cancelled) : rebootOnce(s, this.#params, ack.yiaddr, cancelled),
    );
  }

  /**
   * REBINDING: broadcast REQUEST (with ciaddr when the interface carries the address; INIT-REBOOT
   * without it, and always after an `expired` lease), then DISCOVER with the address as a hint.
   */
  protected rebindAttempt(ack: DhcpMessage, cancelled: () => boolean, expired: boolean): Promise<DhcpMessage> {
    const configured = this.#configured(ack);
    return withSocket(this.nsPath, this.req.ifName, (s) =>
      (configured && !expired ? renewOnce(s, this.#params, ack, BROADCAST_IP, cancelled) : rebootOnce(s, this.#params, ack.yiaddr, cancelled)).catch(() =>
        acquireOnce(s, this.#params, cancelled, ack.yiaddr),
      ),
    );
  }

  /**
   * DHCPRELEASE for `ack`, unicast to its server (RFC 2131 §4.4.6), sent from its address with
   * IP_TRANSPARENT even when the main plugin has not configured it (or already removed it).
   */
  protected sendRelease(ack: DhcpMessage): void {
    inspectLink(this.nsPath, this.req.ifName, false);
    const sock = openSocket(this.nsPath, this.req.ifName, ack.yiaddr);
    try {
      sendRelease(sock, this.#params, ack);
    } finally {
      sock.close();
    }
  }
}
