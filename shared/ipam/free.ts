/**
 * Whether a range set can still serve an ADD (STATUS of host-local and cluster-local; upstream
 * host-local has none: its main.go says "FIXME Status"): some address must be neither reserved,
 * nor a skipped gateway, nor excluded. Counts instead of iterating, so a /8 or a /64 costs the same
 * as a /29.
 */
import { formatIP, type IPAddr } from "../ip/addr.ts";
import { allocatableCount, excludedSpan, rangeContains } from "./range.ts";
import { rangeFor, type RangeSet } from "./range-set.ts";

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
