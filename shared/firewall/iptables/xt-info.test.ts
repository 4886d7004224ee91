/**
 * The x_tables blobs nft-rules.ts hands to xt-info.ts beyond its kernel fixtures (nft-rules.test.ts):
 * fields it does not read make the rule unread, never misread.
 */
import { describe, expect, test } from "bun:test";
import { addrtypeArgs, xtTargetArgs } from "./xt-info.ts";

/** struct xt_addrtype_info_v1 in host order. */
function addrtype(source: number, dest: number, flags: number): Uint8Array {
  const b = new Uint8Array(8);
  const v = new DataView(b.buffer);
  v.setUint16(0, source, true);
  v.setUint16(2, dest, true);
  v.setUint32(4, flags, true);
  return b;
}

describe("xt-info", () => {
  test("addrtype: both directions, inversions and interface limits in libxt_addrtype's order", () => {
    expect(addrtypeArgs(addrtype(0b10, 0b100, 0x1 | 0x8))).toEqual(["-m", "addrtype", "!", "--src-type", "UNICAST", "--dst-type", "LOCAL", "--limit-iface-out"]);
    expect(addrtypeArgs(addrtype(0, 0b1000_0000_0000, 0))).toEqual(["-m", "addrtype", "--dst-type", "XRESOLVE"]);
  });

  test("addrtype: a type past XRESOLVE, an unknown flag or another size is not read", () => {
    expect(addrtypeArgs(addrtype(0, 1 << 12, 0))).toBeUndefined();
    expect(addrtypeArgs(addrtype(0, 0b100, 0x10))).toBeUndefined();
    expect(addrtypeArgs(new Uint8Array(12))).toBeUndefined();
  });

  test("targets: MARK rev 2 and MASQUERADE rev 0 without options; anything else is not read", () => {
    const mark = new Uint8Array(8);
    new DataView(mark.buffer).setUint32(0, 0x2000, true);
    new DataView(mark.buffer).setUint32(4, 0xffffffff, true);
    expect(xtTargetArgs(4, "MARK", 2, mark)).toEqual(["-j", "MARK", "--set-xmark", "0x2000/0xffffffff"]);
    expect(xtTargetArgs(4, "MARK", 1, mark)).toBeUndefined();
    const masq = new Uint8Array(24);
    masq[0] = 1;
    expect(xtTargetArgs(4, "MASQUERADE", 0, masq)).toEqual(["-j", "MASQUERADE"]);
    expect(xtTargetArgs(6, "MASQUERADE", 0, masq)).toBeUndefined();
    const ports = masq.slice();
    ports[4] = 2; // NF_NAT_RANGE_PROTO_SPECIFIED
    expect(xtTargetArgs(4, "MASQUERADE", 0, ports)).toBeUndefined();
    expect(xtTargetArgs(4, "SNAT", 0, masq)).toBeUndefined();
  });
});
