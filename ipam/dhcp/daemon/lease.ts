/**
 * One lease and its maintenance (upstream HEAD lease.go, upstream-matrix §4.4): acquire
 * (DISCOVER/OFFER/REQUEST/ACK with retries), then BOUND → renew at T1 (unicast REQUEST) → rebind
 * at T2 (broadcast REQUEST, then DISCOVER) → expiry (interface set down, lease forgotten). The
 * loop stops silently when the netns or the interface disappears. RELEASE is sent on DEL only.
 * Every exchange is cut at the end of its phase (T2, expiry), so expiry happens on time.
 *
 * Beyond upstream: a renewal/rebind answered with ANOTHER address is refused (that lease is
 * released; the container keeps its address until expiry, then the link goes down) — upstream
 * silently switches the daemon to the new address while the container keeps the old one. A
 * persisted lease found expired at daemon start is re-acquired (INIT-REBOOT for the same
 * address, then DISCOVER with it as a hint, for one `-resendtimeout`) before the link is set down.
 *
 * The socket is opened for each exchange and closed afterwards, so the daemon never pins a
 * container's netns (an open socket holds a reference on its namespace).
 */
import type { Result } from "../../../shared/cni/types.ts";
import { Handle } from "../../../shared/netlink/index.ts";
import { IFF_UP, IF_OPER_UNKNOWN, IF_OPER_UP } from "../../../shared/netlink/constants/if-link.ts";
import { NetNS } from "../../../shared/netns/index.ts";
import { loadDhcpConfig } from "../config.ts";
import { resultFromAck } from "../lease-result.ts";
import { OPT_LEASE_TIME, OPT_REBINDING_TIME, OPT_RENEWAL_TIME, decodeMessage, encodeMessage, optionUint32, type DhcpMessage } from "../packet.ts";
import {
  BROADCAST_IP,
  acquireOnce,
  clientIdFor,
  rebootOnce,
  macBytes,
  renewOnce,
  sendRelease,
  serverIdOf,
  withRetries,
  type ClientParams,
} from "./client.ts";
import { DhcpSocket } from "./dhcp-socket.ts";
import type { DaemonFlags } from "./flags.ts";
import type { LeaseRecord, LeaseStore } from "./lease-store.ts";

/** Lease time when the server sends no option 51 (upstream: 60 min). */
const DEFAULT_LEASE_SECONDS = 3600;
/** Longest single timer (setTimeout's limit is ~24.8 days). */
const MAX_SLEEP_MS = 3_600_000;

export interface LeaseDeps {
  flags: DaemonFlags;
  store: LeaseStore;
  log: (line: string) => void;
}

export interface LeaseRequest {
  key: string;
  containerID: string;
  netns: string;
  ifName: string;
  cniArgs: string;
  stdinData: string;
}

export class LinkGoneError extends Error {
  override name = "LinkGoneError";
}

/** Lease timers from an ACK, in seconds: lease, T1, T2 (upstream defaults 50 % / 85 %). */
export function leaseTimes(ack: DhcpMessage): { lease: number; t1: number; t2: number } {
  const lease = optionUint32(ack, OPT_LEASE_TIME) ?? DEFAULT_LEASE_SECONDS;
  const t1 = optionUint32(ack, OPT_RENEWAL_TIME) ?? lease * 0.5;
  const t2 = optionUint32(ack, OPT_REBINDING_TIME) ?? lease * 0.85;
  return { lease, t1: Math.min(t1, lease), t2: Math.min(Math.max(t2, t1), lease) };
}

/** How long a new lease waits for a just-raised link to become operational before its first DISCOVER. */
const LINK_READY_WAIT_MS = 2000;

/**
 * Looks the interface up in the netns at `nsPath`; sets it up when `up`. Returns its MAC, IPv4
 * addresses and whether it is operational (IF_OPER_UP, or UNKNOWN for drivers without operstate).
 */
function inspectLink(nsPath: string, ifName: string, up: boolean): { mac: string; addresses: string[]; ready: boolean } {
  let ns: NetNS;
  try {
    ns = NetNS.open(nsPath);
  } catch (err) {
    throw new LinkGoneError(`failed to open netns ${JSON.stringify(nsPath)}: ${(err as Error).message}`, { cause: err });
  }
  try {
    using nl = Handle.open(ns);
    let link;
    try {
      link = nl.linkByName(ifName);
    } catch (err) {
      throw new LinkGoneError(`error looking up ${JSON.stringify(ifName)}: ${(err as Error).message}`, { cause: err });
    }
    if (up && (link.flags & IFF_UP) === 0) nl.linkSetUp(link.index);
    const addresses = nl.addrList({ index: link.index, family: 4 }).map((a) => a.address);
    const ready = (link.flags & IFF_UP) !== 0 && (link.operState === undefined || link.operState === IF_OPER_UP || link.operState === IF_OPER_UNKNOWN);
    return { mac: link.mac ?? "00:00:00:00:00:00", addresses, ready };
  } finally {
    ns.close();
  }
}

/** Sets the interface down (lease expired); failures are ignored (it may be gone). */
function linkDown(nsPath: string, ifName: string): void {
  try {
    const ns = NetNS.open(nsPath);
    try {
      using nl = Handle.open(ns);
      nl.linkSetDown(nl.linkByName(ifName).index);
    } finally {
      ns.close();
    }
  } catch {
    // gone already
  }
}

/** Opens a DHCP socket in the lease's netns, runs `fn`, closes it. */
async function withSocket<T>(nsPath: string, ifName: string, fn: (s: DhcpSocket) => Promise<T>): Promise<T> {
  const ns = NetNS.open(nsPath);
  let sock: DhcpSocket;
  try {
    sock = DhcpSocket.open(ns, ifName);
  } finally {
    ns.close();
  }
  try {
    return await fn(sock);
  } finally {
    sock.close();
  }
}

export class Lease {
  readonly req: LeaseRequest;
  readonly #deps: LeaseDeps;
  readonly #params: ClientParams;
  readonly #priority: number;
  #ack: DhcpMessage;
  #boundAt: number;
  #stopped = false;
  /** Set when the netns or interface vanished: ends retries at once. */
  #gone = false;
  /** Set when a server answered with another address: no more renewals, expire at the end. */
  #addressLost = false;
  /** Rebuilt from the lease directory at daemon start. */
  #resumed = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  private constructor(req: LeaseRequest, deps: LeaseDeps, params: ClientParams, priority: number, ack: DhcpMessage, boundAt: number) {
    this.req = req;
    this.#deps = deps;
    this.#params = params;
    this.#priority = priority;
    this.#ack = ack;
    this.#boundAt = boundAt;
  }

  get #nsPath(): string {
    return this.#deps.flags.hostPrefix + this.req.netns;
  }

  static #clientParams(req: LeaseRequest, deps: LeaseDeps, mac: string): { params: ClientParams; priority: number } {
    const conf = loadDhcpConfig(JSON.parse(req.stdinData) as Record<string, unknown>, req.cniArgs);
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
    };
  }

  /** INIT → BOUND for a new lease; persists it. Rejects after `-resendtimeout` without an ACK. */
  static async acquire(req: LeaseRequest, deps: LeaseDeps): Promise<Lease> {
    const nsPath = deps.flags.hostPrefix + req.netns;
    let { mac, ready } = inspectLink(nsPath, req.ifName, true);
    // A link raised just now (macvlan: by us) drops what is sent until the kernel's link watch
    // activates it (up to ~1 s): wait for that instead of losing the first DISCOVER to a full -timeout.
    for (const end = Date.now() + LINK_READY_WAIT_MS; !ready && Date.now() < end; ) {
      await new Promise((r) => setTimeout(r, 10));
      ({ mac, ready } = inspectLink(nsPath, req.ifName, false));
    }
    const { params, priority } = Lease.#clientParams(req, deps, mac);
    const deadline = Date.now() + params.resendTimeoutMs;
    const never = (): boolean => false;
    const ack = await withRetries(
      () => withSocket(nsPath, req.ifName, (s) => acquireOnce(s, params, never)),
      params,
      deadline,
      never,
      (ms) => new Promise((r) => setTimeout(r, ms)),
    );
    resultFromAck(ack, priority); // refuses an ACK without a usable subnet mask
    const lease = new Lease(req, deps, params, priority, ack, Date.now());
    lease.#persist();
    deps.log(`${req.key}: bound ${ack.yiaddr} from ${serverIdOf(ack)} (lease ${leaseTimes(ack).lease}s)`);
    return lease;
  }

  /** Rebuilds a persisted lease (daemon restart); the caller starts its loop. */
  static resume(r: LeaseRecord, deps: LeaseDeps): Lease {
    const req: LeaseRequest = { key: r.key, containerID: r.containerID, netns: r.netns, ifName: r.ifName, cniArgs: r.cniArgs, stdinData: r.stdinData };
    const ack = decodeMessage(Buffer.from(r.ack, "base64"));
    const mac = Buffer.from(ack.chaddr.subarray(0, 6)).toString("hex").replace(/(..)(?!$)/g, "$1:");
    const { params, priority } = Lease.#clientParams(req, deps, mac);
    const lease = new Lease(req, deps, params, priority, ack, r.boundAt);
    lease.#resumed = true;
    return lease;
  }

  /** The CNI result of the current ACK. */
  result(): Result {
    return resultFromAck(this.#ack, this.#priority);
  }

  get address(): string {
    return this.#ack.yiaddr;
  }

  #persist(): void {
    this.#deps.store.save({
      ...this.req,
      ack: Buffer.from(encodeMessage(this.#ack)).toString("base64"),
      boundAt: this.#boundAt,
    });
  }

  #sleepUntil(when: number): Promise<void> {
    const ms = Math.max(0, Math.min(when - Date.now(), MAX_SLEEP_MS));
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#wake = undefined;
        resolve();
      }, ms);
      this.#wake = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
    });
  }

  #sleep = (ms: number): Promise<void> => this.#sleepUntil(Date.now() + ms);
  #cancelled = (): boolean => this.#stopped || this.#gone || this.#addressLost;

  /** Starts the maintenance loop (renew/rebind/expire). */
  start(onEnd: (why: string) => void): void {
    this.#loop = this.#maintain().then(onEnd, (err: unknown) => onEnd(`maintenance failed: ${(err as Error).message}`));
  }

  #bound(ack: DhcpMessage, how: string): void {
    this.#ack = ack;
    this.#boundAt = Date.now();
    this.#persist();
    this.#deps.log(`${this.req.key}: ${how} ${ack.yiaddr} (lease ${leaseTimes(ack).lease}s)`);
  }

  /**
   * One renew/rebind attempt; a vanished link stops the loop. `fn` learns whether the interface
   * carries the leased address (else unicast replies to it cannot be received).
   */
  async #attempt(fn: (s: DhcpSocket, configured: boolean) => Promise<DhcpMessage>): Promise<DhcpMessage> {
    let configured: boolean;
    try {
      configured = inspectLink(this.#nsPath, this.req.ifName, false).addresses.includes(this.#ack.yiaddr);
    } catch (err) {
      if (err instanceof LinkGoneError) this.#gone = true;
      throw err;
    }
    return withSocket(this.#nsPath, this.req.ifName, (s) => fn(s, configured));
  }

  /**
   * The exchange-level cancel test for a retry sequence that must end at `deadline`: the DHCP
   * exchange in flight is cut there too (so the interface goes down at expiry, not up to
   * 3 × `-timeout` later).
   */
  #until(deadline: number): () => boolean {
    return () => this.#cancelled() || Date.now() >= deadline;
  }

  /**
   * A reply for another address than the one the container carries is not a renewal: the lease
   * for it is released at once and the sequence ends (the server will not hand ours back).
   */
  #sameAddress(ack: DhcpMessage): DhcpMessage {
    if (ack.yiaddr === this.#ack.yiaddr) return ack;
    this.#addressLost = true;
    let released = "released it";
    try {
      this.#sendReleaseFor(ack);
    } catch (err) {
      released = `could not release it: ${(err as Error).message}`;
    }
    throw new Error(`server offered ${ack.yiaddr} instead of ${this.#ack.yiaddr} (${released})`);
  }

  /**
   * REBINDING: asks any server for the current address — broadcast REQUEST (with ciaddr when the
   * interface carries the address; INIT-REBOOT without it, and always after an `expired` lease),
   * then DISCOVER with the address as a hint — until `deadline`.
   */
  #rebind(deadline: number, expired = false): Promise<DhcpMessage> {
    const cancelled = this.#until(deadline);
    return withRetries(
      () =>
        this.#attempt(async (s, configured) => {
          const ack = await (configured && !expired
            ? renewOnce(s, this.#params, this.#ack, BROADCAST_IP, cancelled)
            : rebootOnce(s, this.#params, this.#ack.yiaddr, cancelled)
          ).catch(() => acquireOnce(s, this.#params, cancelled, this.#ack.yiaddr));
          return this.#sameAddress(ack);
        }),
      this.#params,
      deadline,
      cancelled,
      this.#sleep,
    );
  }

  async #maintain(): Promise<string> {
    try {
      if (this.#resumed && Date.now() >= this.#boundAt + leaseTimes(this.#ack).lease * 1000) {
        // Expired while no daemon ran: the container still carries the address, so try to get
        // the same one back (INIT-REBOOT) before giving up, for one `-resendtimeout`.
        this.#deps.log(`${this.req.key}: persisted lease on ${this.#ack.yiaddr} expired while the daemon was down; re-acquiring it`);
        try {
          this.#bound(await this.#rebind(Date.now() + this.#params.resendTimeoutMs, true), "re-acquired");
        } catch (err) {
          if (err instanceof Error && err.cause instanceof LinkGoneError) throw err.cause;
          if (this.#stopped) return "stopped";
          this.#deps.log(`${this.req.key}: re-acquiring failed: ${(err as Error).message}`);
          return this.#expire();
        }
      }
      return await this.#renewLoop();
    } catch (err) {
      if (err instanceof LinkGoneError) {
        this.#deps.store.remove(this.req.key);
        return `interface gone (${err.message}); lease forgotten`;
      }
      throw err;
    }
  }

  /** Lease expired (upstream HEAD): the interface is set down, the lease forgotten. */
  #expire(): string {
    linkDown(this.#nsPath, this.req.ifName);
    this.#deps.store.remove(this.req.key);
    return `lease on ${this.#ack.yiaddr} expired; ${this.req.ifName} set down`;
  }

  /** BOUND → RENEWING at T1 → REBINDING at T2 → expiry; throws LinkGoneError when the link vanishes. */
  async #renewLoop(): Promise<string> {
    for (;;) {
      const times = leaseTimes(this.#ack);
      const t1 = this.#boundAt + times.t1 * 1000;
      const t2 = this.#boundAt + times.t2 * 1000;
      const expiry = this.#boundAt + times.lease * 1000;
      while (!this.#stopped && Date.now() < t1) await this.#sleepUntil(t1);
      if (this.#stopped) return "stopped";
      if (Date.now() < t2 && !this.#addressLost) {
        const server = serverIdOf(this.#ack);
        const cancelled = this.#until(t2);
        try {
          const ack = await withRetries(
            () =>
              this.#attempt(async (s, configured) =>
                this.#sameAddress(
                  await (configured
                    ? renewOnce(s, this.#params, this.#ack, server, cancelled)
                    : rebootOnce(s, this.#params, this.#ack.yiaddr, cancelled)),
                ),
              ),
            this.#params,
            t2,
            cancelled,
            this.#sleep,
          );
          this.#bound(ack, "renewed");
          continue;
        } catch (err) {
          if (err instanceof Error && err.cause instanceof LinkGoneError) throw err.cause;
          if (this.#stopped) return "stopped";
          this.#deps.log(`${this.req.key}: renew failed: ${(err as Error).message}; rebinding`);
        }
      }
      if (Date.now() < expiry && !this.#addressLost) {
        try {
          this.#bound(await this.#rebind(expiry), "rebound");
          continue;
        } catch (err) {
          if (err instanceof Error && err.cause instanceof LinkGoneError) throw err.cause;
          if (this.#stopped) return "stopped";
          this.#deps.log(`${this.req.key}: rebind failed: ${(err as Error).message}`);
        }
      }
      // Wait out the lease when the address was lost early: it is ours until then.
      while (!this.#stopped && Date.now() < expiry) await this.#sleepUntil(expiry);
      if (this.#stopped) return "stopped";
      return this.#expire();
    }
  }

  /** Stops maintenance without releasing (daemon shutdown); the record stays on disk. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
  }

  /** DEL: stops maintenance, sends DHCPRELEASE (failures only logged), forgets the lease. */
  async release(): Promise<void> {
    await this.stop();
    try {
      this.#sendReleaseFor(this.#ack);
      this.#deps.log(`${this.req.key}: released ${this.#ack.yiaddr}`);
    } catch (err) {
      this.#deps.log(`${this.req.key}: failed to release DHCP lease: ${(err as Error).message}`);
    }
    this.#deps.store.remove(this.req.key);
  }

  /**
   * Sends DHCPRELEASE for `ack` from its address even when the main plugin has not configured it
   * (or already removed it): unicast to the server, as RFC 2131 §4.4.6 wants.
   */
  #sendReleaseFor(ack: DhcpMessage): void {
    const nsPath = this.#nsPath;
    inspectLink(nsPath, this.req.ifName, false);
    const ns = NetNS.open(nsPath);
    let sock: DhcpSocket;
    try {
      sock = DhcpSocket.open(ns, this.req.ifName, ack.yiaddr);
    } finally {
      ns.close();
    }
    try {
      sendRelease(sock, this.#params, ack);
    } finally {
      sock.close();
    }
  }
}
