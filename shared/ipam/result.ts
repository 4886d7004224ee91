/**
 * The ADD of an allocating IPAM plugin (host-local, cluster-local) around its store: which
 * requested address goes to which range set, and the result (upstream host-local main.go): one
 * address per range set, the config's routes, and the DNS of `resolvConf`.
 */
import { CniError, InternalError, messageOf } from "../cni/errors.ts";
import type { Result } from "../cni/types.ts";
import { formatIP, type IPAddr } from "../ip/addr.ts";
import { formatCIDR } from "../ip/cidr.ts";
import type { AllocatedIP } from "./candidates.ts";
import { resultRoutes, type AllocatorConfig } from "./config.ts";
import { parseResolvConf } from "./dns.ts";
import { rangeSetContains } from "./range-set.ts";

export interface RequestPlan {
  /** Per range set (config order): the requested address it must hand out, if any. */
  wants: (IPAddr | undefined)[];
  /** Requested addresses no range set contains. */
  unmatched: IPAddr[];
}

/** Gives each range set the first requested address (in request order) it contains. */
export function planRequests(conf: AllocatorConfig): RequestPlan {
  const left = new Map<string, IPAddr>(conf.requestedIPs.map((ip) => [formatIP(ip), ip]));
  const wants = conf.rangeSets.map((set) => {
    for (const [text, ip] of left) {
      if (rangeSetContains(set, ip)) {
        left.delete(text);
        return ip;
      }
    }
    return undefined;
  });
  return { wants, unmatched: [...left.values()] };
}

/** A failure to allocate from range set `idx`, as upstream reports it (the cause's code kept, else 999). */
export function rangeSetFailure(idx: number, err: unknown): CniError {
  const msg = `failed to allocate for range ${idx}: ${messageOf(err)}`;
  return err instanceof CniError ? new CniError(err.code, msg, { cause: err }) : new InternalError(msg, { cause: err });
}

/** Upstream's error for requested addresses that no range set could serve. */
export function unmatchedError(unmatched: readonly IPAddr[]): InternalError {
  return new InternalError(`failed to allocate all requested IPs: ${unmatched.map(formatIP).join(" ")}`);
}

/**
 * The result without addresses: the DNS of `resolvConf` and the routes. Built before anything is
 * reserved, so that a bad resolv.conf or route reserves nothing.
 */
export function resultFrame(conf: AllocatorConfig): Result {
  const result: Result = {};
  if (conf.resolvConf !== undefined) result.dns = parseResolvConf(conf.resolvConf);
  const routes = resultRoutes(conf.routes);
  if (routes.length > 0) result.routes = routes;
  return result;
}

/** The frame with the allocated addresses, one per range set. */
export function withAddresses(frame: Result, allocated: readonly AllocatedIP[]): Result {
  const { routes, ...rest } = frame;
  const ips = allocated.map((got) => ({
    address: formatCIDR(got.address),
    ...(got.gateway === undefined ? {} : { gateway: formatIP(got.gateway) }),
  }));
  return { ...rest, ips, ...(routes === undefined ? {} : { routes }) };
}
