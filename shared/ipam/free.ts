/**
 * Whether a range set can still serve an ADD (STATUS of host-local and cluster-local; upstream
 * host-local has none: its main.go says "FIXME Status"): some address must be neither reserved,
 * nor a skipped gateway, nor excluded. Counts instead of iterating, so a /8 or a /64 costs the same
 * as a /29.
 */
import { formatIP, type IPAddr } from "../ip/addr.ts";
import { allocatableCount, excludedSpan, formatRange, rangeContains } from "./range.ts";
import { rangeFor, type RangeSet } from "./range-set.ts";
import { reportIpamUsage } from "../telemetry/invocation.ts";

/** How many addresses of `set` can be handed out when nothing is reserved. */
export function allocatableInSet(set: RangeSet): bigint {
  let total = 0n;
  for (const r of set) {
    total += allocatableCount(r);
    const gw = r.gateway;
    if (gw !== undefined && rangeContains(r, gw) && excludedSpan(r, gw) === undefined) total--;
  }
  return total;
}

/** True when at least one address of `set` can still be allocated; `reserved` may hold any address. */
export function hasFreeAddress(set: RangeSet, reserved: Iterable<IPAddr>): boolean {
  const taken = new Set<string>();
  for (const ip of reserved) {
    const r = rangeFor(set, ip);
    if (r === undefined || excludedSpan(r, ip) !== undefined) continue;
    // The iterator skips a range's gateway only while inside that range's window.
    if (r.gateway !== undefined && ip.family === r.gateway.family && ip.value === r.gateway.value) continue;
    taken.add(formatIP(ip));
  }
  return BigInt(taken.size) < allocatableInSet(set);
}

/**
 * Reports to the invocation running (shared/telemetry/invocation.ts) how many addresses of each
 * range of `sets` the reserved addresses leave used and free: what host-local and cluster-local do
 * after ADD, DEL and GC, when the call records telemetry.
 */
export function reportRangeUsage(plugin: string, network: string, sets: readonly RangeSet[], reserved: Iterable<IPAddr>): void {
  for (const u of rangeUsage(sets, reserved)) reportIpamUsage({ plugin, network, ...u });
}

/** How many addresses of one range are reserved and how many can still be handed out. */
export interface RangeUsage {
  /** The range's subnet (`10.1.0.0/24`), or `start-end` when the network has two ranges in one subnet. */
  range: string;
  used: number;
  free: number;
}

/**
 * The usage of every range of `sets` given the addresses `reserved` (any addresses): what an
 * allocating IPAM plugin reports after ADD, DEL and GC (docs/observability.md, cni_ipam_addresses).
 */
export function rangeUsage(sets: readonly RangeSet[], reserved: Iterable<IPAddr>): RangeUsage[] {
  const ranges = sets.flat();
  const used = new Map<(typeof ranges)[number], Set<string>>(ranges.map((r) => [r, new Set()]));
  for (const ip of reserved) {
    const r = ranges.find((x) => rangeContains(x, ip));
    if (r === undefined || excludedSpan(r, ip) !== undefined) continue;
    if (r.gateway !== undefined && ip.family === r.gateway.family && ip.value === r.gateway.value) continue;
    used.get(r)!.add(formatIP(ip));
  }
  const subnets = ranges.map((r) => `${formatIP(r.subnet.ip)}/${r.subnet.prefixLen}`);
  return ranges.map((r, i) => {
    const taken = used.get(r)!.size;
    const gw = r.gateway;
    const gatewayHeld = gw !== undefined && rangeContains(r, gw) && excludedSpan(r, gw) === undefined ? 1n : 0n;
    const free = allocatableCount(r) - gatewayHeld - BigInt(taken);
    const shared = subnets.indexOf(subnets[i]!) !== i || subnets.lastIndexOf(subnets[i]!) !== i;
    return { range: shared ? formatRange(r) : subnets[i]!, used: taken, free: Number(free < 0n ? 0n : free) };
  });
}
