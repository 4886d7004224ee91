/**
 * STATUS for host-local (upstream has none: its main.go says "FIXME Status"): the plugin can serve ADD only
 * if every range set still has an address that is neither reserved nor a skipped gateway.
 * Counts instead of iterating, so a /8 or a /64 costs the same as a /29.
 */
import { formatIP } from "../../shared/ip/addr.ts";
import { rangeContains } from "./allocator/range.ts";
import { rangeSetContains, type RangeSet } from "./allocator/range-set.ts";
import type { StoredReservation } from "./store/store.ts";

/** True when at least one address of `set` can still be allocated. */
export function hasFreeAddress(set: RangeSet, reservations: readonly StoredReservation[]): boolean {
  let total = 0n;
  const unavailable = new Set<string>();
  for (const r of set) {
    total += r.rangeEnd.value - r.rangeStart.value + 1n;
    // The iterator skips a range's gateway only while inside that range's window.
    if (rangeContains(r, r.gateway)) unavailable.add(formatIP(r.gateway));
  }
  for (const res of reservations) {
    if (rangeSetContains(set, res.ip)) unavailable.add(formatIP(res.ip));
  }
  return BigInt(unavailable.size) < total;
}
