/**
 * Unit tests (no root) of the decisions that read the kernel, against a scripted Handle: which site
 * shapes an attachment, what DEL and GC treat as "already gone" (only not-found) and which IFBs GC
 * may attribute to a network.
 */
import { describe, expect, test } from "bun:test";
import { ENODEV, ENOENT, EPERM } from "../../shared/sys/errno.ts";
import { RTM_DELQDISC, RTM_DELTFILTER, RTM_GETLINK, RTM_GETTFILTER } from "../../shared/netlink/constants/rtnetlink.ts";
import { ETH_P_ALL } from "../../shared/netlink/constants/pkt-cls.ts";
import { TC_H_ROOT } from "../../shared/netlink/constants/pkt-sched.ts";
import { TCA_EGRESS_REDIR } from "../../shared/netlink/constants/tc-act.ts";
import { IPVLAN_MODE_L2, IPVLAN_MODE_L3S } from "../../shared/netlink/constants/if-link.ts";
import { tcHandle } from "../../shared/netlink/tc/msg.ts";
import { INGRESS_HANDLE } from "../../shared/netlink/tc/qdisc.ts";
import { CniError } from "../../shared/cni/errors.ts";
import { LinkNotFoundError, NetlinkError, type Filter, type Handle, type Link, type Qdisc } from "../../shared/netlink/index.ts";
import { staleIfbs } from "./gc.ts";
import { derivedIfbName, ifbAlias, ifbAttachment, ifbOwner, upstreamIfbName } from "./ifb-name.ts";
import { findSite, hostInterfaceNames, refuseUnshapeable, shapingsOf } from "./site.ts";
import { redirectSources, redirectsTo, removeRedirects, removeRootQdisc } from "./tc-setup.ts";

/** The few Handle methods the code under test uses, over in-memory state; `fail` scripts errors. */
class ScriptedNl {
  links: Link[] = [];
  qdiscs: Qdisc[] = [];
  filters: Filter[] = [];
  deleted: string[] = [];
  fail: Partial<Record<"linkByIndex" | "filterList" | "filterDel" | "qdiscDel", Error>> = {};

  linkByIndex(index: number): Link {
    if (this.fail.linkByIndex) throw this.fail.linkByIndex;
    const l = this.links.find((x) => x.index === index);
    if (l === undefined) throw new LinkNotFoundError({ index });
    return l;
  }
  linkList(): Link[] {
    return this.links;
  }
  qdiscList(index?: number): Qdisc[] {
    return this.qdiscs.filter((q) => index === undefined || q.index === index);
  }
  qdiscDel(index: number, where: string): void {
    if (this.fail.qdiscDel) throw this.fail.qdiscDel;
    this.deleted.push(`qdisc ${index} ${where}`);
  }
  filterList(index: number, parent: number): Filter[] {
    if (this.fail.filterList) throw this.fail.filterList;
    return this.filters.filter((f) => f.index === index && f.parent === parent);
  }
  filterDel(index: number, parent: number, priority: number): void {
    if (this.fail.filterDel) throw this.fail.filterDel;
    this.deleted.push(`filter ${index} prio ${priority}`);
  }
  get nl(): Handle {
    return this as unknown as Handle;
  }
}

function link(index: number, name: string, extra: Partial<Link> = {}): Link {
  return { index, name, flags: 0, hwType: 1, mtu: 1500, ...extra };
}

/** An ingress qdisc on `index` with our redirect filter towards `ifbIndex`. */
function hooked(nl: ScriptedNl, index: number, ifbIndex: number): void {
  nl.qdiscs.push({ index, handle: INGRESS_HANDLE, parent: tcHandle(0xffff, 0xfff1), info: 0, kind: "ingress" });
  nl.filters.push({
    index,
    parent: INGRESS_HANDLE,
    handle: 0x800800,
    priority: 1,
    protocol: ETH_P_ALL,
    kind: "u32",
    classId: tcHandle(1, 1),
    actions: [{ kind: "mirred", mirred: { eaction: TCA_EGRESS_REDIR, ifindex: ifbIndex, verdict: 4, index: 1 } }],
  });
}

const eperm = (type: number) => new NetlinkError(type, EPERM);

describe("DEL: only not-found means already gone", () => {
  test("redirect filters: a failed dump or delete is an error; a vanished device is not", () => {
    const nl = new ScriptedNl();
    hooked(nl, 5, 9);
    nl.fail.filterList = eperm(RTM_GETTFILTER);
    expect(() => removeRedirects(nl.nl, 5, 9)).toThrow(/EPERM/);
    expect(() => redirectsTo(nl.nl, 5, 9)).toThrow(/EPERM/);
    nl.fail.filterList = new NetlinkError(RTM_GETTFILTER, ENODEV);
    expect(() => removeRedirects(nl.nl, 5, 9)).not.toThrow();
    expect(redirectsTo(nl.nl, 5, 9)).toBe(false);
    delete nl.fail.filterList;
    nl.fail.filterDel = eperm(RTM_DELTFILTER);
    expect(() => removeRedirects(nl.nl, 5, 9)).toThrow(/EPERM/);
    nl.fail.filterDel = new NetlinkError(RTM_DELTFILTER, ENOENT);
    expect(() => removeRedirects(nl.nl, 5, 9)).not.toThrow();
    delete nl.fail.filterDel;
    nl.deleted = [];
    removeRedirects(nl.nl, 5, 9);
    expect(nl.deleted).toEqual(["filter 5 prio 1", "qdisc 5 ingress"]);
  });
  test("redirect filters: only ours towards the given IFB (all of ours once the IFB is unknown)", () => {
    const nl = new ScriptedNl();
    hooked(nl, 5, 9);
    removeRedirects(nl.nl, 5, 10);
    expect(nl.deleted).toEqual([]);
    removeRedirects(nl.nl, 5, undefined);
    expect(nl.deleted).toEqual(["filter 5 prio 1", "qdisc 5 ingress"]);
  });
  test("ingress qdisc: removed with our last filter (hash table nodes of that priority included); kept for other filters, and a clsact always", () => {
    const nl = new ScriptedNl();
    hooked(nl, 5, 9);
    const { classId: _, ...node } = nl.filters[0]!;
    nl.filters.push({ ...node, handle: 0x800000, actions: [] }); // the u32 ht node of prio 1
    removeRedirects(nl.nl, 5, 9);
    expect(nl.deleted).toEqual(["filter 5 prio 1", "qdisc 5 ingress"]);

    const other = new ScriptedNl();
    hooked(other, 5, 9);
    other.filters.push({ ...other.filters[0]!, priority: 2, actions: [] }); // somebody else's
    removeRedirects(other.nl, 5, 9);
    expect(other.deleted).toEqual(["filter 5 prio 1"]);

    const clsact = new ScriptedNl();
    hooked(clsact, 5, 9);
    clsact.qdiscs[0]!.kind = "clsact";
    clsact.filters[0]!.parent = tcHandle(0xffff, 0xfff2);
    removeRedirects(clsact.nl, 5, 9);
    expect(clsact.deleted).toEqual(["filter 5 prio 1"]);

    const failing = new ScriptedNl();
    hooked(failing, 5, 9);
    failing.fail.qdiscDel = eperm(RTM_DELQDISC);
    expect(() => removeRedirects(failing.nl, 5, 9)).toThrow(/EPERM/);
    failing.fail.qdiscDel = new NetlinkError(RTM_DELQDISC, ENOENT);
    expect(() => removeRedirects(failing.nl, 5, 9)).not.toThrow();
  });
  test("root qdisc: ours only; a failed delete is an error", () => {
    const nl = new ScriptedNl();
    nl.qdiscs.push({ index: 5, handle: tcHandle(1, 0), parent: TC_H_ROOT, info: 0, kind: "fq_codel" });
    removeRootQdisc(nl.nl, 5);
    expect(nl.deleted).toEqual([]);
    nl.qdiscs[0]!.kind = "tbf";
    nl.fail.qdiscDel = eperm(RTM_DELQDISC);
    expect(() => removeRootQdisc(nl.nl, 5)).toThrow(/EPERM/);
    nl.fail.qdiscDel = new NetlinkError(RTM_DELQDISC, ENOENT);
    expect(() => removeRootQdisc(nl.nl, 5)).not.toThrow();
  });
});

describe("site", () => {
  const eth0 = link(2, "eth0", { kind: "veth", parentIndex: 7 });
  const hostVeth = link(7, "veth1234", { kind: "veth", parentIndex: 2 });
  const listed = [{ name: "veth1234" }, { name: "eth0", sandbox: "/proc/1/ns/net" }];

  function site(container: Link, host: Link[], interfaces: { name: string; sandbox?: string }[]) {
    const c = new ScriptedNl();
    const h = new ScriptedNl();
    h.links = host;
    return { s: findSite(container, c.nl, h.nl, hostInterfaceNames(interfaces)), c, h };
  }

  test("a veth whose peer is a listed host interface: the host veth (upstream's path)", () => {
    const { s, h } = site(eth0, [hostVeth], listed);
    expect(s.where).toBe("host");
    expect(s.dev).toBe(hostVeth);
    expect(s.nl).toBe(h.nl);
  });
  test("a prevResult without host-side interfaces: the container interface, even with a host peer", () => {
    expect(site(eth0, [hostVeth], []).s).toMatchObject({ where: "container", dev: eth0 });
  });
  test("a host-side name no link can have is refused with code 7 naming the field; a sandboxed one is not looked at", () => {
    for (const [bad, why] of [["veth1234\u0000", "NUL"], ["veth1234567890123", "15 bytes"], ["a/b", '"/"'], ["..", '".."'], ["", "empty"]] as const) {
      let err: unknown;
      try {
        hostInterfaceNames([{ name: "eth0", sandbox: "/x" }, { name: bad }]);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CniError);
      expect((err as CniError).code).toBe(7);
      expect((err as CniError).message).toStartWith("prevResult.interfaces[1].name ");
      expect((err as CniError).message).toContain(why);
    }
    expect([...hostInterfaceNames([{ name: "a/b", sandbox: "/x" }, { name: "veth1234" }])]).toEqual(["veth1234"]);
  });
  test("otherwise the container interface: not a veth, peer not in the host, not listed, or not really the peer", () => {
    const macvlan = link(2, "eth0", { kind: "macvlan", parentIndex: 3 });
    expect(site(macvlan, [link(3, "eth1")], listed).s).toMatchObject({ where: "container", dev: macvlan });
    expect(site(eth0, [], listed).s.where).toBe("container");
    expect(site(eth0, [hostVeth], [{ name: "eth0", sandbox: "/x" }]).s.where).toBe("container");
    expect(site(eth0, [hostVeth], [{ name: "veth1234", sandbox: "/x" }]).s.where).toBe("container");
    expect(site(eth0, [link(7, "veth1234", { kind: "veth", parentIndex: 99 })], listed).s.where).toBe("container");
    expect(site(eth0, [link(7, "eth9")], listed).s.where).toBe("container");
  });
  test("a failed peer lookup is an error, not a different site", () => {
    const h = new ScriptedNl();
    h.fail.linkByIndex = eperm(RTM_GETLINK);
    expect(() => findSite(eth0, new ScriptedNl().nl, h.nl, hostInterfaceNames(listed))).toThrow(/EPERM/);
  });
  test("hooks: the host veth sends towards the container, the container interface sends from it", () => {
    const bw = { ingress: { rate: 8000, burst: 80 }, egress: { rate: 16000, burst: 160 } };
    expect(shapingsOf("host", bw)).toEqual([
      { hook: "root", limit: bw.ingress, field: "src" },
      { hook: "ifb", limit: bw.egress, field: "dst" },
    ]);
    expect(shapingsOf("container", bw)).toEqual([
      { hook: "ifb", limit: bw.ingress, field: "src" },
      { hook: "root", limit: bw.egress, field: "dst" },
    ]);
    expect(shapingsOf("container", { ingress: undefined, egress: bw.egress })).toEqual([{ hook: "root", limit: bw.egress, field: "dst" }]);
  });
  test("an ipvlan in l3s mode cannot limit ingress (code 2); egress, and other modes, are fine", () => {
    const bw = { ingress: { rate: 8000, burst: 80 }, egress: undefined };
    const l3s = { where: "container" as const, nl: new ScriptedNl().nl, dev: link(2, "eth0", { kind: "ipvlan", ipvlanMode: IPVLAN_MODE_L3S }) };
    let err: unknown;
    try {
      refuseUnshapeable(l3s, shapingsOf("container", bw));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CniError);
    expect((err as CniError).code).toBe(2);
    expect((err as CniError).message).toContain("ingressRate");
    expect(() => refuseUnshapeable(l3s, shapingsOf("container", { ingress: undefined, egress: bw.ingress }))).not.toThrow();
    const l2 = { ...l3s, dev: { ...l3s.dev, ipvlanMode: IPVLAN_MODE_L2 } };
    expect(() => refuseUnshapeable(l2, shapingsOf("container", bw))).not.toThrow();
  });
});

describe("GC attribution", () => {
  test("the alias names the attachment; the name must be the one the network gives it", () => {
    expect(ifbOwner(ifbAlias("c1", "eth0"))).toEqual({ containerID: "c1", ifName: "eth0" });
    expect(ifbOwner("cni-bandwidth c1")).toBeUndefined();
    expect(ifbOwner("cni-bandwidth  eth0")).toBeUndefined();
    expect(ifbOwner("something else")).toBeUndefined();
    expect(ifbOwner(undefined)).toBeUndefined();
    const alias = ifbAlias("c1", "eth1");
    expect(ifbAttachment({ name: upstreamIfbName("net", "c1"), alias }, "net")).toEqual({ containerID: "c1", ifName: "eth1" });
    expect(ifbAttachment({ name: derivedIfbName("net", "c1", "eth1"), alias }, "net")).toEqual({ containerID: "c1", ifName: "eth1" });
    expect(ifbAttachment({ name: upstreamIfbName("other", "c1"), alias }, "net")).toBeUndefined();
    // upstream's hash of network + containerID is ambiguous ("ne"+"tc1" = "net"+"c1"); the alias is not
    expect(upstreamIfbName("ne", "tc1")).toBe(upstreamIfbName("net", "c1"));
    expect(ifbAttachment({ name: upstreamIfbName("ne", "tc1"), alias: ifbAlias("tc1", "eth0") }, "net")).toBeUndefined();
    expect(ifbAttachment({ name: upstreamIfbName("net", "c1") }, "net")).toBeUndefined();
  });
  test("stale IFBs: this network's, not valid; another network's and Go's stay", () => {
    const nl = new ScriptedNl();
    const ifb = (index: number, name: string, alias?: string) => link(index, name, { kind: "ifb", ...(alias ? { alias } : {}) });
    nl.links = [
      ifb(10, upstreamIfbName("A", "c1"), ifbAlias("c1", "eth0")), // valid
      ifb(11, derivedIfbName("A", "c1", "eth1"), ifbAlias("c1", "eth1")), // stale
      ifb(12, upstreamIfbName("A", "c2"), ifbAlias("c2", "eth0")), // stale
      ifb(13, upstreamIfbName("B", "c2"), ifbAlias("c2", "eth0")), // network B
      ifb(14, upstreamIfbName("A", "c3")), // Go: no alias
      link(15, upstreamIfbName("A", "c4"), { kind: "dummy", alias: ifbAlias("c4", "eth0") }), // not an IFB
    ];
    expect(staleIfbs(nl.nl, "A", [{ containerID: "c1", ifName: "eth0" }]).map((l) => l.index)).toEqual([11, 12]);
    expect(staleIfbs(nl.nl, "A", [{ containerID: "c1", ifName: "eth0" }, { containerID: "c1", ifName: "eth1" }, { containerID: "c2", ifName: "eth0" }])).toEqual([]);
    expect(staleIfbs(nl.nl, "B", []).map((l) => l.index)).toEqual([13]);
  });
  test("redirect sources: devices whose ingress hook redirects into the given IFBs", () => {
    const nl = new ScriptedNl();
    hooked(nl, 5, 11);
    hooked(nl, 6, 12);
    nl.qdiscs.push({ index: 7, handle: tcHandle(1, 0), parent: TC_H_ROOT, info: 0, kind: "tbf" });
    expect(redirectSources(nl.nl, new Set([11]))).toEqual(new Map([[11, [5]]]));
    nl.fail.filterList = eperm(RTM_GETTFILTER);
    expect(() => redirectSources(nl.nl, new Set([11]))).toThrow(/EPERM/);
  });
});
