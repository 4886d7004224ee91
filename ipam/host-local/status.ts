/**
 * STATUS for host-local (upstream has none: its main.go says "FIXME Status"): the plugin can serve ADD only
 * if every range set still has an address that is neither reserved, nor a skipped gateway, nor
 * excluded. Counts instead of iterating, so a /8 or a /64 costs the same as a /29.
 */
import { formatIP } from "../../shared/ip/addr.ts";
import { allocatableCount, excludedSpan, rangeContains } from "./allocator/range.ts";
import { rangeFor, type RangeSet } from "./allocator/range-set.ts";
import type { StoredReservation } from "./store/store.ts";

/** True when at least one address of `set` can still be allocated. */
export function hasFreeAddress(set: RangeSet, reservations: readonly StoredReservation[]): boolean {
  let total = 0n;
  const unavailable = new Set<string>();
  for (const r of set) {
    total += allocatableCount(r);
    // The iterator skips a range's gateway only while inside that range's window.
    const gw = r.gateway;
    if (gw !== undefined && rangeContains(r, gw) && excludedSpan(r, gw) === undefined) unavailable.add(formatIP(gw));
  }
  for (const res of reservations) {
    const r = rangeFor(set, res.ip);
    if (r !== undefined && excludedSpan(r, res.ip) === undefined) unavailable.add(formatIP(res.ip));
  }
  return BigInt(unavailable.size) < total;
}
