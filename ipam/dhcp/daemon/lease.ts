/**
 * One lease and its maintenance, for either family (lease4.ts: DHCPv4, upstream HEAD lease.go;
 * lease6.ts: DHCPv6): BOUND → renew at T1 → rebind at T2 → expiry (interface set down, lease
 * forgotten). The loop stops silently when the netns or the interface disappears. RELEASE is sent
 * on DEL (and GC) only. Every exchange is cut at the end of its phase (T2, expiry), so expiry
 * happens on time.
 *
 * Beyond upstream: a renewal/rebind answered with ANOTHER address is refused (that lease is
 * released; the container keeps its address until expiry, then the link goes down) — upstream
 * silently switches the daemon to the new address while the container keeps the old one. A
 * persisted lease found expired at daemon start is re-acquired (rebinding for the same address)
 * for one `-resendtimeout` before the link is set down.
 *
 * Sockets are opened for each exchange and closed afterwards, so the daemon never pins a
 * container's netns (an open socket holds a reference on its namespace).
 */
import type { Result } from "../../../shared/cni/types.ts";
import { failureDetail, withRetries } from "./client.ts";
import type { DaemonFlags } from "./flags.ts";
import type { LeaseStore } from "./lease-store.ts";
import { LinkGoneError, linkDown } from "./link.ts";

/** Longest single timer (setTimeout's limit is ~24.8 days). */
const MAX_SLEEP_MS = 3_600_000;

export interface LeaseDeps {
  flags: DaemonFlags;
  store: LeaseStore;
  log: (line: string) => void;
  /** Whoever counts the daemon's work (the resident agent's metrics); absent in a daemon of its own. */
  events?: LeaseEvents | undefined;
}

/** What the daemon tells whoever counts its work (docs/observability.md, the cni_dhcp_* metrics). */
export interface LeaseEvents {
  /** Leases held now. */
  held(count: number): void;
  /** A renewal or rebind: answered (`ok`), or a renewal that went unanswered (a rebind follows). */
  renewal(ok: boolean): void;
  /** A lease not acquired, lost (its rebind unanswered too), or not released. */
  failure(stage: "acquire" | "renew" | "release"): void;
}

export interface LeaseRequest {
  /** `<containerID>/<network>/<ifname>`. */
  key: string;
  containerID: string;
  netns: string;
  ifName: string;
  cniArgs: string;
  stdinData: string;
}

/** Lease timers, in seconds from binding. */
export interface LeaseTimes {
  lease: number;
  t1: number;
  t2: number;
}

/** The retry settings of the daemon's flags. */
export interface Retry {
  resendMaxMs: number;
  resendTimeoutMs: number;
}

/** How the log names a lease: `c1/net/eth0`, or `c1/net/eth0 (DHCPv6)`. */
export function leaseTag(key: string, family: 4 | 6): string {
  return family === 4 ? key : `${key} (DHCPv6)`;
}

export abstract class Lease<R> {
  readonly req: LeaseRequest;
  protected readonly deps: LeaseDeps;
  protected readonly retry: Retry;
  #reply: R;
  #boundAt: number;
  #stopped = false;
  /** Set when the netns or interface vanished: ends retries at once. */
  #gone = false;
  /** Set when a server answered with another address: no more renewals, expire at the end. */
  #addressLost = false;
  /** Rebuilt from the lease directory at daemon start. */
  protected resumed = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  abstract readonly family: 4 | 6;

  protected constructor(req: LeaseRequest, deps: LeaseDeps, reply: R, boundAt: number) {
    this.req = req;
    this.deps = deps;
    this.retry = deps.flags;
    this.#reply = reply;
    this.#boundAt = boundAt;
  }

  /** Timers of a reply. */
  protected abstract times(r: R): LeaseTimes;
  /** The address a reply leases. */
  protected abstract addressOf(r: R): string;
  /** The reply as persisted bytes. */
  protected abstract encode(r: R): Uint8Array;
  /** One RENEWING attempt for `current`. */
  protected abstract renewAttempt(current: R, cancelled: () => boolean): Promise<R>;
  /** One REBINDING attempt for `current`; `expired`: the lease ran out while no daemon ran. */
  protected abstract rebindAttempt(current: R, cancelled: () => boolean, expired: boolean): Promise<R>;
  /** Sends the RELEASE for a reply (no answer awaited). */
  protected abstract sendRelease(r: R): void;
  /** The CNI result of the current reply. */
  abstract result(): Result;
  /** Called after each renewal or rebind (v4: option 26). */
  protected afterBound(): void {}

  /** `c1/net/eth0` or `c1/net/eth0 (DHCPv6)`, for logs. */
  get tag(): string {
    return leaseTag(this.req.key, this.family);
  }

  get address(): string {
    return this.addressOf(this.#reply);
  }

  protected get reply(): R {
    return this.#reply;
  }

  protected get nsPath(): string {
    return this.deps.flags.hostPrefix + this.req.netns;
  }

  protected persist(): void {
    this.deps.store.save({
      ...this.req,
      ...(this.family === 6 ? { family: 6 } : {}),
      ack: Buffer.from(this.encode(this.#reply)).toString("base64"),
      boundAt: this.#boundAt,
    });
  }

  #forget(): void {
    this.deps.store.remove(this.req.key, this.family);
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

  #bound(reply: R, how: string): void {
    this.#reply = reply;
    this.#boundAt = Date.now();
    this.persist();
    this.deps.log(`${this.tag}: ${how} ${this.addressOf(reply)} (lease ${this.times(reply).lease}s)`);
    this.afterBound();
  }

  /**
   * The exchange-level cancel test for a retry sequence that must end at `deadline`: the
   * exchange in flight is cut there too (so the interface goes down at expiry, not up to
   * 3 × `-timeout` later).
   */
  #until(deadline: number): () => boolean {
    return () => this.#cancelled() || Date.now() >= deadline;
  }

  /** Runs one attempt; a vanished link ends every retry. */
  async #attempt(fn: () => Promise<R>): Promise<R> {
    try {
      return this.#sameAddress(await fn());
    } catch (err) {
      if (err instanceof LinkGoneError) this.#gone = true;
      throw err;
    }
  }

  /**
   * A reply for another address than the one the container carries is not a renewal: the lease
   * for it is released at once and the sequence ends (the server will not hand ours back).
   */
  #sameAddress(reply: R): R {
    const mine = this.addressOf(this.#reply);
    const theirs = this.addressOf(reply);
    if (theirs === mine) return reply;
    this.#addressLost = true;
    let released = "released it";
    try {
      this.sendRelease(reply);
    } catch (err) {
      released = `could not release it: ${(err as Error).message}`;
    }
    throw new Error(`server offered ${theirs} instead of ${mine} (${released})`);
  }

  #retryUntil(deadline: number, attempt: (cancelled: () => boolean) => Promise<R>): Promise<R> {
    const cancelled = this.#until(deadline);
    return withRetries(() => this.#attempt(() => attempt(cancelled)), this.retry, deadline, cancelled, this.#sleep);
  }

  async #maintain(): Promise<string> {
    try {
      if (this.resumed && Date.now() >= this.#boundAt + this.times(this.#reply).lease * 1000) {
        // Expired while no daemon ran: the container still carries the address, so try to get
        // the same one back before giving up, for one `-resendtimeout`.
        this.deps.log(`${this.tag}: persisted lease on ${this.address} expired while the daemon was down; re-acquiring it`);
        try {
          const current = this.#reply;
          this.#bound(await this.#retryUntil(Date.now() + this.retry.resendTimeoutMs, (c) => this.rebindAttempt(current, c, true)), "re-acquired");
        } catch (err) {
          if (err instanceof Error && err.cause instanceof LinkGoneError) throw err.cause;
          if (this.#stopped) return "stopped";
          this.deps.log(`${this.tag}: re-acquiring failed: ${failureDetail(err)}`);
          return this.#expire();
        }
      }
      return await this.#renewLoop();
    } catch (err) {
      if (err instanceof LinkGoneError) {
        this.#forget();
        return `interface gone (${err.message}); lease forgotten`;
      }
      throw err;
    }
  }

  /** Lease expired (upstream HEAD): the interface is set down, the lease forgotten. */
  #expire(): string {
    linkDown(this.nsPath, this.req.ifName);
    this.#forget();
    return `lease on ${this.address} expired; ${this.req.ifName} set down`;
  }

  /** BOUND → RENEWING at T1 → REBINDING at T2 → expiry; throws LinkGoneError when the link vanishes. */
  async #renewLoop(): Promise<string> {
    for (;;) {
      const times = this.times(this.#reply);
      const t1 = this.#boundAt + times.t1 * 1000;
      const t2 = this.#boundAt + times.t2 * 1000;
      const expiry = this.#boundAt + times.lease * 1000;
      while (!this.#stopped && Date.now() < t1) await this.#sleepUntil(t1);
      if (this.#stopped) return "stopped";
      const current = this.#reply;
      if (Date.now() < t2 && !this.#addressLost) {
        try {
          this.#bound(await this.#retryUntil(t2, (c) => this.renewAttempt(current, c)), "renewed");
          this.deps.events?.renewal(true);
          continue;
        } catch (err) {
          if (err instanceof Error && err.cause instanceof LinkGoneError) throw err.cause;
          if (this.#stopped) return "stopped";
          this.deps.events?.renewal(false);
          this.deps.log(`${this.tag}: renew failed: ${failureDetail(err)}; rebinding`);
        }
      }
      if (Date.now() < expiry && !this.#addressLost) {
        try {
          this.#bound(await this.#retryUntil(expiry, (c) => this.rebindAttempt(current, c, false)), "rebound");
          this.deps.events?.renewal(true);
          continue;
        } catch (err) {
          if (err instanceof Error && err.cause instanceof LinkGoneError) throw err.cause;
          if (this.#stopped) return "stopped";
          this.deps.events?.failure("renew");
          this.deps.log(`${this.tag}: rebind failed: ${failureDetail(err)}`);
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

  /** DEL: stops maintenance, sends RELEASE (failures only logged), forgets the lease. */
  async release(): Promise<void> {
    await this.stop();
    try {
      this.sendRelease(this.#reply);
      this.deps.log(`${this.tag}: released ${this.address}`);
    } catch (err) {
      this.deps.events?.failure("release");
      this.deps.log(`${this.tag}: failed to release DHCP lease: ${(err as Error).message}`);
    }
    this.#forget();
  }
}

export { LinkGoneError };
