import { describe, expect, test } from "bun:test";
import IPCIDR from "ip-cidr";
import { formatIP, makeIP, parseIP, type IPAddr, type IPFamily } from "./addr.ts";
import {
  containsIP,
  formatCIDR,
  isNetworkAddress,
  lastAddress,
  maskBits,
  maskToPrefix,
  networkAddress,
  parseCIDR,
  parseCIDRDetailed,
  prefixSize,
} from "./cidr.ts";

function ip(s: string): IPAddr {
  const a = parseIP(s);
  if (a === null) throw new Error(`test setup: ${s} does not parse`);
  return a;
}

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

function randomAddr(next: () => number, family: IPFamily): IPAddr {
  if (family === 4) return makeIP(4, BigInt(next()));
  let v = 0n;
  for (let i = 0; i < 4; i++) v = (v << 32n) | BigInt(next());
  // Avoid the IPv4-mapped block, which Go (and we) treat as IPv4.
  if (v >> 32n === 0xffffn) v ^= 1n << 100n;
  return makeIP(6, v);
}

/** The oracle's idea of an address, as a bigint (ip-address parses independently of us). */
function oracleValue(text: string): bigint {
  return BigInt(IPCIDR.createAddress(text).bigInteger().toString());
}

describe("parseCIDR", () => {
  test("parseCIDR keeps host bits and accepts Go's forms", () => {
    expect(parseCIDR("10.1.2.3/24")).toEqual({ ip: ip("10.1.2.3"), prefixLen: 24 });
    expect(parseCIDR("fd00::5/120")).toEqual({ ip: ip("fd00::5"), prefixLen: 120 });
    expect(parseCIDR("0.0.0.0/0")).toEqual({ ip: ip("0.0.0.0"), prefixLen: 0 });
    expect(parseCIDR("10.0.0.0/024")).toEqual({ ip: ip("10.0.0.0"), prefixLen: 24 });
    expect(parseCIDR("::/128")).toEqual({ ip: ip("::"), prefixLen: 128 });
  });

  test("parseCIDR rejects invalid text", () => {
    for (const bad of [
      "10.0.0.0",
      "10.0.0.0/",
      "10.0.0.0/33",
      "10.0.0.0/-1",
      "10.0.0.0/+8",
      "10.0.0.0/8/8",
      "10.0.0.0/ 8",
      "fd00::/129",
      "fe80::1%eth0/64",
      "/24",
      "foo/24",
      "010.0.0.0/8",
    ]) {
      expect(parseCIDR(bad)).toBeNull();
    }
  });

  test("parseCIDRDetailed reports the 128-bit mask of an IPv4-mapped address", () => {
    expect(parseCIDRDetailed("::ffff:10.0.0.0/120")).toEqual({ ip: ip("10.0.0.0"), prefixLen: 120, maskWidth: 128 });
    expect(parseCIDR("::ffff:10.0.0.0/120")).toBeNull();
    expect(parseCIDRDetailed("10.0.0.0/8")?.maskWidth).toBe(32);
  });

  test("formatCIDR prints Go's IPNet text", () => {
    expect(formatCIDR({ ip: ip("10.1.2.3"), prefixLen: 8 })).toBe("10.1.2.3/8");
    expect(formatCIDR({ ip: ip("fd00:0::0"), prefixLen: 64 })).toBe("fd00::/64");
  });
});

describe("prefix math", () => {
  test("maskBits, networkAddress and lastAddress for known prefixes", () => {
    expect(maskBits(24, 4)).toBe(0xffffff00n);
    expect(maskBits(0, 4)).toBe(0n);
    expect(maskBits(128, 6)).toBe((1n << 128n) - 1n);
    expect(() => maskBits(33, 4)).toThrow(RangeError);
    expect(formatIP(networkAddress(ip("10.1.2.3"), 24))).toBe("10.1.2.0");
    expect(formatIP(lastAddress(ip("10.1.2.3"), 24))).toBe("10.1.2.255");
    expect(formatIP(lastAddress(ip("fd00::5"), 120))).toBe("fd00::ff");
    expect(formatIP(lastAddress(ip("0.0.0.0"), 0))).toBe("255.255.255.255");
    expect(prefixSize(29, 4)).toBe(8n);
    expect(isNetworkAddress({ ip: ip("10.0.0.0"), prefixLen: 8 })).toBe(true);
    expect(isNetworkAddress({ ip: ip("10.0.0.1"), prefixLen: 8 })).toBe(false);
  });

  test("containsIP never matches across families", () => {
    expect(containsIP(ip("0.0.0.0"), 0, ip("::1"))).toBe(false);
    expect(containsIP(ip("::"), 0, ip("10.0.0.1"))).toBe(false);
    expect(containsIP(ip("10.0.0.0"), 8, ip("::ffff:10.9.9.9"))).toBe(true);
  });

  for (const family of [4, 6] as const) {
    test(`network/last/contains agree with ip-cidr on 300 random IPv${family} prefixes`, () => {
      const next = rng(family === 4 ? 1234 : 5678);
      const width = family === 4 ? 32 : 128;
      for (let i = 0; i < 300; i++) {
        const addr = randomAddr(next, family);
        const prefixLen = next() % (width + 1);
        const text = formatCIDR({ ip: addr, prefixLen });
        const oracle = new IPCIDR(text);
        expect(networkAddress(addr, prefixLen).value).toBe(oracleValue(String(oracle.start())));
        expect(lastAddress(addr, prefixLen).value).toBe(oracleValue(String(oracle.end())));
        expect(parseCIDR(text)).toEqual({ ip: addr, prefixLen });

        // Membership: one address inside (random offset), one just outside when there is one.
        const size = prefixSize(prefixLen, family);
        const inside = makeIP(family, networkAddress(addr, prefixLen).value + (BigInt(next()) % size));
        expect(containsIP(addr, prefixLen, inside)).toBe(true);
        expect(oracle.contains(formatIP(inside))).toBe(true);
        const after = lastAddress(addr, prefixLen).value + 1n;
        if (after < 1n << BigInt(width)) {
          const outside = makeIP(family, after);
          expect(containsIP(addr, prefixLen, outside)).toBe(false);
          expect(oracle.contains(formatIP(outside))).toBe(false);
        }
      }
    });
  }
});

describe("maskToPrefix (Go IPMask.Size ones)", () => {
  test("contiguous masks of both lengths", () => {
    expect(maskToPrefix(new Uint8Array([255, 255, 255, 0]))).toBe(24);
    expect(maskToPrefix(new Uint8Array([255, 255, 255, 255]))).toBe(32);
    expect(maskToPrefix(new Uint8Array(4))).toBe(0);
    expect(maskToPrefix(new Uint8Array([...new Array(8).fill(255), ...new Array(8).fill(0)]))).toBe(64);
  });
  test("non-contiguous masks are refused", () => {
    expect(maskToPrefix(new Uint8Array([255, 0, 255, 0]))).toBeUndefined();
    expect(maskToPrefix(new Uint8Array([0b11110111, 0, 0, 0]))).toBeUndefined();
  });
});
