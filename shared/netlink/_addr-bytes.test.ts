import { describe, expect, test } from "bun:test";
import { AddressFormatError, bytesToIp, bytesToMac, familyOf, ipToBytes, ipv4Broadcast, macToBytes } from "./_addr-bytes.ts";

describe("IP text <-> bytes", () => {
  test.each([
    ["10.1.2.3", [10, 1, 2, 3]],
    ["0.0.0.0", [0, 0, 0, 0]],
    ["255.255.255.255", [255, 255, 255, 255]],
  ])("IPv4 %s", (text, bytes) => {
    expect([...ipToBytes(text)]).toEqual(bytes);
    expect(bytesToIp(Uint8Array.from(bytes))).toBe(text);
  });

  test.each([
    ["::", "::"],
    ["::1", "::1"],
    ["fd00::2", "fd00::2"],
    ["FD00:0:0:0:0:0:0:2", "fd00::2"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"],
    ["fe80::ff:fe00:a", "fe80::ff:fe00:a"],
    ["1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"],
    ["::ffff:10.1.2.3", "::ffff:a01:203"],
    ["::10.1.2.3", "::a01:203"],
    ["1:2:3:4:5:6:10.1.2.3", "1:2:3:4:5:6:a01:203"],
  ])("IPv6 %s formats as %s (RFC 5952)", (text, canonical) => {
    const b = ipToBytes(text);
    expect(b.byteLength).toBe(16);
    expect(bytesToIp(b)).toBe(canonical);
    expect(bytesToIp(ipToBytes(canonical))).toBe(canonical);
  });

  test.each(["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1::2::3", "12345::", "::g", "1:2:3:4:5:6:7:8:9", "fe80::1%eth0", "1:2:3:4:5:6:7:8::"])(
    "rejects %p",
    (text) => {
      expect(() => ipToBytes(text)).toThrow(AddressFormatError);
    },
  );

  test("family detection and an explicit family mismatch", () => {
    expect(familyOf("10.0.0.1")).toBe(4);
    expect(familyOf("::1")).toBe(6);
    expect(() => ipToBytes("10.0.0.1", 6)).toThrow(AddressFormatError);
  });

  test("IPv4 broadcast by prefix", () => {
    expect(bytesToIp(ipv4Broadcast(ipToBytes("10.1.2.3"), 24))).toBe("10.1.2.255");
    expect(bytesToIp(ipv4Broadcast(ipToBytes("10.1.2.3"), 20))).toBe("10.1.15.255");
    expect(bytesToIp(ipv4Broadcast(ipToBytes("10.1.2.3"), 0))).toBe("255.255.255.255");
    expect(bytesToIp(ipv4Broadcast(ipToBytes("10.1.2.3"), 32))).toBe("10.1.2.3");
  });
});

describe("MAC text <-> bytes", () => {
  test("round trip is lower-case colon form", () => {
    expect([...macToBytes("02:AB:cd:00:00:01")]).toEqual([2, 0xab, 0xcd, 0, 0, 1]);
    expect(bytesToMac(macToBytes("02-ab-cd-00-00-01"))).toBe("02:ab:cd:00:00:01");
  });
  test("hardware addresses of other lengths are kept as given", () => {
    expect(bytesToMac(macToBytes("02:ab"))).toBe("02:ab");
  });
  test.each(["", "02", "zz:00:00:00:00:00", "2:ab:cd:00:00:01"])("rejects %p", (mac) => {
    expect(() => macToBytes(mac)).toThrow(AddressFormatError);
  });
});
