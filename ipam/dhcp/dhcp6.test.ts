import { describe, expect, test } from "bun:test";
import { duidFor, iaidFor, leasedAddress } from "./daemon/client6.ts";
import { leaseTimes6 } from "./daemon/lease6.ts";
import { mergeResults } from "./daemon/server.ts";
import { encodeDomainList } from "./domain-list.ts";
import {
  OPTION_CLIENTID,
  OPTION_DNS_SERVERS,
  OPTION_DOMAIN_LIST,
  OPTION_IA_NA,
  OPTION_IAADDR,
  OPTION_SERVERID,
  OPTION_STATUS_CODE,
  REPLY,
  decodeMessage6,
  dns6,
  encodeMessage6,
  findIaNa,
  iaNaOption,
  messageStatus,
  type Dhcp6Message,
} from "./packet6.ts";

const u32 = (n: number): number[] => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const opt = (code: number, value: number[]): number[] => [code >> 8, code & 0xff, value.length >> 8, value.length & 0xff, ...value];
const ADDR = [0xfd, 0, 0, 0x77, ...Array(10).fill(0), 0x01, 0x23];

/** A REPLY as dnsmasq sends it: IA_NA(iaid, T1, T2, IAADDR(addr, preferred, valid), status), DNS options. */
function reply(iaid: number, t1: number, t2: number, preferred: number, valid: number, extra: number[] = []): Dhcp6Message {
  const iaaddr = opt(OPTION_IAADDR, [...ADDR, ...u32(preferred), ...u32(valid)]);
  const ia = opt(OPTION_IA_NA, [...u32(iaid), ...u32(t1), ...u32(t2), ...iaaddr, ...extra]);
  const raw = Uint8Array.from([
    REPLY, 0x12, 0x34, 0x56,
    ...opt(OPTION_CLIENTID, [0, 4, ...Array(16).fill(7)]),
    ...opt(OPTION_SERVERID, [0, 1, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
    ...ia,
    ...opt(OPTION_DNS_SERVERS, [...ADDR.slice(0, 14), 0, 0x53]),
    ...opt(OPTION_DOMAIN_LIST, [...encodeDomainList(["v6.test", "corp.test"])]),
  ]);
  return decodeMessage6(raw);
}

describe("DHCPv6 messages", () => {
  test("decode a REPLY: xid, IA_NA with its address and lifetimes, DNS; round trip", () => {
    const m = reply(42, 60, 105, 120, 120);
    expect(m.xid).toBe(0x123456);
    expect(findIaNa(m, 42)).toMatchObject({ iaid: 42, t1: 60, t2: 105, addresses: [{ address: "fd00:77::123", preferred: 120, valid: 120 }] });
    expect(findIaNa(m, 43)).toBeUndefined();
    expect(leasedAddress(m, 42)?.address).toBe("fd00:77::123");
    expect(dns6(m)).toEqual({ nameservers: ["fd00:77::53"], search: ["v6.test", "corp.test"] });
    expect(decodeMessage6(encodeMessage6(m))).toEqual(m);
  });
  test("status codes: an IA_NA NoAddrsAvail grants nothing; message-level status is read", () => {
    const m = reply(42, 0, 0, 120, 120, opt(OPTION_STATUS_CODE, [0, 2, ...Buffer.from("no addresses")]));
    expect(findIaNa(m, 42)?.statusText).toBe("NoAddrsAvail (2): no addresses");
    expect(leasedAddress(m, 42)).toBeUndefined();
    const withStatus = decodeMessage6(Uint8Array.from([REPLY, 0, 0, 1, ...opt(OPTION_STATUS_CODE, [0, 3])]));
    expect(messageStatus(withStatus)).toEqual({ code: 3, message: "" });
  });
  test("IA_NA option for a request: IAID, T1 = T2 = 0, one IAADDR with zero lifetimes", () => {
    const o = iaNaOption(7, "fd00:77::123");
    expect([...o.value]).toEqual([...u32(7), ...u32(0), ...u32(0), ...opt(OPTION_IAADDR, [...ADDR, ...u32(0), ...u32(0)])]);
    expect(() => iaNaOption(7, "10.0.0.1")).toThrow("not an IPv6 address");
  });
  test("malformed messages are refused", () => {
    expect(() => decodeMessage6(Uint8Array.of(7, 0, 0))).toThrow("too short");
    expect(() => decodeMessage6(Uint8Array.of(7, 0, 0, 1, 0, 1, 0, 9, 1))).toThrow("overruns");
  });
  test("timers: T1/T2 from the IA_NA, else 0.5 / 0.8 × preferred; infinite lifetimes capped", () => {
    expect(leaseTimes6(reply(1, 60, 105, 120, 120), 1)).toEqual({ lease: 120, t1: 60, t2: 105 });
    expect(leaseTimes6(reply(1, 0, 0, 100, 200), 1)).toEqual({ lease: 200, t1: 50, t2: 80 });
    const inf = leaseTimes6(reply(1, 0, 0, 0xffffffff, 0xffffffff), 1);
    expect(inf.lease).toBe(10 * 365 * 24 * 3600);
    expect(inf.t1).toBe(inf.lease * 0.5);
  });
});

describe("DHCPv6 identity", () => {
  test("DUID-UUID: type 4, RFC 4122 version/variant bits, stable per attachment key, distinct across keys", () => {
    const a = duidFor("c1/net/eth0");
    expect(a.byteLength).toBe(18);
    expect([a[0], a[1]]).toEqual([0, 4]);
    expect((a[8] ?? 0) >> 4).toBe(5);
    expect((a[10] ?? 0) >> 6).toBe(2);
    expect(duidFor("c1/net/eth0")).toEqual(a);
    expect(duidFor("c2/net/eth0")).not.toEqual(a);
    expect(iaidFor("eth0")).toBe(iaidFor("eth0"));
    expect(iaidFor("eth0")).not.toBe(iaidFor("net1"));
  });
});

describe("dual-stack results", () => {
  test("v4 first, v4 routes, DNS merged without duplicates, the first domain, one interface", () => {
    const v4 = {
      interfaces: [{ name: "eth0", mtu: 1400, sandbox: "/n" }],
      ips: [{ address: "10.0.0.5/24", gateway: "10.0.0.1" }],
      routes: [{ dst: "0.0.0.0/0", gw: "10.0.0.1" }],
      dns: { nameservers: ["10.0.0.53"], domain: "lab.test", search: ["a.test"] },
    };
    const v6 = { ips: [{ address: "fd00::5/128" }], dns: { nameservers: ["fd00::53"], search: ["a.test", "v6.test"] } };
    expect(mergeResults([v4, v6])).toEqual({
      interfaces: [{ name: "eth0", mtu: 1400, sandbox: "/n" }],
      ips: [{ address: "10.0.0.5/24", gateway: "10.0.0.1" }, { address: "fd00::5/128" }],
      routes: [{ dst: "0.0.0.0/0", gw: "10.0.0.1" }],
      dns: { nameservers: ["10.0.0.53", "fd00::53"], domain: "lab.test", search: ["a.test", "v6.test"] },
    });
    expect(mergeResults([{ ips: [{ address: "fd00::5/128" }] }])).toEqual({ ips: [{ address: "fd00::5/128" }] });
  });
});
