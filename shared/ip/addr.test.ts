import { describe, expect, test } from "bun:test";
import { Address6 } from "ip-address";
import {
  compareIP,
  formatIP,
  ipEqual,
  ipFamily,
  ipFromBytes,
  ipToBytes,
  isGlobalUnicast,
  makeIP,
  nextIP,
  parseIP,
  prevIP,
  type IPAddr,
} from "./addr.ts";

function ip(s: string): IPAddr {
  const a = parseIP(s);
  if (a === null) throw new Error(`test setup: ${s} does not parse`);
  return a;
}

/** Deterministic PRNG so a failure names a reproducible case. */
function rng(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

function randomV6(next: () => number): bigint {
  let v = 0n;
  for (let i = 0; i < 8; i++) {
    // Bias towards zero groups so compression paths are exercised.
    const g = next() % 3 === 0 ? 0 : next() & 0xffff;
    v = (v << 16n) | BigInt(g);
  }
  return v;
}

/** Uncompressed `x:x:x:x:x:x:x:x` text, built independently of formatIP. */
function fullV6(v: bigint): string {
  return v.toString(16).padStart(32, "0").match(/.{4}/g)!.join(":");
}

describe("parseIP", () => {
  test("parseIP accepts dotted IPv4", () => {
    expect(parseIP("10.1.2.3")).toEqual({ family: 4, value: 0x0a010203n });
    expect(parseIP("0.0.0.0")).toEqual({ family: 4, value: 0n });
    expect(parseIP("255.255.255.255")).toEqual({ family: 4, value: 0xffffffffn });
  });

  test("parseIP rejects what Go's net.ParseIP rejects", () => {
    for (const bad of [
      "",
      "1.2.3",
      "1.2.3.4.5",
      "256.1.1.1",
      "01.2.3.4",
      "1.2.3.04",
      "1.2.3.4 ",
      " 1.2.3.4",
      "1..2.3",
      "1.2.3.",
      "0x1.2.3.4",
      "1234",
      "1:2:3:4:5:6:7",
      "1:2:3:4:5:6:7:8:9",
      "1::2::3",
      ":1::",
      "1:",
      ":",
      ":::",
      "12345::",
      "g::",
      "fe80::1%eth0",
      "1:2:3:4:5:6:7:8::",
      "::1:2:3:4:5:6:7:8",
      "1:2:3:4:5:6:7:1.2.3.4",
      "::ffff:1.2.3",
      "::ffff:01.2.3.4",
      "1.2.3.4::",
      "10.0.0.1/24",
    ]) {
      expect(parseIP(bad)).toBeNull();
    }
  });

  test("parseIP accepts IPv6 forms including an IPv4 tail", () => {
    expect(parseIP("::")).toEqual({ family: 6, value: 0n });
    expect(parseIP("::1")).toEqual({ family: 6, value: 1n });
    expect(parseIP("1::")).toEqual({ family: 6, value: 1n << 112n });
    expect(parseIP("FD00::2")).toEqual({ family: 6, value: (0xfd00n << 112n) | 2n });
    expect(parseIP("1:2:3:4:5:6:7::")).toEqual(parseIP("1:2:3:4:5:6:7:0"));
    expect(parseIP("::1.2.3.4")).toEqual({ family: 6, value: 0x01020304n });
    expect(parseIP("64:ff9b::192.0.2.33")).toEqual({ family: 6, value: (0x64ff9bn << 96n) | 0xc0000221n });
    expect(parseIP("1:2:3:4:5:6:1.2.3.4")).toEqual(parseIP("1:2:3:4:5:6:102:304"));
  });

  test("parseIP treats IPv4-mapped IPv6 as IPv4 in any spelling (Go To4)", () => {
    expect(parseIP("::ffff:10.1.2.3")).toEqual({ family: 4, value: 0x0a010203n });
    expect(parseIP("::ffff:a01:203")).toEqual({ family: 4, value: 0x0a010203n });
    expect(parseIP("0:0:0:0:0:ffff:10.1.2.3")).toEqual({ family: 4, value: 0x0a010203n });
  });
});

describe("formatIP", () => {
  test("formatIP prints Go's text", () => {
    expect(formatIP(ip("10.1.2.3"))).toBe("10.1.2.3");
    expect(formatIP(ip("fd00:0:0:0:0:0:0:2"))).toBe("fd00::2");
    expect(formatIP(ip("2001:db8:0:0:1:0:0:1"))).toBe("2001:db8::1:0:0:1");
    expect(formatIP(ip("1:0:1:0:1:0:1:0"))).toBe("1:0:1:0:1:0:1:0");
    expect(formatIP(ip("::"))).toBe("::");
    expect(formatIP(ip("::1"))).toBe("::1");
    expect(formatIP(ip("::1.2.3.4"))).toBe("::102:304");
    expect(formatIP(ip("::ffff:1.2.3.4"))).toBe("1.2.3.4");
    expect(formatIP(ip("ABCD::EF"))).toBe("abcd::ef");
    expect(formatIP(ip("1:0:0:2:0:0:0:3"))).toBe("1:0:0:2::3");
  });

  test("formatIP and parseIP round-trip 500 random IPv6 values and match ip-address's RFC 5952 form", () => {
    const next = rng(42);
    for (let i = 0; i < 500; i++) {
      const v = randomV6(next);
      if (v >> 32n === 0xffffn) continue; // mapped: Go prints dotted IPv4
      const a = makeIP(6, v);
      const text = formatIP(a);
      expect(parseIP(text)).toEqual(a);
      const oracle = new Address6(fullV6(v));
      expect(text).toBe(oracle.correctForm());
      expect(BigInt(oracle.bigInteger().toString())).toBe(v);
    }
  });

  test("formatIP and parseIP round-trip 500 random IPv4 values", () => {
    const next = rng(7);
    for (let i = 0; i < 500; i++) {
      const v = BigInt(next());
      const a = makeIP(4, v);
      const text = formatIP(a);
      expect(parseIP(text)).toEqual(a);
      expect(parseIP(`::ffff:${text}`)).toEqual(a);
    }
  });
});

describe("arithmetic", () => {
  test("nextIP and prevIP step and stop at the family's edges", () => {
    expect(nextIP(ip("10.0.0.255"))).toEqual(ip("10.0.1.0"));
    expect(prevIP(ip("10.0.1.0"))).toEqual(ip("10.0.0.255"));
    expect(nextIP(ip("255.255.255.255"))).toBeNull();
    expect(prevIP(ip("0.0.0.0"))).toBeNull();
    expect(nextIP(ip("fd00::ffff"))).toEqual(ip("fd00::1:0"));
    expect(nextIP(ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))).toBeNull();
    expect(prevIP(ip("::"))).toBeNull();
  });

  test("compareIP orders IPv4 before IPv6, then numerically", () => {
    expect(compareIP(ip("10.0.0.1"), ip("10.0.0.2"))).toBe(-1);
    expect(compareIP(ip("10.0.0.2"), ip("10.0.0.1"))).toBe(1);
    expect(compareIP(ip("10.0.0.2"), ip("::ffff:10.0.0.2"))).toBe(0);
    expect(compareIP(ip("255.255.255.255"), ip("::"))).toBe(-1);
    expect(ipEqual(ip("fd00::1"), ip("fd00:0::1"))).toBe(true);
    expect(ipFamily(ip("fd00::1"))).toBe(6);
    expect(ipFamily(ip("::ffff:1.1.1.1"))).toBe(4);
  });

  test("ipToBytes and ipFromBytes are inverse and map ::ffff:0:0/96 to IPv4", () => {
    expect([...ipToBytes(ip("10.1.2.3"))]).toEqual([10, 1, 2, 3]);
    expect(ipFromBytes(ipToBytes(ip("fd00::1:2")))).toEqual(ip("fd00::1:2"));
    const mapped = new Uint8Array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1]);
    expect(ipFromBytes(mapped)).toEqual(ip("192.0.2.1"));
    expect(ipFromBytes(new Uint8Array(5))).toBeNull();
  });

  test("makeIP rejects values outside the family", () => {
    expect(() => makeIP(4, 1n << 32n)).toThrow(RangeError);
    expect(() => makeIP(6, -1n)).toThrow(RangeError);
  });
});

describe("isGlobalUnicast (Go IP.IsGlobalUnicast)", () => {
  const cases: [string, boolean][] = [
    ["10.1.2.3", true],
    ["240.0.0.1", true],
    ["0.0.0.0", false],
    ["255.255.255.255", false],
    ["127.0.0.1", false],
    ["224.0.0.1", false],
    ["239.255.255.255", false],
    ["169.254.1.1", false],
    ["169.253.1.1", true],
    ["2001:db8::1", true],
    ["::", false],
    ["::1", false],
    ["ff02::1", false],
    ["fe80::1", false],
    ["febf::1", false],
    ["fec0::1", true],
    ["::ffff:127.0.0.1", false],
  ];
  for (const [text, want] of cases) {
    test(`${text} → ${want}`, () => {
      const ip = parseIP(text);
      expect(ip).not.toBeNull();
      expect(isGlobalUnicast(ip!)).toBe(want);
    });
  }
});
