/** Range-set validation and membership (upstream range_set_test.go scenarios). */
import { describe, expect, test } from "bun:test";
import { parseIP, type IPAddr } from "../ip/addr.ts";
import { parseCIDRDetailed } from "../ip/cidr.ts";
import { canonicalizeRangeSet, formatRangeSet, rangeFor, rangeSetContains, rangeSetFamily, rangeSetsOverlap } from "./range-set.ts";
import type { RangeInput } from "./range.ts";

function ip(s: string): IPAddr {
  return parseIP(s)!;
}

function r(subnet: string, start?: string, end?: string): RangeInput {
  const out: RangeInput = { subnet: parseCIDRDetailed(subnet)! };
  if (start) out.rangeStart = ip(start);
  if (end) out.rangeEnd = ip(end);
  return out;
}

describe("range sets", () => {
  test("range set membership looks at every range", () => {
    const s = canonicalizeRangeSet([r("192.168.0.0/24"), r("172.16.1.0/24")]);
    expect(rangeSetContains(s, ip("192.168.0.55"))).toBe(true);
    expect(rangeSetContains(s, ip("172.16.1.55"))).toBe(true);
    expect(rangeSetContains(s, ip("192.168.1.55"))).toBe(false);
    expect(rangeSetContains(s, ip("192.168.0.0"))).toBe(false);
    expect(rangeFor(s, ip("172.16.1.9"))?.subnet.prefixLen).toBe(24);
    expect(rangeSetFamily(s)).toBe(4);
    expect(formatRangeSet(s)).toBe("192.168.0.1-192.168.0.254,172.16.1.1-172.16.1.254");
  });

  test("range set rejects overlapping ranges inside the set", () => {
    expect(() => canonicalizeRangeSet([r("192.168.0.0/24"), r("192.168.0.0/16")])).toThrow(
      "subnets 192.168.0.1-192.168.0.254 and 192.168.0.1-192.168.255.254 overlap",
    );
  });

  test("range set rejects an empty set and mixed families", () => {
    expect(() => canonicalizeRangeSet([])).toThrow("empty range set");
    expect(() => canonicalizeRangeSet([r("10.0.0.0/24"), r("fd00::/64")])).toThrow("mixed address families");
  });

  test("range sets overlap when any of their ranges do", () => {
    const a = canonicalizeRangeSet([r("192.168.0.0/24"), r("172.16.1.0/24")]);
    const b = canonicalizeRangeSet([r("10.0.0.0/24"), r("172.16.1.0/24", "172.16.1.200")]);
    const c = canonicalizeRangeSet([r("10.1.0.0/24")]);
    expect(rangeSetsOverlap(a, b)).toBe(true);
    expect(rangeSetsOverlap(a, c)).toBe(false);
    expect(rangeSetsOverlap(c, canonicalizeRangeSet([r("fd00::/64")]))).toBe(false);
  });
});
