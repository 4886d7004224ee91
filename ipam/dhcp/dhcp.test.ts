import { describe, expect, test } from "bun:test";
import { loadDhcpConfig, parseOptionName, socketPathOf } from "./config.ts";
import { classfulPrefix, dnsFromAck, mtuFromAck, parseClasslessRoutes, parseStaticRoutes, resultFromAck } from "./lease-result.ts";
import { decodeDomainList, encodeDomainList } from "./domain-list.ts";
import { DHCPACK, OPT_CLASSLESS_ROUTE, OPT_MESSAGE_TYPE, OPT_ROUTER, OPT_STATIC_ROUTE, OPT_SUBNET_MASK, decodeMessage, encodeMessage, type DhcpMessage } from "./packet.ts";
import { backoffDelays, buildMessage, clientIdFor } from "./daemon/client.ts";
import { parseDaemonFlags } from "./daemon/flags.ts";
import { leaseTimes } from "./daemon/lease4.ts";

function ack(options: [number, number[]][]): DhcpMessage {
  return {
    op: 2, xid: 7, secs: 0, flags: 0, ciaddr: "0.0.0.0", yiaddr: "192.168.1.5", siaddr: "0.0.0.0", giaddr: "0.0.0.0",
    chaddr: Uint8Array.of(2, 0, 0, 0, 0, 1),
    options: new Map([[OPT_MESSAGE_TYPE, Uint8Array.of(DHCPACK)], ...options.map(([c, v]) => [c, Uint8Array.from(v)] as [number, Uint8Array])]),
  };
}

describe("packet", () => {
  test("encode/decode round trip, long options split and rejoined", () => {
    const m = ack([[OPT_SUBNET_MASK, [255, 255, 255, 0]], [12, Array(300).fill(0x61)]]);
    const bytes = encodeMessage(m);
    expect(bytes.byteLength).toBeGreaterThanOrEqual(300);
    expect([...bytes.subarray(236, 240)]).toEqual([99, 130, 83, 99]);
    const back = decodeMessage(bytes);
    expect(back.yiaddr).toBe("192.168.1.5");
    expect(back.options.get(12)?.byteLength).toBe(300);
    expect([...back.chaddr]).toEqual([2, 0, 0, 0, 0, 1]);
  });
  test("malformed messages are refused", () => {
    expect(() => decodeMessage(new Uint8Array(100))).toThrow("too short");
    const b = encodeMessage(ack([]));
    b[240 + 3] = 0; // after the message type option: fine; now break the cookie
    b[236] = 0;
    expect(() => decodeMessage(b)).toThrow("cookie");
  });
});

describe("lease result (upstream options_test.go)", () => {
  test("option 33 gets classful masks", () => {
    expect(parseStaticRoutes(Uint8Array.of(10, 0, 0, 0, 10, 1, 2, 3, 192, 168, 1, 0, 192, 168, 2, 3))).toEqual([
      { dst: "10.0.0.0/8", gw: "10.1.2.3" },
      { dst: "192.168.1.0/24", gw: "192.168.2.3" },
    ]);
    expect([classfulPrefix(10), classfulPrefix(172), classfulPrefix(192), classfulPrefix(230)]).toEqual([8, 16, 24, 32]);
  });
  test("option 121: widths, 0.0.0.0 gateway is a link-scope route", () => {
    expect(parseClasslessRoutes(Uint8Array.of(24, 192, 168, 50, 10, 0, 0, 254, 0, 10, 0, 0, 1, 32, 10, 9, 9, 9, 0, 0, 0, 0))).toEqual([
      { dst: "192.168.50.0/24", gw: "10.0.0.254" },
      { dst: "0.0.0.0/0", gw: "10.0.0.1" },
      { dst: "10.9.9.9/32", scope: 253 },
    ]);
    expect(() => parseClasslessRoutes(Uint8Array.of(33, 1, 2, 3, 4, 5, 6, 7, 8, 9))).toThrow("invalid prefix length");
    expect(() => parseClasslessRoutes(Uint8Array.of(24, 1, 2))).toThrow("truncated");
  });
  test("121 wins over 33 and the router; otherwise 33 then default via router; priority", () => {
    const base: [number, number[]][] = [[OPT_SUBNET_MASK, [255, 255, 255, 0]], [OPT_ROUTER, [192, 168, 1, 1]]];
    expect(resultFromAck(ack([...base, [OPT_STATIC_ROUTE, [10, 0, 0, 0, 192, 168, 1, 2]]]), 0)).toEqual({
      ips: [{ address: "192.168.1.5/24", gateway: "192.168.1.1" }],
      routes: [{ dst: "10.0.0.0/8", gw: "192.168.1.2" }, { dst: "0.0.0.0/0", gw: "192.168.1.1" }],
    });
    const r = resultFromAck(ack([...base, [OPT_STATIC_ROUTE, [10, 0, 0, 0, 1, 1, 1, 1]], [OPT_CLASSLESS_ROUTE, [8, 11, 192, 168, 1, 9]]]), 7);
    expect(r.routes).toEqual([{ dst: "11.0.0.0/8", gw: "192.168.1.9", priority: 7 }]);
    expect(() => resultFromAck(ack([]), 0)).toThrow("DHCP option Subnet Mask not found in DHCPACK");
  });
  test("a malformed 121 is ignored as upstream's client library does: 33 and the router instead", () => {
    const base: [number, number[]][] = [[OPT_SUBNET_MASK, [255, 255, 255, 0]], [OPT_ROUTER, [192, 168, 1, 1]], [OPT_STATIC_ROUTE, [10, 0, 0, 0, 192, 168, 1, 2]]];
    const fallback = [{ dst: "10.0.0.0/8", gw: "192.168.1.2" }, { dst: "0.0.0.0/0", gw: "192.168.1.1" }];
    expect(resultFromAck(ack([...base, [OPT_CLASSLESS_ROUTE, [24, 1, 2]]]), 0).routes).toEqual(fallback);
    expect(resultFromAck(ack([...base, [OPT_CLASSLESS_ROUTE, [33, 1, 2, 3, 4, 5, 6, 7, 8, 9]]]), 0).routes).toEqual(fallback);
  });
  test("lease timers default to 50 % / 85 %", () => {
    expect(leaseTimes(ack([[51, [0, 0, 0x0e, 0x10]]]))).toEqual({ lease: 3600, t1: 1800, t2: 3060 });
    expect(leaseTimes(ack([]))).toEqual({ lease: 3600, t1: 1800, t2: 3060 });
    expect(leaseTimes(ack([[51, [0, 0, 0, 120]], [58, [0, 0, 0, 3]], [59, [0, 0, 0, 100]]]))).toEqual({ lease: 120, t1: 3, t2: 100 });
  });
});

describe("DNS and MTU options", () => {
  test("6, 15 and 119 become the result's dns; 119 may use compression pointers", () => {
    // "a.example.test", then "b" + pointer to "example.test" at offset 2.
    const search = [1, 0x61, 7, ...Buffer.from("example"), 4, ...Buffer.from("test"), 0, 1, 0x62, 0xc0, 2];
    const m = ack([[6, [10, 0, 0, 53, 10, 0, 0, 54]], [15, [...Buffer.from("corp.test"), 0]], [119, search]]);
    expect(dnsFromAck(m)).toEqual({ nameservers: ["10.0.0.53", "10.0.0.54"], domain: "corp.test", search: ["a.example.test", "b.example.test"] });
    expect(resultFromAck(ack([[OPT_SUBNET_MASK, [255, 255, 255, 0]], [6, [10, 0, 0, 53]]]), 0).dns).toEqual({ nameservers: ["10.0.0.53"] });
    expect(dnsFromAck(ack([]))).toBeUndefined();
    // A broken search list is dropped, the rest kept.
    expect(dnsFromAck(ack([[6, [10, 0, 0, 53]], [119, [5, 0x61]]]))).toEqual({ nameservers: ["10.0.0.53"] });
  });
  test("domain lists: round trip, pointer loops and forward pointers refused", () => {
    expect(decodeDomainList(encodeDomainList(["example.test", "corp.test."]))).toEqual(["example.test", "corp.test"]);
    expect(() => decodeDomainList(Uint8Array.of(0xc0, 0))).toThrow("bad compression pointer");
    expect(() => decodeDomainList(Uint8Array.of(1, 0x61, 0xc0, 5, 0, 0))).toThrow("bad compression pointer");
    expect(() => decodeDomainList(Uint8Array.of(3, 0x61))).toThrow("bad label length");
  });
  test("option 26: two bytes, at least 68", () => {
    expect(mtuFromAck(ack([[26, [0x05, 0x78]]]))).toBe(1400);
    expect(mtuFromAck(ack([[26, [0, 60]]]))).toBeUndefined();
    expect(mtuFromAck(ack([[26, [5]]]))).toBeUndefined();
  });
});

describe("config", () => {
  test("ours: ipFamilies, ipv6PrefixLength, applyMtu (requests option 26)", () => {
    const d = loadDhcpConfig({ config: { name: "n", ipam: {} }, args: "" });
    expect(d).toMatchObject({ families: [4], ipv6PrefixLength: 128, applyMtu: false });
    expect(d.request).toEqual([3, 1, 6, 15, 119]);
    const c = loadDhcpConfig({ config: { name: "n", ipam: { ipFamilies: ["IPv6", "ipv4"], ipv6PrefixLength: 64, applyMtu: true } }, args: "" });
    expect(c).toMatchObject({ families: [4, 6], ipv6PrefixLength: 64, applyMtu: true });
    expect(c.request).toContain(26);
    expect(() => loadDhcpConfig({ config: { name: "n", ipam: { ipFamilies: ["ipx"] } }, args: "" })).toThrow('ipam.ipFamilies: unknown family "ipx"');
    expect(() => loadDhcpConfig({ config: { name: "n", ipam: { ipv6PrefixLength: 129 } }, args: "" })).toThrow("ipam.ipv6PrefixLength: 129");
  });
  test("option names (upstream TestParseOptionName)", () => {
    expect(parseOptionName("host-name")).toBe(12);
    expect(parseOptionName("12")).toBe(12);
    expect(() => parseOptionName("hostname")).toThrow('Can not parse option "hostname"');
    expect(() => parseOptionName("256")).toThrow("value out of range");
  });
  test("provide/request, fromArg wins, defaults unless skipDefault", () => {
    const c = loadDhcpConfig({
      config: { name: "n", ipam: { type: "dhcp", provide: [{ option: "host-name", value: "a", fromArg: "POD" }], request: [{ option: "121" }, { option: "121" }] } },
      args: "IgnoreUnknown=1;POD=web",
    });
    expect(new TextDecoder().decode(c.provide.get(12))).toBe("web");
    expect(c.request).toEqual([121, 3, 1, 6, 15, 119]);
    expect(c.socketPath).toBe("/run/cni/dhcp.sock");
    const skip = loadDhcpConfig({ config: { name: "n", ipam: { request: [{ skipDefault: true }] } }, args: "" });
    expect(skip.request).toEqual([]);
    expect(() => loadDhcpConfig({ config: { name: "n", ipam: { provide: [{ option: "12", value: "x".repeat(256) }] } }, args: "" })).toThrow("value too long");
    expect(socketPathOf({ name: "n" })).toBe("/run/cni/dhcp.sock");
    expect(() => socketPathOf({ name: "n", ipam: { daemonSocketPath: 5 } })).toThrow("error obtaining socketPath");
    expect(() => socketPathOf({ name: "n", ipam: { daemonSocketPath: "/run/\0x" } })).toThrow(
      "error obtaining socketPath: error parsing socket path conf: invalid ipam.daemonSocketPath: a path cannot contain a NUL byte",
    );
  });
});

describe("client messages", () => {
  test("client id is type 0 + key, truncated to 254 bytes", () => {
    expect([...clientIdFor("a/b/c")]).toEqual([0, 97, 47, 98, 47, 99]);
    expect(clientIdFor("x".repeat(400)).byteLength).toBe(255);
  });
  test("a REQUEST carries 57, 61, provided options and the request list", () => {
    const p = { clientId: clientIdFor("k"), mac: Uint8Array.of(1, 2, 3, 4, 5, 6), provide: new Map([[12, Uint8Array.of(0x68)]]), request: [121, 3, 1], timeoutMs: 1, resendMaxMs: 1, resendTimeoutMs: 1 };
    const m = decodeMessage(encodeMessage(buildMessage(p, { type: 3, xid: 9, broadcast: true, ciaddr: "10.0.0.2" })));
    expect(m.flags).toBe(0x8000);
    expect(m.ciaddr).toBe("10.0.0.2");
    expect([...m.options.keys()]).toEqual([53, 57, 61, 12, 55]);
    expect([...(m.options.get(55) ?? [])]).toEqual([121, 3, 1]);
  });
  test("back-off: 4 × 2 s ± 1 s, then doubling from 8 s up to resendmax", () => {
    const g = backoffDelays(62_000, () => 0);
    expect(Array.from({ length: 10 }, () => g.next().value)).toEqual([2000, 2000, 2000, 2000, 8000, 16000, 32000, 62000, 62000, 62000]);
  });
});

describe("daemon flags (Go flag syntax)", () => {
  test("defaults and forms", () => {
    const f = parseDaemonFlags([]);
    expect(f).toMatchObject({ socketPath: "/run/cni/dhcp.sock", timeoutMs: 10_000, resendMaxMs: 62_000, resendTimeoutMs: 208_000, broadcast: false });
    const g = parseDaemonFlags(["-socketpath", "/x.sock", "--timeout=2s", "-broadcast", "-resendmax", "1m30s", "-pidfile=/p"]);
    expect(g).toMatchObject({ socketPath: "/x.sock", timeoutMs: 2000, broadcast: true, resendMaxMs: 90_000, pidFile: "/p" });
    expect(parseDaemonFlags(["-broadcast=false"]).broadcast).toBe(false);
    expect(() => parseDaemonFlags(["-nope"])).toThrow("flag provided but not defined: -nope");
    expect(() => parseDaemonFlags(["-timeout"])).toThrow("flag needs an argument: -timeout");
    expect(() => parseDaemonFlags(["-timeout", "5"])).toThrow('invalid value "5" for flag -timeout');
  });
});
