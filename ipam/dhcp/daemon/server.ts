/**
 * The daemon's request handling: ADD acquires (or returns the existing) lease for
 * `<containerID>/<network>/<ifname>`, CHECK only looks (read-only), DEL releases, GC releases the
 * network's leases of attachments no longer valid. Concurrent requests for one key share a single
 * acquisition; different keys never wait for each other. {@link daemonMethods} exposes them as the
 * net/rpc methods of ../rpc-protocol.ts.
 */
import { jsonKind } from "../../../shared/cni/decode.ts";
import { validAttachmentsOf } from "../../../shared/cni/netconf.ts";
import type { Result } from "../../../shared/cni/types.ts";
import { loadDhcpConfig } from "../config.ts";
import { EmptyType, METHOD_ALLOCATE, METHOD_CHECK, METHOD_GC, METHOD_RELEASE, ResultType, resultToGob, type RpcArgs } from "../rpc-protocol.ts";
import { failureDetail } from "./client.ts";
import { leaseTag, type Lease, type LeaseDeps } from "./lease.ts";
import { Lease4 } from "./lease4.ts";
import { Lease6 } from "./lease6.ts";
import type { Methods } from "./rpc-server.ts";

export class LeaseRequestError extends Error {
  override name = "LeaseRequestError";
}

/** The forwarded config as an object (DEL/CHECK/GC must work even when options are invalid). */
function configOf(stdinData: string): Record<string, unknown> {
  let conf: unknown;
  try {
    conf = JSON.parse(stdinData);
  } catch (err) {
    throw new LeaseRequestError(`error parsing netconf: ${(err as Error).message}`, { cause: err });
  }
  if (conf === null) return {}; // Go's json leaves the struct as it is
  if (typeof conf !== "object" || Array.isArray(conf)) {
    throw new LeaseRequestError(`error parsing netconf: json: cannot unmarshal ${jsonKind(conf)} into Go value of type main.NetConf`);
  }
  return conf as Record<string, unknown>;
}

function networkName(conf: Record<string, unknown>): string {
  const name = conf["name"];
  return typeof name === "string" ? name : "";
}

function keyOf(a: RpcArgs, conf: Record<string, unknown>): string {
  return `${a.containerID}/${networkName(conf)}/${a.ifName}`;
}

type AnyLease = Lease<unknown>;

/** The map key of one family's lease of an attachment. */
function slotOf(key: string, family: 4 | 6): string {
  return family === 6 ? `${key}#v6` : key;
}

/**
 * Merges the per-family results (v4 first): addresses, v4's routes, DNS servers and search domains
 * of both (deduplicated), the first domain, and the interface when one family set its MTU.
 */
export function mergeResults(results: readonly Result[]): Result {
  const out: Result = {};
  const ips = results.flatMap((r) => r.ips ?? []);
  const routes = results.flatMap((r) => r.routes ?? []);
  const interfaces = results.flatMap((r) => r.interfaces ?? []).slice(0, 1);
  if (interfaces.length > 0) out.interfaces = interfaces;
  if (ips.length > 0) out.ips = ips;
  if (routes.length > 0) out.routes = routes;
  const nameservers = [...new Set(results.flatMap((r) => r.dns?.nameservers ?? []))];
  const search = [...new Set(results.flatMap((r) => r.dns?.search ?? []))];
  const domain = results.map((r) => r.dns?.domain).find((d) => d !== undefined);
  if (nameservers.length > 0 || search.length > 0 || domain !== undefined) {
    out.dns = {};
    if (nameservers.length > 0) out.dns.nameservers = nameservers;
    if (domain !== undefined) out.dns.domain = domain;
    if (search.length > 0) out.dns.search = search;
  }
  return out;
}

export class LeaseManager {
  readonly #deps: LeaseDeps;
  /** Leases by slot ({@link slotOf}). */
  readonly #leases = new Map<string, AnyLease>();
  /** Acquisitions in flight, by slot; a DEL of the attachment calls them off (`abort`). */
  readonly #pending = new Map<string, { lease: Promise<AnyLease>; abort: AbortController }>();

  constructor(deps: LeaseDeps) {
    this.#deps = deps;
  }

  get size(): number {
    return this.#leases.size;
  }

  /** Adopts a resumed lease and starts its loop. */
  adopt(lease: AnyLease): void {
    this.#leases.set(slotOf(lease.req.key, lease.family), lease);
    this.#held();
    this.#startLoop(lease);
  }

  #held(): void {
    this.#deps.events?.held(this.#leases.size);
  }

  #startLoop(lease: AnyLease): void {
    const slot = slotOf(lease.req.key, lease.family);
    lease.start((why) => {
      if (this.#leases.get(slot) === lease && why !== "stopped") {
        this.#leases.delete(slot);
        this.#held();
        this.#deps.log(`${lease.tag}: ${why}`);
      }
    });
  }

  /**
   * DHCP.Allocate: the held leases, or new ones, for every family of `ipam.ipFamilies`. When one
   * family fails, the leases this call acquired for the others are released again.
   */
  async allocate(a: RpcArgs): Promise<Result> {
    const conf = configOf(a.stdinData);
    const families = loadDhcpConfig({ config: conf, args: a.args }).families;
    const key = keyOf(a, conf);
    const fresh = families.filter((f) => !this.#leases.has(slotOf(key, f)));
    const got = await Promise.allSettled(families.map((f) => this.#acquire(key, f, a)));
    const failed = got.find((g): g is PromiseRejectedResult => g.status === "rejected");
    if (failed !== undefined) {
      const acquiredNow = fresh.filter((f) => got[families.indexOf(f)]?.status === "fulfilled");
      await Promise.all(acquiredNow.map((f) => this.#releaseSlot(slotOf(key, f))));
      throw failed.reason;
    }
    return mergeResults(got.map((g) => (g as PromiseFulfilledResult<AnyLease>).value.result()));
  }

  /** DHCP.Check: the held leases of every configured family; nothing is sent to the server. */
  async check(a: RpcArgs): Promise<Result> {
    const conf = configOf(a.stdinData);
    const key = keyOf(a, conf);
    const results: Result[] = [];
    for (const f of loadDhcpConfig({ config: conf, args: a.args }).families) {
      const slot = slotOf(key, f);
      const lease = this.#leases.get(slot) ?? (await this.#pending.get(slot)?.lease.catch(() => undefined));
      if (lease === undefined) throw new LeaseRequestError(`no DHCP${f === 6 ? "v6" : ""} lease held for ${JSON.stringify(key)}`);
      results.push(lease.result());
    }
    return mergeResults(results);
  }

  /** DHCP.GC: releases the network's leases whose (containerID, ifname) is not a valid attachment. */
  async gc(a: RpcArgs): Promise<void> {
    const conf = configOf(a.stdinData);
    const valid = validAttachmentsOf(conf);
    if (valid === undefined) throw new LeaseRequestError("GC needs a well-formed cni.dev/valid-attachments (or cni.dev/attachments) list");
    const network = networkName(conf);
    const keep = new Set(valid.map((v) => `${v.containerID}/${network}/${v.ifName}`));
    // Acquisitions in flight are left alone: the runtime lists every attachment it has not deleted.
    const stale = [...this.#leases.values()].filter((l) => l.req.key === `${l.req.containerID}/${network}/${l.req.ifName}` && !keep.has(l.req.key));
    for (const l of stale) this.#deps.log(`${l.tag}: not a valid attachment; releasing (GC)`);
    await Promise.all(stale.map((l) => this.#releaseSlot(slotOf(l.req.key, l.family))));
  }

  async #acquire(key: string, family: 4 | 6, a: RpcArgs): Promise<AnyLease> {
    const slot = slotOf(key, family);
    const have = this.#leases.get(slot);
    if (have !== undefined) return have;
    const pending = this.#pending.get(slot);
    if (pending !== undefined) return pending.lease;
    const req = { key, containerID: a.containerID, netns: a.netns, ifName: a.ifName, cniArgs: a.args, stdinData: a.stdinData };
    const abort = new AbortController();
    const p: Promise<AnyLease> = family === 6 ? Lease6.acquire(req, this.#deps, abort.signal) : Lease4.acquire(req, this.#deps, abort.signal);
    this.#pending.set(slot, { lease: p, abort });
    try {
      const lease = await p;
      this.#leases.set(slot, lease);
      this.#held();
      this.#startLoop(lease);
      return lease;
    } catch (err) {
      this.#deps.events?.failure("acquire");
      // The caller gets upstream's text (`no more tries`); the log keeps why.
      this.#deps.log(`${leaseTag(key, family)}: no lease: ${failureDetail(err)}`);
      throw err;
    } finally {
      this.#pending.delete(slot);
    }
  }

  /** DHCP.Release: releases the caller's leases (both families); ones not held succeed. */
  async releaseFor(a: RpcArgs): Promise<void> {
    const key = keyOf(a, configOf(a.stdinData));
    await Promise.all([this.#releaseSlot(slotOf(key, 4)), this.#releaseSlot(slotOf(key, 6))]);
  }

  /**
   * Releases one slot's lease; an unknown slot succeeds (and its record, if any, is dropped). An
   * acquisition still in flight for it (its ADD's caller gave up: a DHCP server that never
   * answers keeps it retrying for minutes) is called off first, so the DEL never waits it out.
   */
  async #releaseSlot(slot: string): Promise<void> {
    const pending = this.#pending.get(slot);
    if (pending !== undefined) {
      pending.abort.abort();
      await pending.lease.catch(() => undefined);
    }
    const lease = this.#leases.get(slot);
    if (lease === undefined) {
      const v6 = slot.endsWith("#v6");
      this.#deps.store.remove(v6 ? slot.slice(0, -3) : slot, v6 ? 6 : 4);
      return;
    }
    this.#leases.delete(slot);
    this.#held();
    await lease.release();
  }

  /** Daemon shutdown: stop every loop, release nothing, keep the records. */
  async stopAll(): Promise<void> {
    const all = [...this.#leases.values()];
    this.#leases.clear();
    this.#held();
    await Promise.all(all.map((l) => l.stop()));
  }
}

/** The daemon's net/rpc methods (../rpc-protocol.ts). */
export function daemonMethods(m: LeaseManager): Methods {
  const empty = { type: EmptyType, value: {} };
  return {
    [METHOD_ALLOCATE]: async (a) => ({ type: ResultType, value: resultToGob(await m.allocate(a)) }),
    [METHOD_CHECK]: async (a) => ({ type: ResultType, value: resultToGob(await m.check(a)) }),
    [METHOD_RELEASE]: async (a) => {
      await m.releaseFor(a);
      return empty;
    },
    [METHOD_GC]: async (a) => {
      await m.gc(a);
      return empty;
    },
  };
}
