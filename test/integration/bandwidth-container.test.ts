/**
 * bandwidth on interfaces without a host veth peer (beyond upstream, which fails: #413, #656):
 * the container interface is shaped from inside its netns. macvlan (bridge mode, on a veth master
 * whose peer carries the "host" address in the test's throwaway host netns) and host-device (a veth
 * end moved into the container: a host peer exists but is not a prevResult interface):
 * - layout: TBF `1:` at the root of eth0 for egress; an IFB in the container netns (upstream's
 *   name, our alias, eth0's MTU, up) with TBF `1:` for ingress, fed by a u32 match-all redirect on
 *   eth0's ingress hook; the IFB in the result with its sandbox; nothing in the host netns;
 * - ingress only / egress only; subnet lists (HTB on eth0 and on the IFB);
 * - CHECK and its failures; re-ADD over leftovers; DEL (also with the IFB or the netns gone);
 * - the Go 1.1.1 plugin refuses a macvlan (upstream behaviour) and its DEL of our ADD succeeds;
 * - real throughput in both directions, limited to the configured rate within a tolerance.
 */
import { describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { ConflistRunner, type NetworkConfigList } from "../harness/conflist.ts";
import { execGoPlugin, execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { hostDeviceConf, hostVeth, uniqueName } from "../harness/host-device-helpers.ts";
import { detailedLink, ipIn, linkPluginConf, makeVethMaster } from "../harness/macvlan-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import {
  bwConf,
  goIfbName,
  htbClassesOf,
  ifbLinks,
  ingressFiltersOf,
  linkExists,
  qdiscsOf,
  tbfOf,
  tcIn,
  transferBothWays,
  expectLimited,
  expectUnshaped,
  transferBothWaysUnshaped,
  u32FiltersOf,
} from "../harness/bandwidth-helpers.ts";

let seq = 0;
function ids(tag: string): { cid: string; net: string; prefix: string } {
  seq++;
  return { cid: `bwc-${tag}-${process.pid}-${seq}`, net: `bwcnet-${tag}-${seq}`, prefix: `10.73.${seq}` };
}

const LIMITS = { ingressRate: 800000, ingressBurst: 80000, egressRate: 1600000, egressBurst: 160000 };

/**
 * A macvlan network on a fresh veth master; the master's peer gets `<prefix>.1` so the test's
 * netns reaches the container (`<prefix>.2`) through the master.
 */
function macvlanList(prefix: string, net: string, version: string, bw: Record<string, unknown>): NetworkConfigList {
  const master = makeVethMaster();
  ipIn(undefined, "addr", "add", `${prefix}.1/24`, "dev", master.peer);
  const mv = linkPluginConf({ type: "macvlan", name: net, dataDir: makeTempDir("bwc-store-"), subnet: `${prefix}.0/24`, master: master.name, mode: "bridge" });
  delete mv.cniVersion;
  delete mv.name;
  return { name: net, cniVersion: version, plugins: [mv, { type: "bandwidth", ...bw }] };
}

/** macvlan ADD on its own, for invoking bandwidth directly with a prevResult; `inv` builds eth0 invocations. */
async function macvlanAdd(prefix: string, net: string, cid: string, netns: string) {
  const mv = macvlanList(prefix, net, "1.0.0", {}).plugins[0]!;
  const prev = expectResult(await execPlugin("macvlan", { command: "ADD", containerID: cid, netns, ifName: "eth0", config: { ...mv, name: net, cniVersion: "1.0.0" } }));
  const inv = (command: string, config: unknown): PluginInvocation => ({ command, containerID: cid, netns, ifName: "eth0", config });
  return { prev, inv };
}

function runner(): ConflistRunner {
  return new ConflistRunner({ cacheDir: makeTempDir("bwc-cache-") });
}

/** The IFB entry of a result. */
function ifbOf(result: Record<string, any>): { name: string; mac?: string; sandbox?: string } | undefined {
  return (result.interfaces as { name: string }[]).find((i) => i.name.startsWith("bwp"));
}

/** eth0's qdiscs, filters and the container IFB are all gone. */
function expectNoShaping(netns: string, ifb: string): void {
  expect(tbfOf("eth0", netns)).toBeUndefined();
  expect(ingressFiltersOf("eth0", netns)).toEqual([]);
  expect(linkExists(ifb, netns)).toBe(false);
}

describe.skipIf(!sandboxed())("bandwidth inside the container netns", () => {
  useFixtureCleanup();

  for (const v of ["0.3.0", "0.4.0", "1.1.0"]) {
    test(`[${v}] macvlan → bandwidth: TBF on eth0, IFB in the container; ${v === "0.3.0" ? "" : "CHECK; "}DEL removes both`, async () => {
      const { cid, net, prefix } = ids("ver");
      const ns = await createContainerNetns();
      const r = runner();
      const l = macvlanList(prefix, net, v, LIMITS);
      const master = (l.plugins[0] as { master: string }).master;
      const hostIfbsBefore = ifbLinks();
      const rt = { containerID: cid, netns: ns.path, ifName: "eth0" };
      const result = await r.add(l, rt);
      const ifb = goIfbName(net, cid);
      expect((result.interfaces as any[]).at(-1)).toEqual({ name: ifb, mac: expect.stringMatching(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/), sandbox: ns.path });

      // egressRate 1600000 / egressBurst 160000 → TBF on eth0: 200000 B/s, 20000 B, 25 ms
      expect(tbfOf("eth0", ns.path)).toMatchObject({ handle: "1:", options: { rate: 200000, burst: 20000, lat: 25000 } });
      expect(qdiscsOf("eth0", ns.path).some((q) => q.kind === "ingress" && q.handle === "ffff:")).toBe(true);
      const filters = ingressFiltersOf("eth0", ns.path);
      expect(filters.length).toBe(1);
      expect(filters[0]).toMatchObject({ protocol: "all", pref: 1, kind: "u32", options: { flowid: "1:1", match: { value: "0", mask: "0" } } });
      expect(filters[0].options.actions).toMatchObject([{ kind: "mirred", mirred_action: "redirect", direction: "egress", to_dev: ifb }]);
      // ingressRate 800000 / ingressBurst 80000 → TBF on the IFB: 100000 B/s, 10000 B
      expect(tbfOf(ifb, ns.path)).toMatchObject({ handle: "1:", options: { rate: 100000, burst: 10000, lat: 25000 } });
      const ifbLink = detailedLink(ns.path, ifb)!;
      expect(ifbLink.flags).toContain("UP");
      expect(ifbLink.mtu).toBe(detailedLink(ns.path, "eth0")!.mtu);
      expect(ifbLink.ifalias).toBe(`cni-bandwidth ${cid} eth0`);
      // nothing in the host netns: no IFB, the master keeps its qdiscs
      expect(ifbLinks()).toEqual(hostIfbsBefore);
      expect(qdiscsOf(master).filter((q) => q.kind === "tbf" || q.kind === "ingress")).toEqual([]);

      if (v !== "0.3.0") await r.check(l, rt);
      await r.del(l, rt);
      expect(linkExists("eth0", ns.path)).toBe(false);
      expect(linkExists(ifb, ns.path)).toBe(false);
      await ns.destroy();
    });
  }

  test("ingress only: IFB and redirect, no TBF on eth0; egress only: TBF on eth0, no IFB, no ingress qdisc", async () => {
    for (const [limits, ingress] of [
      [{ ingressRate: 8000, ingressBurst: 80 }, true],
      [{ egressRate: 8000, egressBurst: 80 }, false],
    ] as const) {
      const { cid, net, prefix } = ids("dir");
      const ns = await createContainerNetns();
      const r = runner();
      const l = macvlanList(prefix, net, "1.0.0", limits);
      const rt = { containerID: cid, netns: ns.path, ifName: "eth0" };
      const result = await r.add(l, rt);
      const ifb = goIfbName(net, cid);
      if (ingress) {
        expect(ifbOf(result)?.name).toBe(ifb);
        expect(tbfOf("eth0", ns.path)).toBeUndefined();
        expect(tbfOf(ifb, ns.path)).toMatchObject({ options: { rate: 1000, burst: 10 } });
        expect(ingressFiltersOf("eth0", ns.path)[0].options.actions[0].to_dev).toBe(ifb);
      } else {
        expect(ifbOf(result)).toBeUndefined();
        expect(ifbLinks(ns.path)).toEqual([]);
        expect(qdiscsOf("eth0", ns.path).some((q) => q.kind === "ingress")).toBe(false);
        expect(tbfOf("eth0", ns.path)).toMatchObject({ options: { rate: 1000, burst: 10 } });
      }
      await r.check(l, rt);
      await r.del(l, rt);
      await ns.destroy();
    }
  });

  test("CHECK fails on a changed TBF and on a missing IFB; re-ADD replaces leftovers; DEL clears eth0 without the IFB, and without the netns", async () => {
    const { cid, net, prefix } = ids("chk");
    const ns = await createContainerNetns();
    const { prev, inv } = await macvlanAdd(prefix, net, cid, ns.path);
    const added = expectResult(await execPlugin("bandwidth", inv("ADD", bwConf(net, LIMITS, prev))));
    const ifb = ifbOf(added)!.name;
    const checkConf = bwConf(net, LIMITS, added);
    expectSuccess(await execPlugin("bandwidth", inv("CHECK", checkConf)));

    tcIn(ns.path, "qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "tbf", "rate", "900kbit", "burst", "10000", "limit", "12500");
    expectCniError(await execPlugin("bandwidth", inv("CHECK", checkConf)), { code: 999, msg: "Rate doesn't match" });
    const readded = expectResult(await execPlugin("bandwidth", inv("ADD", bwConf(net, LIMITS, prev))));
    expect(ifbOf(readded)?.name).toBe(ifb);
    expect(ifbLinks(ns.path)).toEqual([ifb]);
    expect(ingressFiltersOf("eth0", ns.path).length).toBe(1);
    expectSuccess(await execPlugin("bandwidth", inv("CHECK", checkConf)));

    ipIn(ns.path, "link", "del", ifb);
    expectCniError(await execPlugin("bandwidth", inv("CHECK", checkConf)), { code: 999, msg: "get ifb device: Link not found" });
    for (let i = 0; i < 2; i++) expectSuccess(await execPlugin("bandwidth", inv("DEL", checkConf)));
    expectNoShaping(ns.path, ifb);

    // DEL without a prevResult (spec 0.3.x) finds the site from the kernel alone
    expectResult(await execPlugin("bandwidth", inv("ADD", bwConf(net, LIMITS, prev))));
    expectSuccess(await execPlugin("bandwidth", inv("DEL", bwConf(net, LIMITS, undefined))));
    expectNoShaping(ns.path, ifb);
    await ns.destroy();
    expectSuccess(await execPlugin("bandwidth", inv("DEL", checkConf)));
  });

  test("subnet lists: HTB on eth0 (peer = destination) and on the container IFB (peer = source); CHECK; DEL", async () => {
    const { cid, net, prefix } = ids("subnets");
    const ns = await createContainerNetns();
    const { prev, inv } = await macvlanAdd(prefix, net, cid, ns.path);
    const limits = { ...LIMITS, shapedSubnets: ["10.99.0.0/16"] };
    const added = expectResult(await execPlugin("bandwidth", inv("ADD", bwConf(net, limits, prev))));
    const ifb = goIfbName(net, cid);
    for (const [dev, rate, offset] of [["eth0", "1600Kbit", 16], [ifb, "800Kbit", 12]] as const) {
      expect(qdiscsOf(dev, ns.path).find((q) => q.root === true)).toMatchObject({ kind: "htb", handle: "1:" });
      expect(htbClassesOf(dev, ns.path).map((c) => [c.classid, c.rate])).toEqual([["1:1", "100Gbit"], ["1:30", rate]]);
      // 10.99.0.0/16 at offset 12 (IPv4 source) on the IFB, 16 (destination) on eth0, into the limited class
      expect(u32FiltersOf(dev, "1:", ns.path)).toEqual([{ protocol: "ip", pref: 16, flowid: "1:30", matches: [`0a630000/ffff0000 at ${offset}`] }]);
    }
    expectSuccess(await execPlugin("bandwidth", inv("CHECK", bwConf(net, limits, added))));
    expectSuccess(await execPlugin("bandwidth", inv("DEL", bwConf(net, limits, added))));
    expect(qdiscsOf("eth0", ns.path).some((q) => q.kind === "htb")).toBe(false);
    expectNoShaping(ns.path, ifb);
    await ns.destroy();
  });

  test("host-device with a veth end: the host peer is not a prevResult interface, so the container side is shaped", async () => {
    const { cid, net, prefix } = ids("hostdev");
    const ns = await createContainerNetns();
    const dev = hostVeth(uniqueName("bwhd"));
    const r = runner();
    const hd = hostDeviceConf({ cniVersion: "1.0.0", top: { device: dev.name }, ipam: { dataDir: makeTempDir("bwc-store-"), subnet: `${prefix}.0/24` } });
    delete hd.cniVersion;
    delete hd.name;
    const l: NetworkConfigList = { name: net, cniVersion: "1.0.0", plugins: [hd, { type: "bandwidth", ...LIMITS }] };
    const rt = { containerID: cid, netns: ns.path, ifName: "eth0" };
    const result = await r.add(l, rt);
    const ifb = goIfbName(net, cid);
    expect(ifbOf(result)).toMatchObject({ name: ifb, sandbox: ns.path });
    expect(tbfOf("eth0", ns.path)).toMatchObject({ options: { rate: 200000 } });
    expect(tbfOf(ifb, ns.path)).toMatchObject({ options: { rate: 100000 } });
    expect(tbfOf(dev.peer)).toBeUndefined();
    expect(ingressFiltersOf(dev.peer)).toEqual([]);
    await r.check(l, rt);
    await r.del(l, rt);
    expect(linkExists(ifb, ns.path)).toBe(false);
    expect(tbfOf(dev.name)).toBeUndefined(); // back in the host, unshaped
    await ns.destroy();
  });

  describe.skipIf(!hasGoPlugin("bandwidth"))("interop with the Go plugin", () => {
    test("Go 1.1.1 refuses a macvlan (not a veth); its DEL of our ADD succeeds and leaves the netns to take the shaping with it", async () => {
      const { cid, net, prefix } = ids("go");
      const ns = await createContainerNetns();
      const { prev, inv } = await macvlanAdd(prefix, net, cid, ns.path);
      expectCniError(await execGoPlugin("bandwidth", inv("ADD", bwConf(net, LIMITS, prev))), { code: 999, msg: "has no veth peer" });
      const added = expectResult(await execPlugin("bandwidth", inv("ADD", bwConf(net, LIMITS, prev))));
      expectSuccess(await execGoPlugin("bandwidth", inv("DEL", bwConf(net, LIMITS, added))));
      expect(linkExists(ifbOf(added)!.name, ns.path)).toBe(true);
      await ns.destroy();
    });
  });

  test("real throughput on a macvlan is limited to the configured rate in both directions", async () => {
    const { cid, net, prefix } = ids("tput");
    const ns = await createContainerNetns();
    const RATE = 1_000_000; // 1 Mbit/s each way
    const BURST = 8 * 8000; // 8000 bytes
    const r = runner();
    const l = macvlanList(prefix, net, "1.0.0", { ingressRate: RATE, ingressBurst: BURST, egressRate: RATE, egressBurst: BURST });
    const rt = { containerID: cid, netns: ns.path, ifName: "eth0" };
    await r.add(l, rt);
    const containerIp = `${prefix}.2`;
    const hostIp = `${prefix}.1`;
    const SIZE = 300_000; // ~2.4 s at 1 Mbit/s
    const shaped = await transferBothWays(`bandwidth (macvlan) throughput at ${RATE} bit/s`, ns.path, containerIp, hostIp, SIZE);
    for (const t of shaped) expectLimited(t, RATE, SIZE, "shaped");
    // the same transfers without shaping are far faster, so the limit is what we measured
    await r.del(l, rt);
    const b = ids("tput-free");
    const l2: NetworkConfigList = { ...l, name: b.net, plugins: [l.plugins[0]!] };
    await r.add(l2, { ...rt, containerID: b.cid });
    const unshaped = await transferBothWaysUnshaped("bandwidth (macvlan) throughput unshaped", ns.path, containerIp, hostIp, SIZE, RATE);
    for (const t of unshaped) expectUnshaped(t, RATE, SIZE, "unshaped");
    await r.del(l2, { ...rt, containerID: b.cid });
    await ns.destroy();
  }, 120_000);
});
