import { expect, test } from "bun:test";
import { parseIP, type IPAddr } from "../ip/addr.ts";
import { parseCIDRDetailed } from "../ip/cidr.ts";
import { allocatableInSet, rangeUsage } from "./free.ts";
import { canonicalizeRangeSet } from "./range-set.ts";
import type { RangeInput } from "./range.ts";

const ip = (s: string): IPAddr => parseIP(s)!;

function r(subnet: string, extra: Partial<RangeInput> = {}): RangeInput {
  return { subnet: parseCIDRDetailed(subnet)!, ...extra };
}

test("rangeUsage: a /24 hands out 253 (network, broadcast and gateway never); used are the reservations inside", () => {
  const sets = [canonicalizeRangeSet([r("10.1.0.0/24")])];
  expect(allocatableInSet(sets[0]!)).toBe(253n);
  expect(rangeUsage(sets, [])).toEqual([{ range: "10.1.0.0/24", used: 0, free: 253 }]);
  // The gateway, an address outside, and a duplicate are not reservations of the range.
  const reserved = ["10.1.0.2", "10.1.0.3", "10.1.0.3", "10.1.0.1", "10.9.0.5"].map(ip);
  expect(rangeUsage(sets, reserved)).toEqual([{ range: "10.1.0.0/24", used: 2, free: 251 }]);
});

test("rangeUsage: every range of every set; ranges sharing a subnet are named start-end; excluded addresses are not free", () => {
  const sets = [
    canonicalizeRangeSet([
      r("10.2.0.0/24", { rangeStart: ip("10.2.0.10"), rangeEnd: ip("10.2.0.19") }),
      r("10.2.0.0/24", { rangeStart: ip("10.2.0.100"), rangeEnd: ip("10.2.0.109") }),
    ]),
    canonicalizeRangeSet([r("fd00::/120", { exclude: ["fd00::10/126"] })]),
  ];
  const usage = rangeUsage(sets, ["10.2.0.11", "10.2.0.100", "10.2.0.101", "fd00::5"].map(ip));
  expect(usage).toEqual([
    { range: "10.2.0.10-10.2.0.19", used: 1, free: 9 },
    { range: "10.2.0.100-10.2.0.109", used: 2, free: 8 },
    // fd00::1-fd00::ff minus fd00::1 (the gateway) and the 4 excluded: 250, one used.
    { range: "fd00::/120", used: 1, free: 249 },
  ]);
});
