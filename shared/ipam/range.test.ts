/** Range defaults and validation (upstream range_test.go scenarios). */
import { describe, expect, test } from "bun:test";
import { formatIP, parseIP, type IPAddr } from "../ip/addr.ts";
import { parseCIDRDetailed, type ParsedCIDR } from "../ip/cidr.ts";
import {
  allocatableCount,
  canonicalizeRange,
  excludedSpan,
  formatRange,
  rangeContains,
  rangesOverlap,
  RangeConfigError,
  type IPRange,
  type RangeInput,
} from "./range.ts";

function ip(s: string): IPAddr {
  const a = parseIP(s);
  if (a === null) throw new Error(`bad test ip ${s}`);
  return a;
}

function net(s: string): ParsedCIDR {
  const c = parseCIDRDetailed(s);
  if (c === null) throw new Error(`bad test cidr ${s}`);
  return c;
}

function range(subnet: string, extra: { start?: string; end?: string; gw?: string; exclude?: string[] } = {}): IPRange {
  const input: RangeInput = { subnet: net(subnet), exclude: extra.exclude };
  if (extra.start) input.rangeStart = ip(extra.start);
  if (extra.end) input.rangeEnd = ip(extra.end);
  if (extra.gw) input.gateway = ip(extra.gw);
  return canonicalizeRange(input);
}

function text(r: IPRange): Record<string, string> {
  return {
    subnet: `${formatIP(r.subnet.ip)}/${r.subnet.prefixLen}`,
    rangeStart: formatIP(r.rangeStart),
    rangeEnd: formatIP(r.rangeEnd),
    gateway: r.gateway === undefined ? "none" : formatIP(r.gateway),
  };
}

function rangeError(subnet: string, extra: { start?: string; end?: string; exclude?: string[] } = {}): string {
  try {
    range(subnet, extra);
  } catch (err) {
    expect(err).toBeInstanceOf(RangeConfigError);
    return (err as Error).message;
  }
  throw new Error("expected a range error");
}

describe("canonicalizeRange", () => {
  test("range fills sane defaults for an IPv4 /24", () => {
    expect(text(range("192.0.2.0/24"))).toEqual({
      subnet: "192.0.2.0/24",
      rangeStart: "192.0.2.1",
      rangeEnd: "192.0.2.254",
      gateway: "192.0.2.1",
    });
  });

  test("range fills sane defaults for a smaller IPv4 subnet", () => {
    expect(text(range("192.0.2.0/25"))).toEqual({
      subnet: "192.0.2.0/25",
      rangeStart: "192.0.2.1",
      rangeEnd: "192.0.2.126",
      gateway: "192.0.2.1",
    });
    expect(text(range("10.0.0.0/30"))).toMatchObject({ rangeStart: "10.0.0.1", rangeEnd: "10.0.0.2" });
  });

  test("range fills IPv6 defaults: rangeEnd is the all-ones address", () => {
    expect(text(range("2001:db8:1::/64"))).toEqual({
      subnet: "2001:db8:1::/64",
      rangeStart: "2001:db8:1::1",
      rangeEnd: "2001:db8:1:0:ffff:ffff:ffff:ffff",
      gateway: "2001:db8:1::1",
    });
  });

  test("range keeps an explicit gateway without validating it", () => {
    expect(text(range("10.20.0.0/29", { gw: "10.20.0.6" })).gateway).toBe("10.20.0.6");
    expect(text(range("10.20.0.0/29", { gw: "10.99.0.1" })).gateway).toBe("10.99.0.1");
  });

  test("range handles 0.0.0.0/0 correctly (upstream prints ?01)", () => {
    expect(text(range("0.0.0.0/0"))).toMatchObject({ rangeStart: "0.0.0.1", rangeEnd: "255.255.255.254" });
  });

  test("range: point-to-point subnets (/31, /32, /127, /128; upstream refuses them, #908) use every address and have no default gateway", () => {
    expect(text(range("192.0.2.0/31"))).toEqual({ subnet: "192.0.2.0/31", rangeStart: "192.0.2.0", rangeEnd: "192.0.2.1", gateway: "none" });
    expect(text(range("192.0.2.7/32"))).toEqual({ subnet: "192.0.2.7/32", rangeStart: "192.0.2.7", rangeEnd: "192.0.2.7", gateway: "none" });
    expect(text(range("2001:db8::/127"))).toEqual({ subnet: "2001:db8::/127", rangeStart: "2001:db8::", rangeEnd: "2001:db8::1", gateway: "none" });
    expect(text(range("2001:db8::5/128"))).toMatchObject({ rangeStart: "2001:db8::5", rangeEnd: "2001:db8::5", gateway: "none" });
    // A configured gateway is kept (and skipped by the allocator), bounds are validated as usual.
    expect(text(range("192.0.2.0/31", { gw: "192.0.2.0" })).gateway).toBe("192.0.2.0");
    expect(text(range("192.0.2.0/31", { start: "192.0.2.1" })).rangeStart).toBe("192.0.2.1");
    expect(rangeError("192.0.2.1/31")).toBe("Network has host bits set. For a subnet mask of length 31 the network address is 192.0.2.0");
    expect(rangeError("192.0.2.0/31", { start: "192.0.2.2" })).toBe("RangeStart 192.0.2.2 not in network 192.0.2.0/31");
  });

  test("range exclude: addresses and prefixes become sorted, merged spans; invalid entries name `exclude`", () => {
    const spans = (r: IPRange) => r.exclude.map((sp) => `${sp.first}-${sp.last}`);
    const r = range("10.1.0.0/24", { exclude: ["10.1.0.16/28", "10.1.0.2", "10.1.0.32/28", "10.1.0.20"] });
    const base = ip("10.1.0.0").value;
    expect(spans(r)).toEqual([`${base + 2n}-${base + 2n}`, `${base + 16n}-${base + 47n}`]);
    expect(allocatableCount(r)).toBe(254n - 33n);
    expect(excludedSpan(r, ip("10.1.0.40"))).toEqual({ first: base + 16n, last: base + 47n });
    expect(excludedSpan(r, ip("10.1.0.48"))).toBeUndefined();
    expect(range("fd00::/64", { exclude: ["fd00::/80"] }).exclude).toHaveLength(1);
    expect(rangeError("10.1.0.0/24", { exclude: ["foo"] })).toBe('invalid exclude entry "foo": not an IP address or CIDR');
    expect(rangeError("10.1.0.0/24", { exclude: ["10.1.0.0/33"] })).toBe('invalid exclude entry "10.1.0.0/33": not an IP address or CIDR');
    expect(rangeError("10.1.0.0/24", { exclude: ["10.2.0.1"] })).toBe("invalid exclude entry 10.2.0.1: not inside of subnet 10.1.0.0/24");
    expect(rangeError("10.1.0.0/24", { exclude: ["10.1.0.0/23"] })).toBe("invalid exclude entry 10.1.0.0/23: not inside of subnet 10.1.0.0/24");
    expect(rangeError("10.1.0.0/24", { exclude: ["fd00::1"] })).toBe("invalid exclude entry fd00::1: not inside of subnet 10.1.0.0/24");
    expect(rangeError("10.1.0.0/24", { exclude: ["10.1.0.17/28"] })).toBe(
      "invalid exclude entry 10.1.0.17/28: host bits set (the network address is 10.1.0.16)",
    );
  });

  test("range rejects host bits in the subnet (v4 and v6)", () => {
    expect(rangeError("192.0.2.5/24")).toBe(
      "Network has host bits set. For a subnet mask of length 24 the network address is 192.0.2.0",
    );
    expect(rangeError("fd00::5/64")).toBe(
      "Network has host bits set. For a subnet mask of length 64 the network address is fd00::",
    );
  });

  test("range rejects an IPv4-mapped subnet with a 128-bit mask", () => {
    expect(rangeError("::ffff:10.0.0.0/120")).toBe("IPNet IP and Mask version mismatch");
  });

  test("range reports a missing subnet as upstream does", () => {
    expect(() => canonicalizeRange({})).toThrow("IP <nil> not v4 nor v6");
  });

  test("range rejects a rangeStart or rangeEnd outside the subnet", () => {
    expect(rangeError("10.0.0.0/24", { start: "10.0.1.50" })).toBe("RangeStart 10.0.1.50 not in network 10.0.0.0/24");
    expect(rangeError("10.0.0.0/24", { end: "10.0.1.50" })).toBe("RangeEnd 10.0.1.50 not in network 10.0.0.0/24");
    expect(rangeError("10.0.0.0/24", { end: "fd00::1" })).toBe("RangeEnd fd00::1 not in network 10.0.0.0/24");
    expect(rangeError("10.0.0.0/24", { start: "10.0.0.50", end: "10.0.0.40" })).toBe(
      "RangeStart 10.0.0.50 not in network 10.0.0.0/24",
    );
  });

  test("range rejects a rangeStart after the default rangeEnd (upstream allocates the broadcast)", () => {
    expect(rangeError("10.0.0.0/30", { start: "10.0.0.3" })).toBe("RangeStart 10.0.0.3 is after RangeEnd 10.0.0.2");
  });

  test("range parses all fields", () => {
    expect(text(range("10.1.2.0/24", { start: "10.1.2.9", end: "10.1.2.40", gw: "10.1.2.254" }))).toEqual({
      subnet: "10.1.2.0/24",
      rangeStart: "10.1.2.9",
      rangeEnd: "10.1.2.40",
      gateway: "10.1.2.254",
    });
    expect(formatRange(range("10.1.2.0/24", { start: "10.1.2.9", end: "10.1.2.40" }))).toBe("10.1.2.9-10.1.2.40");
  });
});

describe("rangeContains", () => {
  test("membership for IPv4", () => {
    const r = range("192.0.2.0/24", { start: "192.0.2.40", end: "192.0.2.50" });
    expect(rangeContains(r, ip("192.0.2.0"))).toBe(false);
    expect(rangeContains(r, ip("192.0.2.39"))).toBe(false);
    expect(rangeContains(r, ip("192.0.2.40"))).toBe(true);
    expect(rangeContains(r, ip("192.0.2.50"))).toBe(true);
    expect(rangeContains(r, ip("192.0.2.51"))).toBe(false);
    expect(rangeContains(r, ip("::ffff:192.0.2.45"))).toBe(true);
    expect(rangeContains(r, ip("2001:db8::1"))).toBe(false);
  });

  test("membership for IPv6", () => {
    const r = range("2001:db8:1::/64", { start: "2001:db8:1::40", end: "2001:db8:1::50" });
    expect(rangeContains(r, ip("2001:db8:1::39"))).toBe(false);
    expect(rangeContains(r, ip("2001:db8:1::40"))).toBe(true);
    expect(rangeContains(r, ip("2001:db8:1::50"))).toBe(true);
    expect(rangeContains(r, ip("2001:db8:1::51"))).toBe(false);
    expect(rangeContains(r, ip("192.0.2.45"))).toBe(false);
  });
});

describe("rangesOverlap", () => {
  const cases: [string, IPRange, IPRange, boolean][] = [
    ["non-overlapping", range("10.0.0.0/24"), range("10.1.0.0/24"), false],
    ["different families", range("10.0.0.0/24"), range("fd00::/120"), false],
    ["identical", range("10.0.0.0/24"), range("10.0.0.0/24"), true],
    ["containing", range("10.0.0.0/20"), range("10.0.1.0/24"), true],
    [
      "same subnet, disjoint windows",
      range("10.0.0.0/24", { start: "10.0.0.1", end: "10.0.0.100" }),
      range("10.0.0.0/24", { start: "10.0.0.101", end: "10.0.0.200" }),
      false,
    ],
    [
      "same subnet, overlapping windows",
      range("10.0.0.0/24", { start: "10.0.0.1", end: "10.0.0.110" }),
      range("10.0.0.0/24", { start: "10.0.0.100", end: "10.0.0.200" }),
      true,
    ],
  ];
  for (const [name, a, b, want] of cases) {
    test(`rangesOverlap: ${name}`, () => {
      expect(rangesOverlap(a, b)).toBe(want);
      expect(rangesOverlap(b, a)).toBe(want);
    });
  }
});
