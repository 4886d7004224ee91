/** Test support for the allocator tests: addresses and range sets from short specs. */
import { formatIP, parseIP, type IPAddr } from "../ip/addr.ts";
import { parseCIDRDetailed } from "../ip/cidr.ts";
import { iterateCandidates } from "./candidates.ts";
import { canonicalizeRangeSet, type RangeSet } from "./range-set.ts";
import type { RangeInput } from "./range.ts";

/** A test address (throws on a typo). */
export function ip(s: string): IPAddr {
  const a = parseIP(s);
  if (a === null) throw new Error(`bad test ip ${s}`);
  return a;
}

export interface RangeSpec {
  subnet: string;
  start?: string;
  end?: string;
  gw?: string;
  exclude?: string[];
}

/** A validated range set of the given ranges. */
export function rangeSet(...specs: RangeSpec[]): RangeSet {
  return canonicalizeRangeSet(
    specs.map((s) => {
      const r: RangeInput = { subnet: parseCIDRDetailed(s.subnet)! };
      if (s.start) r.rangeStart = ip(s.start);
      if (s.end) r.rangeEnd = ip(s.end);
      if (s.gw) r.gateway = ip(s.gw);
      if (s.exclude) r.exclude = s.exclude;
      return r;
    }),
  );
}

/** The candidates of `s` after `last`, as text. */
export function candidateOrder(s: RangeSet, last: string | null): string[] {
  return [...iterateCandidates(s, last === null ? null : ip(last))].map((c) => formatIP(c.ip));
}
