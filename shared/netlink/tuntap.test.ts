import { describe, expect, test } from "bun:test";
import { IFF_MULTI_QUEUE, IFF_NO_PI, IFF_TAP, IFF_VNET_HDR } from "./constants/if-tun.ts";
import { buildTapIfreq, tapFlags } from "./tuntap.ts";

describe("tap ifreq", () => {
  test("name then ifr_flags at offset 16 (little-endian short), 40 bytes", () => {
    const ifr = buildTapIfreq({ name: "tap0", multiQueue: true });
    expect(ifr.byteLength).toBe(40);
    expect(new TextDecoder().decode(ifr.subarray(0, 4))).toBe("tap0");
    expect(ifr[4]).toBe(0);
    expect(new DataView(ifr.buffer).getUint16(16, true)).toBe(IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE);
  });
  test("flags: always TAP without PI; multi-queue and vnet_hdr on request", () => {
    expect(tapFlags({ name: "t" })).toBe(IFF_TAP | IFF_NO_PI);
    expect(tapFlags({ name: "t", vnetHdr: true })).toBe(IFF_TAP | IFF_NO_PI | IFF_VNET_HDR);
  });
  test("names must fit IFNAMSIZ", () => {
    expect(() => buildTapIfreq({ name: "" })).toThrow(RangeError);
    expect(() => buildTapIfreq({ name: "a".repeat(16) })).toThrow(RangeError);
    expect(buildTapIfreq({ name: "a".repeat(15) })[14]).toBe(97);
  });
});
