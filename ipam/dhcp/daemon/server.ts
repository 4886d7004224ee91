/**
 * The daemon's request handling: ADD acquires (or returns the existing) lease for
 * `<containerID>/<network>/<ifname>`, CHECK only looks (read-only), DEL releases, GC releases the
 * network's leases of attachments no longer valid. Concurrent requests for one key share a single
 * acquisition; different keys never wait for each other. {@link daemonMethods} exposes them as the
 * net/rpc methods of ../rpc-protocol.ts.
 */
import { validAttachmentsOf } from "../../../shared/cni/netconf.ts";
import type { Result } from "../../../shared/cni/types.ts";
import { loadDhcpConfig } from "../config.ts";
import { EmptyType, METHOD_ALLOCATE, METHOD_CHECK, METHOD_GC, METHOD_RELEASE, ResultType, resultToGob, type RpcArgs } from "../rpc-protocol.ts";
import { Lease, type LeaseDeps } from "./lease.ts";
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
  if (typeof conf !== "object" || conf === null || Array.isArray(conf)) throw new LeaseRequestError("error parsing netconf: not a JSON object");
  return conf as Record<string, unknown>;
}

function networkName(conf: Record<string, unknown>): string {
  const name = conf["name"];
  return typeof name === "string" ? name : "";
}

function keyOf(a: RpcArgs, conf: Record<string, unknown>): string {
  if (a.ifName === "") throw new LeaseRequestError("CNI_IFNAME is empty");
  return `${a.containerID}/${networkName(conf)}/${a.ifName}`;
}

export class LeaseManager {
  readonly #deps: LeaseDeps;
  readonly #leases = new Map<string, Lease>();
  readonly #pending = new Map<string, Promise<Lease>>();

  constructor(deps: LeaseDeps) {
    this.#deps = deps;
  }

  get size(): number {
    return this.#leases.size;
  }

  /** Adopts a resumed lease and starts its loop. */
  adopt(lease: Lease): void {
    this.#leases.set(lease.req.key, lease);
    this.#startLoop(lease);
  }

  #startLoop(lease: Lease): void {
    lease.start((why) => {
      if (this.#leases.get(lease.req.key) === lease && why !== "stopped") {
        this.#leases.delete(lease.req.key);
        this.#deps.log(`${lease.req.key}: ${why}`);
      }
    });
  }

  /** DHCP.Allocate: the held lease, or a new one. */
  async allocate(a: RpcArgs): Promise<Result> {
    const conf = configOf(a.stdinData);
    loadDhcpConfig(conf, a.args);
    if (!a.netns.startsWith("/")) throw new LeaseRequestError(`netns path ${JSON.stringify(a.netns)} is not absolute`);
    const lease = await this.#acquire(keyOf(a, conf), a);
    return lease.result();
  }

  /** DHCP.Check: the held lease; nothing is sent to the server. */
  async check(a: RpcArgs): Promise<Result> {
    const key = keyOf(a, configOf(a.stdinData));
    const lease = this.#leases.get(key) ?? (await this.#pending.get(key));
    if (lease === undefined) throw new LeaseRequestError(`no DHCP lease held for ${JSON.stringify(key)}`);
    return lease.result();
  }

  /** DHCP.GC: releases the network's leases whose (containerID, ifname) is not a valid attachment. */
  async gc(a: RpcArgs): Promise<void> {
    const conf = configOf(a.stdinData);
    const valid = validAttachmentsOf(conf);
    if (valid === undefined) throw new LeaseRequestError("GC needs a well-formed cni.dev/valid-attachments list");
    const network = networkName(conf);
    const keep = new Set(valid.map((v) => `${v.containerID}/${network}/${v.ifName}`));
    // Acquisitions in flight are left alone: the runtime lists every attachment it has not deleted.
    const stale = [...this.#leases.values()]
      .map((l) => l.req)
      .filter((r) => r.key === `${r.containerID}/${network}/${r.ifName}` && !keep.has(r.key))
      .map((r) => r.key);
    for (const key of stale) this.#deps.log(`${key}: not a valid attachment; releasing (GC)`);
    await Promise.all(stale.map((key) => this.release(key)));
  }

  async #acquire(key: string, a: RpcArgs): Promise<Lease> {
    const have = this.#leases.get(key);
    if (have !== undefined) return have;
    const pending = this.#pending.get(key);
    if (pending !== undefined) return pending;
    const p = Lease.acquire(
      { key, containerID: a.containerID, netns: a.netns, ifName: a.ifName, cniArgs: a.args, stdinData: a.stdinData },
      this.#deps,
    );
    this.#pending.set(key, p);
    try {
      const lease = await p;
      this.#leases.set(key, lease);
      this.#startLoop(lease);
      return lease;
    } finally {
      this.#pending.delete(key);
    }
  }

  /** DHCP.Release: releases the caller's lease; one not held succeeds. */
  releaseFor(a: RpcArgs): Promise<void> {
    return this.release(keyOf(a, configOf(a.stdinData)));
  }

  /** Releases the lease for `key`; unknown keys succeed. */
  async release(key: string): Promise<void> {
    const pending = this.#pending.get(key);
    if (pending !== undefined) await pending.catch(() => undefined);
    const lease = this.#leases.get(key);
    if (lease === undefined) {
      this.#deps.store.remove(key);
      return;
    }
    this.#leases.delete(key);
    await lease.release();
  }

  /** Daemon shutdown: stop every loop, release nothing, keep the records. */
  async stopAll(): Promise<void> {
    const all = [...this.#leases.values()];
    this.#leases.clear();
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
