import { describe, expect, test } from "bun:test";
import { parseMessage as oracleParse } from "netlink/dist/rt/structs";
import { NLA_F_NESTED } from "./constants/netlink.ts";
import {
  NetlinkDecodeError,
  NlWriter,
  align4,
  attrMap,
  buildMessage,
  fromHex,
  parseAttrs,
  parseMessages,
  readString,
  readU16,
  readU32,
  readU8,
  setSeqPid,
  toHex,
} from "./codec.ts";
import { buildAddrAddRequest } from "./addr.ts";
import { buildRouteRequest } from "./route.ts";
import { RTM_NEWADDR, RTM_NEWROUTE } from "./constants/rtnetlink.ts";

describe("NlWriter", () => {
  test("scalar attributes are padded to 4 bytes but nla_len excludes padding", () => {
    const w = new NlWriter(4); // tiny initial size: forces growth
    w.attrU8(1, 0xab).attrU16(2, 0x1234).attrU32(3, 0xdeadbeef).attrString(4, "eth0").attrText(5, "veth");
    const b = w.toBytes();
    expect(toHex(b)).toBe(
      [
        "0500" + "0100" + "ab000000",
        "0600" + "0200" + "34120000",
        "0800" + "0300" + "efbeadde",
        "0900" + "0400" + "6574683000000000",
        "0800" + "0500" + "76657468",
      ].join(""),
    );
  });

  test("a nest's length covers its padded children", () => {
    const w = new NlWriter();
    w.nest(18, () => {
      w.attrText(1, "bridge");
      w.nest(2, () => w.attrU8(7, 1));
    });
    const b = w.toBytes();
    expect(readU16(b, 0)).toBe(b.byteLength);
    const outer = parseAttrs(b);
    expect(outer).toHaveLength(1);
    const inner = parseAttrs(outer[0]!.data);
    expect(inner.map((a) => a.type)).toEqual([1, 2]);
    expect(new TextDecoder().decode(inner[0]!.data)).toBe("bridge");
    expect(readU8(parseAttrs(inner[1]!.data)[0]!.data)).toBe(1);
  });

  test("NLA_F_NESTED is masked off on read and reported", () => {
    const w = new NlWriter();
    w.nest(12, () => w.attrU8(4, 1), NLA_F_NESTED);
    const [a] = parseAttrs(w.toBytes());
    expect(a!.type).toBe(12);
    expect(a!.nested).toBe(true);
  });

  test("buildMessage sets nlmsg_len to the padded length; setSeqPid fills seq/pid", () => {
    const m = buildMessage(16, 0x605, (w) => w.u8(1));
    expect(m.byteLength).toBe(20);
    expect(readU32(m, 0)).toBe(20);
    expect(readU16(m, 4)).toBe(16);
    expect(readU16(m, 6)).toBe(0x605);
    setSeqPid(m, 0x01020304, 77);
    expect(readU32(m, 8)).toBe(0x01020304);
    expect(readU32(m, 12)).toBe(77);
  });
});

describe("readers", () => {
  test("parseMessages splits a multi-message datagram and checks lengths", () => {
    const a = buildMessage(16, 2, (w) => w.u32(1));
    const b = buildMessage(3, 2, (w) => w.i32(0));
    const both = new Uint8Array([...a, ...b]);
    const msgs = parseMessages(both);
    expect(msgs.map((m) => [m.type, m.payload.byteLength])).toEqual([
      [16, 4],
      [3, 4],
    ]);
    const broken = both.slice();
    broken[0] = 200; // nlmsg_len beyond the buffer
    expect(() => parseMessages(broken)).toThrow(NetlinkDecodeError);
  });

  test("parseAttrs rejects a truncated attribute; attrMap keeps the first occurrence", () => {
    expect(() => parseAttrs(fromHex("0800010001"))).toThrow(NetlinkDecodeError);
    const w = new NlWriter();
    w.attrU32(1, 5).attrU32(1, 6);
    expect(readU32(attrMap(w.toBytes()).get(1)!)).toBe(5);
  });

  test("readString stops at NUL and accepts unterminated strings", () => {
    expect(readString(fromHex("6c6f00"))).toBe("lo");
    expect(readString(fromHex("76657468"))).toBe("veth");
  });

  test("short buffers throw instead of reading garbage", () => {
    expect(() => readU32(new Uint8Array(3))).toThrow(NetlinkDecodeError);
  });

  test("align4 and hex helpers", () => {
    expect([0, 1, 4, 5, 7, 8].map(align4)).toEqual([0, 4, 4, 8, 8, 8]);
    expect(toHex(fromHex("00 ff 10"))).toBe("00ff10");
    expect(() => fromHex("abc")).toThrow(NetlinkDecodeError);
  });
});

describe("independent decoder (npm netlink codec) agrees with our encoders", () => {
  test("RTM_NEWADDR", () => {
    const m = buildAddrAddRequest(3, { address: "10.1.2.3", prefixLen: 24 });
    const parsed = oracleParse(RTM_NEWADDR, Buffer.from(m.subarray(16))) as unknown as {
      data: { family: number; prefixlen: number; index: number };
      attrs: { local: Buffer; address: Buffer; broadcast: Buffer };
    };
    expect(parsed.data).toMatchObject({ family: 2, prefixlen: 24, index: 3 });
    expect([...parsed.attrs.local]).toEqual([10, 1, 2, 3]);
    expect([...parsed.attrs.address]).toEqual([10, 1, 2, 3]);
    expect([...parsed.attrs.broadcast]).toEqual([10, 1, 2, 255]);
  });

  test("RTM_NEWROUTE with metrics", () => {
    const m = buildRouteRequest(RTM_NEWROUTE, 0x605, {
      dst: { address: "10.9.0.0", prefixLen: 16 },
      gw: "10.1.2.1",
      oif: 3,
      mtu: 1400,
      advmss: 1360,
      priority: 10,
    });
    const parsed = oracleParse(RTM_NEWROUTE, Buffer.from(m.subarray(16))) as unknown as {
      data: Record<string, unknown>;
      attrs: { dst: Buffer; gateway: Buffer; oif: number; priority: number; metrics: { mtu: Buffer; advmss: Buffer } };
    };
    expect(parsed.data).toMatchObject({ family: 2, dstLen: 16, table: 254, protocol: "BOOT", scope: "UNIVERSE", type: "UNICAST" });
    expect([...parsed.attrs.dst]).toEqual([10, 9, 0, 0]);
    expect([...parsed.attrs.gateway]).toEqual([10, 1, 2, 1]);
    expect(parsed.attrs.oif).toBe(3);
    expect(parsed.attrs.priority).toBe(10);
    expect(readU32(new Uint8Array(parsed.attrs.metrics.mtu))).toBe(1400);
    expect(readU32(new Uint8Array(parsed.attrs.metrics.advmss))).toBe(1360);
  });
});
