/**
 * A range set (`ipam.ranges[i]`): ranges of one family that together form one pool; host-local and
 * cluster-local allocate one address per range set. Mirrors upstream `backend/allocator/range_set.go`.
 */
import type { IPAddr, IPFamily } from "../ip/addr.ts";
import { canonicalizeRange, formatRange, rangeContains, rangesOverlap, RangeConfigError, type IPRange, type RangeInput } from "./range.ts";

export type RangeSet = readonly IPRange[];

/** Validates every range of a set and the set as a whole (upstream `RangeSet.Canonicalize`). */
export function canonicalizeRangeSet(inputs: readonly RangeInput[]): RangeSet {
  if (inputs.length === 0) throw new RangeConfigError("empty range set");
  const out: IPRange[] = [];
  for (const input of inputs) {
    const r = canonicalizeRange(input);
    if (out.length > 0 && out[0]!.rangeStart.family !== r.rangeStart.family) {
      throw new RangeConfigError("mixed address families");
    }
    out.push(r);
  }
  for (let i = 0; i < out.length; i++) {
    for (let j = i + 1; j < out.length; j++) {
      if (rangesOverlap(out[i]!, out[j]!)) {
        throw new RangeConfigError(`subnets ${formatRange(out[i]!)} and ${formatRange(out[j]!)} overlap`);
      }
    }
  }
  return out;
}

/** The family of a (validated, non-empty) set. */
export function rangeSetFamily(set: RangeSet): IPFamily {
  return set[0]!.rangeStart.family;
}

/** The range of the set that contains `ip`, if any (upstream `RangeSet.RangeFor`). */
export function rangeFor(set: RangeSet, ip: IPAddr): IPRange | undefined {
  return set.find((r) => rangeContains(r, ip));
}

export function rangeSetContains(set: RangeSet, ip: IPAddr): boolean {
  return rangeFor(set, ip) !== undefined;
}

/** True when any range of `a` overlaps any range of `b`. */
export function rangeSetsOverlap(a: RangeSet, b: RangeSet): boolean {
  return a.some((r) => b.some((r1) => rangesOverlap(r, r1)));
}

/** `start-end,start-end`, as upstream prints a set in messages. */
export function formatRangeSet(set: RangeSet): string {
  return set.map(formatRange).join(",");
}
