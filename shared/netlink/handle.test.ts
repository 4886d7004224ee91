/**
 * Integration tests against the kernel, each in throwaway namespaces (`unshare -n sleep infinity`
 * children): nothing touches the host's links. Results are checked through our own decoders and
 * through `ip -j` as an independent oracle. Skipped (with a printed reason) unless root.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { parseMessage as oracleParse } from "netlink/dist/rt/structs";
import { readlinkSync } from "node:fs";
import { withNetNS } from "../netns/index.ts";
import { createScratchNetns, runIn, skipUnlessRoot, type ScratchNetns } from "../netns/testing.ts";
import { EADDRNOTAVAIL, EEXIST, ENODEV, EOPNOTSUPP, ESRCH } from "../sys/errno.ts";
import { buildLinkDumpRequest } from "./link.ts";
import { IFA_F_NODAD, IFA_F_PERMANENT, IFA_F_TENTATIVE } from "./constants/if-addr.ts";
import { IFF_ALLMULTI, IFF_PROMISC, IFF_UP, MACVLAN_MODE_BRIDGE } from "./constants/if-link.ts";
import { RTM_NEWLINK, RT_SCOPE_LINK, RT_SCOPE_UNIVERSE, RT_TABLE_UNSPEC } from "./constants/rtnetlink.ts";
import { LinkNotFoundError, NetlinkError, isExists, isNotFound } from "./errors.ts";
import { Handle } from "./handle.ts";
import { openNetlinkSocket } from "./kernel-transport.ts";

const SKIP = skipUnlessRoot("netlink Handle integration");

// biome-ignore lint: test helper
type Json = any;
function ipJson(ns: ScratchNetns, ...args: string[]): Json {
  return JSON.parse(runIn(ns, ["ip", "-j", ...args]));
}
function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected an error");
}

describe.skipIf(SKIP)("Handle against the kernel", () => {
  let A: ScratchNetns; // plays the host
  let B: ScratchNetns; // plays the container
  let hA: Handle;
  let hB: Handle;
  beforeAll(() => {
    A = createScratchNetns();
    B = createScratchNetns();
    hA = Handle.open(A.ns);
    hB = Handle.open(B.ns);
  });
  afterAll(() => {
    hA?.close();
    hB?.close();
    A?.[Symbol.dispose]();
    B?.[Symbol.dispose]();
  });

  test("a handle acts on its own namespace (fresh netns has only lo) and leaves ours alone", () => {
    const before = readlinkSync("/proc/thread-self/ns/net");
    using h = Handle.open(B.ns);
    expect(readlinkSync("/proc/thread-self/ns/net")).toBe(before);
    const names = h.linkList().map((l) => l.name);
    expect(names).toContain("lo");
    expect(h.linkByName("lo").index).toBe(1);
  });

  describe("veth", () => {
    test("creates the pair with the peer in another netns, MTU applied to both ends", () => {
      hA.linkAddVeth({ name: "h0", peerName: "c0", peerNetnsFd: B.ns.fd, mtu: 1400, mac: "02:00:00:00:aa:01", peerMac: "02:00:00:00:bb:01" });
      const h0 = hA.linkByName("h0");
      expect(h0.kind).toBe("veth");
      expect(h0.mtu).toBe(1400);
      expect(h0.mac).toBe("02:00:00:00:aa:01");
      expect(h0.netnsId).toBeDefined();
      expect(() => hA.linkByName("c0")).toThrow(LinkNotFoundError);
      const c0 = hB.linkByName("c0");
      expect(c0.kind).toBe("veth");
      expect(c0.mtu).toBe(1400);
      expect(c0.mac).toBe("02:00:00:00:bb:01");
      expect(h0.parentIndex).toBe(c0.index); // IFLA_LINK of a veth is the peer
      expect(c0.parentIndex).toBe(h0.index);
      const oracle = ipJson(B, "-d", "link", "show", "c0")[0];
      expect(oracle.mtu).toBe(1400);
      expect(oracle.address).toBe("02:00:00:00:bb:01");
      expect(oracle.linkinfo.info_kind).toBe("veth");
    });

    test("linkByIndex and linkList agree with linkByName", () => {
      const h0 = hA.linkByName("h0");
      expect(hA.linkByIndex(h0.index)).toEqual(h0);
      expect(hA.linkList().find((l) => l.name === "h0")).toEqual(h0);
    });

    test("adding it again is EEXIST (isExists), typed", () => {
      const e = errorOf(() => hA.linkAddVeth({ name: "h0", peerName: "c9" }));
      expect(e).toBeInstanceOf(NetlinkError);
      expect((e as NetlinkError).errno).toBe(EEXIST);
      expect(isExists(e)).toBe(true);
      expect(isNotFound(e)).toBe(false);
    });
  });

  describe("link attributes", () => {
    test("up/down, promisc, allmulti via ifi_change", () => {
      const i = hA.linkByName("h0").index;
      hA.linkSetUp(i);
      expect(hA.linkByIndex(i).flags & IFF_UP).toBe(IFF_UP);
      expect(ipJson(A, "link", "show", "h0")[0].flags).toContain("UP");
      hA.linkSetPromisc(i, true);
      hA.linkSetAllmulti(i, true);
      let l = hA.linkByIndex(i);
      expect(l.flags & IFF_PROMISC).toBe(IFF_PROMISC);
      expect(l.flags & IFF_ALLMULTI).toBe(IFF_ALLMULTI);
      expect(l.flags & IFF_UP).toBe(IFF_UP); // other flags untouched
      hA.linkSetPromisc(i, false);
      hA.linkSetAllmulti(i, false);
      hA.linkSetDown(i);
      l = hA.linkByIndex(i);
      expect(l.flags & (IFF_UP | IFF_PROMISC | IFF_ALLMULTI)).toBe(0);
    });

    test("mtu, mac, txqlen, alias, name", () => {
      const i = hA.linkByName("h0").index;
      hA.linkSetMTU(i, 1300);
      hA.linkSetMAC(i, "02:00:00:00:aa:02");
      hA.linkSetTxqlen(i, 321);
      hA.linkSetAlias(i, "to container");
      hA.linkSetName(i, "h0renamed");
      const l = hA.linkByIndex(i);
      expect([l.name, l.mtu, l.mac, l.txqlen, l.alias]).toEqual(["h0renamed", 1300, "02:00:00:00:aa:02", 321, "to container"]);
      const o = ipJson(A, "link", "show", "h0renamed")[0];
      expect([o.mtu, o.address, o.txqlen, o.ifalias]).toEqual([1300, "02:00:00:00:aa:02", 321, "to container"]);
      hA.linkSetName(i, "h0");
    });

    test("bridge: create, enslave (master/nomaster), hairpin and isolated", () => {
      hA.linkAddBridge({ name: "br0", mtu: 1400 });
      const br = hA.linkByName("br0");
      expect(br.kind).toBe("bridge");
      expect(br.vlanFiltering).toBe(false);
      const i = hA.linkByName("h0").index;
      hA.linkSetMaster(i, br.index);
      let h0 = hA.linkByIndex(i);
      expect(h0.masterIndex).toBe(br.index);
      expect(h0.slaveKind).toBe("bridge");
      hA.linkSetHairpin(i, true);
      hA.linkSetIsolated(i, true);
      const slave = ipJson(A, "-d", "link", "show", "h0")[0].linkinfo.info_slave_data;
      expect(slave.hairpin).toBe(true);
      expect(slave.isolated).toBe(true);
      hA.linkSetHairpin(i, false);
      expect(ipJson(A, "-d", "link", "show", "h0")[0].linkinfo.info_slave_data.hairpin).toBe(false);
      hA.linkSetNoMaster(i);
      h0 = hA.linkByIndex(i);
      expect(h0.masterIndex).toBeUndefined();
      expect(ipJson(A, "link", "show", "h0")[0].master).toBeUndefined();
      hA.linkDel(br.index);
      expect(() => hA.linkByName("br0")).toThrow(LinkNotFoundError);
    });

    test("ifb with txqlen", () => {
      hA.linkAddIfb({ name: "ifb0", txqlen: 32, mtu: 1500 });
      const l = hA.linkByName("ifb0");
      expect(l.kind).toBe("ifb");
      expect(l.txqlen).toBe(32);
      hA.linkDel(l.index);
      expect(() => hA.linkByIndex(l.index)).toThrow(LinkNotFoundError);
    });

    test("macvlan created directly in another netns over a parent here", () => {
      const parent = hA.linkByName("h0").index;
      hA.linkAddMacvlan({ name: "mv0", parentIndex: parent, mode: "bridge", mtu: 1300, netnsFd: B.ns.fd });
      expect(() => hA.linkByName("mv0")).toThrow(LinkNotFoundError);
      const mv = hB.linkByName("mv0");
      expect(mv.kind).toBe("macvlan");
      expect(mv.macvlanMode).toBe(MACVLAN_MODE_BRIDGE);
      expect(mv.mtu).toBe(1300);
      expect(ipJson(B, "-d", "link", "show", "mv0")[0].linkinfo.info_data.mode).toBe("bridge");
      hB.linkDel(mv.index);
    });

    test("linkSetNetnsFd moves a link to another namespace", () => {
      hA.linkAddVeth({ name: "mvA", peerName: "mvB" });
      const i = hA.linkByName("mvB").index;
      hA.linkSetNetnsFd(i, B.ns.fd);
      expect(() => hA.linkByName("mvB")).toThrow(LinkNotFoundError);
      const moved = hB.linkByName("mvB");
      expect(moved.kind).toBe("veth");
      hB.linkDel(moved.index); // deleting one end removes the pair
      expect(() => hA.linkByName("mvA")).toThrow(LinkNotFoundError);
    });
  });

  describe("typed kernel errors", () => {
    test("ENODEV on a missing index is not-found", () => {
      const e = errorOf(() => hA.linkDel(987654));
      expect(e).toBeInstanceOf(NetlinkError);
      expect((e as NetlinkError).errno).toBe(ENODEV);
      expect((e as NetlinkError).message).toBe("RTM_DELLINK index=987654: no such device (ENODEV)");
      expect(isNotFound(e)).toBe(true);
    });

    test("linkByName of a missing name throws LinkNotFoundError (message as upstream)", () => {
      const e = errorOf(() => hA.linkByName("nope0"));
      expect(e).toBeInstanceOf(LinkNotFoundError);
      expect((e as Error).message).toBe("Link not found");
    });

    test("an unsupported kind carries the kernel's extended-ACK text", () => {
      const e = errorOf(() => hA.linkAddDummy({ name: "d0" }));
      expect(e).toBeInstanceOf(NetlinkError);
      // This kernel lacks the dummy module; with it loaded the add succeeds instead.
      if ((e as NetlinkError).errno === EOPNOTSUPP) expect((e as NetlinkError).extMsg).toBe("Unknown device type");
    });
  });

  describe("addresses", () => {
    test("IPv4 add sets local, broadcast (brd +) and label; list filters by index and family", () => {
      const i = hA.linkByName("h0").index;
      hA.addrAdd(i, { address: "10.1.2.3", prefixLen: 24 });
      hA.addrAdd(i, { address: "10.1.3.3", prefixLen: 24, broadcast: null });
      const v4 = hA.addrList({ index: i, family: 4 });
      expect(v4.map((a) => [a.address, a.prefixLen, a.broadcast, a.label, a.scope])).toEqual([
        ["10.1.2.3", 24, "10.1.2.255", "h0", RT_SCOPE_UNIVERSE],
        ["10.1.3.3", 24, undefined, "h0", RT_SCOPE_UNIVERSE],
      ]);
      expect(v4.every((a) => (a.flags & IFA_F_PERMANENT) !== 0)).toBe(true);
      const o = ipJson(A, "addr", "show", "h0")[0].addr_info.filter((x: Json) => x.family === "inet");
      expect(o.map((x: Json) => [x.local, x.prefixlen, x.broadcast])).toEqual([
        ["10.1.2.3", 24, "10.1.2.255"],
        ["10.1.3.3", 24, undefined],
      ]);
      expect(hA.addrList({ index: 1 }).some((a) => a.address === "10.1.2.3")).toBe(false);
    });

    test("adding the same address again is EEXIST; deleting a missing one is EADDRNOTAVAIL (not-found)", () => {
      const i = hA.linkByName("h0").index;
      const e1 = errorOf(() => hA.addrAdd(i, { address: "10.1.2.3", prefixLen: 24 }));
      expect((e1 as NetlinkError).errno).toBe(EEXIST);
      expect(isExists(e1)).toBe(true);
      const e2 = errorOf(() => hA.addrDel(i, { address: "10.7.7.7", prefixLen: 24 }));
      expect((e2 as NetlinkError).errno).toBe(EADDRNOTAVAIL);
      expect(isNotFound(e2)).toBe(true);
    });

    test("IPv6: TENTATIVE while DAD runs, NODAD skips it; both reported via flags", () => {
      hB.linkSetUp(hB.linkByName("c0").index);
      const i = hA.linkByName("h0").index;
      hA.linkSetUp(i);
      hA.addrAdd(i, { address: "fd00::2", prefixLen: 64 });
      hA.addrAdd(i, { address: "fd00::3", prefixLen: 64, flags: IFA_F_NODAD });
      const v6 = hA.addrList({ index: i, family: 6 });
      const a2 = v6.find((a) => a.address === "fd00::2");
      const a3 = v6.find((a) => a.address === "fd00::3");
      expect(a2?.prefixLen).toBe(64);
      expect((a2?.flags ?? 0) & IFA_F_TENTATIVE).toBe(IFA_F_TENTATIVE);
      expect((a3?.flags ?? 0) & IFA_F_NODAD).toBe(IFA_F_NODAD);
      expect((a3?.flags ?? 0) & IFA_F_TENTATIVE).toBe(0);
    });

    test("delete removes exactly that address", () => {
      const i = hA.linkByName("h0").index;
      hA.addrDel(i, { address: "10.1.3.3", prefixLen: 24 });
      hA.addrDel(i, { address: "fd00::3", prefixLen: 64 });
      const left = hA.addrList({ index: i }).map((a) => a.address);
      expect(left).toContain("10.1.2.3");
      expect(left).not.toContain("10.1.3.3");
      expect(left).not.toContain("fd00::3");
    });
  });

  describe("routes", () => {
    test("add via gateway, default, link scope, other table with metrics; list filters", () => {
      const i = hA.linkByName("h0").index;
      hA.routeAdd({ dst: { address: "10.99.2.0", prefixLen: 24 }, gw: "10.1.2.1", oif: i });
      hA.routeAdd({ gw: "10.1.2.1", oif: i });
      hA.routeAdd({ dst: { address: "10.99.3.7", prefixLen: 24 }, oif: i }); // host bits cleared
      hA.routeAdd({ dst: { address: "10.99.4.0", prefixLen: 24 }, gw: "10.1.2.1", oif: i, table: 100, priority: 7, mtu: 1400, advmss: 1360, src: "10.1.2.3" });
      hA.routeAdd({ dst: { address: "10.99.6.0", prefixLen: 24 }, gw: "10.1.2.1", oif: i, table: 1000 });

      const main = hA.routeList({ family: 4 });
      const byDst = (rs: typeof main, d: string | undefined) => rs.find((r) => (r.dst === undefined ? undefined : `${r.dst.address}/${r.dst.prefixLen}`) === d);
      expect(byDst(main, "10.99.2.0/24")).toMatchObject({ gw: "10.1.2.1", oif: i, scope: RT_SCOPE_UNIVERSE, table: 254 });
      expect(byDst(main, undefined)).toMatchObject({ gw: "10.1.2.1", oif: i });
      expect(byDst(main, "10.99.3.0/24")).toMatchObject({ scope: RT_SCOPE_LINK, oif: i });
      expect(byDst(main, "10.99.4.0/24")).toBeUndefined();
      const t100 = hA.routeList({ family: 4, table: 100 });
      expect(t100).toHaveLength(1);
      expect(t100[0]).toMatchObject({ table: 100, priority: 7, mtu: 1400, advmss: 1360, src: "10.1.2.3", dst: { address: "10.99.4.0", prefixLen: 24 } });
      expect(hA.routeList({ family: 4, table: 1000 })[0]).toMatchObject({ table: 1000, dst: { address: "10.99.6.0", prefixLen: 24 } });
      const all = hA.routeList({ table: RT_TABLE_UNSPEC });
      expect(all.some((r) => r.table === 100) && all.some((r) => r.table === 1000) && all.some((r) => r.table === 254)).toBe(true);
      expect(hA.routeList({ oif: 1 }).length).toBe(0);

      const o = ipJson(A, "route", "show", "table", "100")[0];
      expect([o.dst, o.gateway, o.metric, o.prefsrc, o.metrics?.[0]?.mtu ?? o.metrics?.mtu]).toEqual(["10.99.4.0/24", "10.1.2.1", 7, "10.1.2.3", 1400]);
    });

    test("a local IPv6 gateway is refused with the kernel's extended-ACK text", () => {
      const i = hA.linkByName("h0").index;
      const e = errorOf(() => hA.routeAdd({ dst: { address: "fd02::", prefixLen: 64 }, gw: "fd00::2", oif: i }));
      expect(e).toBeInstanceOf(NetlinkError);
      expect((e as NetlinkError).extMsg).toBe("Gateway can not be a local address");
      expect((e as NetlinkError).message).toBe(`RTM_NEWROUTE fd02::/64 via fd00::2 oif ${i}: invalid argument (EINVAL): Gateway can not be a local address`);
    });

    test("route add of an existing route is EEXIST; del of a missing one is ESRCH (not-found)", () => {
      const i = hA.linkByName("h0").index;
      const e1 = errorOf(() => hA.routeAdd({ dst: { address: "10.99.2.0", prefixLen: 24 }, gw: "10.1.2.1", oif: i }));
      expect((e1 as NetlinkError).errno).toBe(EEXIST);
      const e2 = errorOf(() => hA.routeDel({ dst: { address: "10.98.0.0", prefixLen: 16 } }));
      expect((e2 as NetlinkError).errno).toBe(ESRCH);
      expect(isNotFound(e2)).toBe(true);
    });

    test("append adds a second route for the same prefix (IPv4) / a multipath nexthop (IPv6); replace and del", () => {
      const i = hA.linkByName("h0").index;
      hA.addrAdd(i, { address: "fd00::10", prefixLen: 64, flags: IFA_F_NODAD });
      hA.routeAppend({ dst: { address: "10.99.5.0", prefixLen: 24 }, gw: "10.1.2.1", oif: i });
      hA.routeAppend({ dst: { address: "10.99.5.0", prefixLen: 24 }, gw: "10.1.2.2", oif: i });
      const v4 = hA.routeList({ family: 4 }).filter((r) => r.dst?.address === "10.99.5.0");
      expect(v4.map((r) => r.gw).sort()).toEqual(["10.1.2.1", "10.1.2.2"]);

      hA.routeAdd({ dst: { address: "fd01::", prefixLen: 64 }, gw: "fd00::a", oif: i });
      hA.routeAppend({ dst: { address: "fd01::", prefixLen: 64 }, gw: "fd00::b", oif: i });
      const v6 = hA.routeList({ family: 6 }).filter((r) => r.dst?.address === "fd01::");
      const gws = v6.flatMap((r) => (r.multipath ?? []).map((n) => n.gw).concat(r.gw === undefined ? [] : [r.gw])).sort();
      expect(gws).toEqual(["fd00::a", "fd00::b"]);
      expect(hA.routeList({ family: 6, oif: i }).some((r) => r.dst?.address === "fd01::")).toBe(true);

      hA.routeReplace({ dst: { address: "10.99.2.0", prefixLen: 24 }, gw: "10.1.2.9", oif: i });
      expect(hA.routeList({ family: 4 }).find((r) => r.dst?.address === "10.99.2.0")?.gw).toBe("10.1.2.9");
      hA.routeDel({ dst: { address: "10.99.2.0", prefixLen: 24 } });
      hA.routeDel({ gw: "10.1.2.1", oif: i });
      const left = hA.routeList({ family: 4 });
      expect(left.some((r) => r.dst?.address === "10.99.2.0")).toBe(false);
      expect(left.some((r) => r.dst === undefined)).toBe(false);
      expect(ipJson(A, "route", "show").some((r: Json) => r.dst === "default")).toBe(false);
    });
  });

  test("an independent decoder (npm netlink) reads the same links from the raw dump", () => {
    using sock = withNetNS(A.ns, () => openNetlinkSocket());
    const raw = sock.request(buildLinkDumpRequest()).filter((m) => m.type === RTM_NEWLINK);
    const theirs = raw.map((m) => {
      const p = oracleParse(RTM_NEWLINK, Buffer.from(m.payload)) as unknown as { data: { index: number }; attrs: { ifname: string; mtu: number } };
      return [p.data.index, p.attrs.ifname, p.attrs.mtu];
    });
    expect(hA.linkList().map((l) => [l.index, l.name, l.mtu])).toEqual(theirs);
  });

  test("a dump of 300+ links spans many datagrams and returns every link", () => {
    using C = createScratchNetns();
    using h = Handle.open(C.ns);
    for (let n = 0; n < 150; n++) h.linkAddVeth({ name: `a${n}`, peerName: `b${n}`, mac: "02:00:00:00:00:01" });
    const links = h.linkList();
    expect(links.length).toBe(301);
    const names = new Set(links.map((l) => l.name));
    for (let n = 0; n < 150; n++) expect(names.has(`a${n}`) && names.has(`b${n}`)).toBe(true);
    using sock = withNetNS(C.ns, () => openNetlinkSocket());
    const bytes = sock.request(buildLinkDumpRequest()).reduce((s, m) => s + m.payload.byteLength, 0);
    expect(bytes).toBeGreaterThan(64 * 1024); // more than one receive buffer's worth
    expect(Number(runIn(C, ["sh", "-c", "ip -o link | wc -l"]).trim())).toBe(301);
  }, 60_000);
});
