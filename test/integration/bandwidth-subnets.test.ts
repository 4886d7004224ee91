/**
 * bandwidth `unshapedSubnets` / `shapedSubnets` (our extension; upstream had the keys only in
 * v1.5.0–v1.5.1, reverted at HEAD), chained after ptp + host-local in the test's throwaway host
 * netns. Two "remote" peers live on the host's loopback: 10.99.1.1 and 10.99.2.1; the container
 * reaches both through its ptp gateway.
 * - real traffic in both directions: with unshapedSubnets = 10.99.1.0/24, traffic with 10.99.1.1
 *   runs unshaped while traffic with 10.99.2.1 is limited; the converse with shapedSubnets;
 * - the layout: HTB 1: (default class by mode), classes 1:30 (the limit) and 1:1 (uncapped), u32
 *   prefix filters (src on the host veth, dst on the IFB; IPv4 prio 16, IPv6 prio 15);
 * - CHECK (and its failures on a missing filter, a changed class, a TBF instead of the HTB), DEL
 *   (IFB and host-veth HTB gone), re-ADD over leftovers and over the other layout, validation
 *   (code 7), and the Go 1.1.1 plugin's DEL of our subnet layout.
 */
import { describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { ConflistRunner, type NetworkConfigList } from "../harness/conflist.ts";
import { execGoPlugin, execPlugin } from "../harness/exec-plugin.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { ptpConf } from "../harness/ptp-helpers.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import {
  addLoopbackAddress,
  bitRate,
  bwConf,
  expectLimited,
  expectUnshaped,
  fastestOf,
  goIfbName,
  htbClassesOf,
  linkExists,
  ptpAdd,
  qdiscsOf,
  tc,
  transferFromContainer,
  transferToContainer,
  u32FiltersOf,
} from "../harness/bandwidth-helpers.ts";

const NEAR = "10.99.1.1";
const FAR = "10.99.2.1";
const RATE = 1_000_000; // bit/s each way
const BURST = 8 * 8000; // bits (8000 bytes)
const SIZE = 300_000; // bytes: ~2.4 s at RATE
const LIMITS = { ingressRate: RATE, ingressBurst: BURST, egressRate: RATE, egressBurst: BURST };

let seq = 0;
function ids(tag: string): { cid: string; net: string; subnet: string } {
  seq++;
  return { cid: `bws-${tag}-${process.pid}-${seq}`, net: `bwsnet-${tag}-${seq}`, subnet: `10.72.${seq}.0/24` };
}

function list(net: string, subnet: string, bw: Record<string, unknown>, version = "1.0.0"): NetworkConfigList {
  const ptp = ptpConf({ cniVersion: version, name: net, dataDir: makeTempDir("bws-store-"), subnets: [subnet] });
  delete ptp.cniVersion;
  delete ptp.name;
  return { name: net, cniVersion: version, plugins: [ptp, { type: "bandwidth", ...bw }] };
}

function runner(): ConflistRunner {
  return new ConflistRunner({ cacheDir: makeTempDir("bws-cache-") });
}

function namesOf(result: Record<string, any>): { hostVeth: string; ifb: string | undefined; containerIp: string } {
  const ifaces = result.interfaces as { name: string }[];
  return {
    hostVeth: ifaces[0]!.name,
    ifb: ifaces.find((i) => i.name.startsWith("bwp"))?.name,
    containerIp: String((result.ips as any[])[0].address).split("/")[0]!,
  };
}

function rootOf(dev: string) {
  return qdiscsOf(dev).find((q) => q.root === true);
}

function bw(command: string, cid: string, netns: string, config: Record<string, unknown>) {
  return execPlugin("bandwidth", { command, containerID: cid, netns, ifName: "eth0", config });
}

describe.skipIf(!sandboxed())("bandwidth unshapedSubnets / shapedSubnets", () => {
  useFixtureCleanup();

  for (const mode of ["unshapedSubnets", "shapedSubnets"] as const) {
    test(`${mode}: real traffic in both directions, layout, CHECK, DEL`, async () => {
      addLoopbackAddress(`${NEAR}/32`);
      addLoopbackAddress(`${FAR}/32`);
      const ns = await createContainerNetns();
      const { cid, net, subnet } = ids(mode);
      const listed = mode === "unshapedSubnets" ? NEAR : FAR; // the listed peer: unshaped NEAR, or shaped FAR
      const r = runner();
      const l = list(net, subnet, { ...LIMITS, [mode]: [`${listed.replace(/\.1$/, ".0")}/24`, "2001:db8:99::/48"] });
      const rt = { containerID: cid, netns: ns.path, ifName: "eth0" };
      const result = await r.add(l, rt);
      const { hostVeth, ifb, containerIp } = namesOf(result);
      expect(ifb).toBe(goIfbName(net, cid));

      // layout: HTB on both devices, default class by mode, the two classes, prefix filters
      const listedClass = mode === "unshapedSubnets" ? "1:1" : "1:30";
      for (const [dev, field] of [[hostVeth, 12], [ifb!, 16]] as const) {
        expect(rootOf(dev)).toMatchObject({ kind: "htb", handle: "1:", options: { default: mode === "unshapedSubnets" ? "0x30" : "0x1" } });
        // the uncapped class's 64 KiB bucket is 78 ticks (4.99 us) at 100 Gbit/s; tc prints whole microseconds' worth
        expect(htbClassesOf(dev)).toEqual([
          { classid: "1:1", rate: "100Gbit", ceil: "100Gbit", burst: "50000b", cburst: "50000b" },
          { classid: "1:30", rate: "1Mbit", ceil: "1Mbit", burst: "8000b", cburst: "8000b" },
        ]);
        const v6Off = field === 12 ? 8 : 24; // src on the host veth, dst on the IFB
        expect(u32FiltersOf(dev, "1:")).toEqual([
          { protocol: "ipv6", pref: 15, flowid: listedClass, matches: [`20010db8/ffffffff at ${v6Off}`, `00990000/ffff0000 at ${v6Off + 4}`] },
          { protocol: "ip", pref: 16, flowid: listedClass, matches: [`${listed === NEAR ? "0a630100" : "0a630200"}/ffffff00 at ${field}`] },
        ]);
      }
      await r.check(l, rt);

      // real traffic: the listed peer is unshaped (unshapedSubnets) or the only one shaped (shapedSubnets)
      const fromNear = await fastestOf(RATE, () => transferFromContainer(ns.path, NEAR, SIZE));
      const fromFar = await transferFromContainer(ns.path, FAR, SIZE);
      const toNear = await fastestOf(RATE, () => transferToContainer(ns.path, containerIp, SIZE, NEAR));
      const toFar = await transferToContainer(ns.path, containerIp, SIZE, FAR);
      console.log(`${mode}: container→near ${bitRate(fromNear)}, container→far ${bitRate(fromFar)}, near→container ${bitRate(toNear)}, far→container ${bitRate(toFar)}`);
      // unshapedSubnets lists 10.99.1.0/24 and shapedSubnets lists 10.99.2.0/24: either way the
      // near peer runs unshaped and the far one is limited, through a different default class
      expectUnshaped(fromNear, RATE, SIZE, "container → 10.99.1.1");
      expectUnshaped(toNear, RATE, SIZE, "10.99.1.1 → container");
      expectLimited(fromFar, RATE, SIZE, "container → 10.99.2.1");
      expectLimited(toFar, RATE, SIZE, "10.99.2.1 → container");

      await r.del(l, rt);
      expect(linkExists(ifb!)).toBe(false);
      expect(linkExists(hostVeth)).toBe(false);
      await ns.destroy();
    }, 120_000);
  }

  test("CHECK fails on a missing filter, a changed class and the TBF layout; re-ADD and DEL clean up", async () => {
    const ns = await createContainerNetns();
    const { cid, net, subnet } = ids("chk");
    const prev = await ptpAdd(net, subnet, cid, ns.path);
    const limits = { ...LIMITS, unshapedSubnets: ["10.99.1.0/24", "10.98.0.0/16"] };
    const added = expectResult(await bw("ADD", cid, ns.path, bwConf(net, limits, prev)));
    const { hostVeth, ifb } = namesOf(added);
    const checkConf = bwConf(net, limits, added);
    expectSuccess(await bw("CHECK", cid, ns.path, checkConf));

    // the same limits as a TBF (no subnets) or other subnets: CHECK fails
    expectCniError(await bw("CHECK", cid, ns.path, bwConf(net, LIMITS, added)), { code: 999, msg: "Failed to find tbf qdisc" });
    expectCniError(await bw("CHECK", cid, ns.path, bwConf(net, { ...LIMITS, unshapedSubnets: ["10.99.1.0/24"] }, added)), {
      code: 999,
      msg: "subnet filters on",
    });
    expectCniError(await bw("CHECK", cid, ns.path, bwConf(net, { ...LIMITS, shapedSubnets: ["10.99.1.0/24", "10.98.0.0/16"] }, added)), {
      code: 999,
      msg: "Default class does not match",
    });

    tc("filter", "del", "dev", ifb!, "parent", "1:", "protocol", "ip", "prio", "16");
    expectCniError(await bw("CHECK", cid, ns.path, checkConf), { code: 999, msg: `subnet filters on ${ifb}` });
    tc("class", "change", "dev", hostVeth, "parent", "1:", "classid", "1:30", "htb", "rate", "2mbit", "burst", "8000");
    expectCniError(await bw("CHECK", cid, ns.path, checkConf), { code: 999, msg: "Rate doesn't match" });

    // a re-ADD (after a failed DEL) replaces the leftovers
    const readded = expectResult(await bw("ADD", cid, ns.path, bwConf(net, limits, prev)));
    expect(namesOf(readded).ifb).toBe(ifb);
    expectSuccess(await bw("CHECK", cid, ns.path, checkConf));
    // ... and a re-ADD without subnets puts back the upstream TBF
    const plain = expectResult(await bw("ADD", cid, ns.path, bwConf(net, LIMITS, prev)));
    expect(rootOf(hostVeth)).toMatchObject({ kind: "tbf", handle: "1:" });
    expectSuccess(await bw("CHECK", cid, ns.path, bwConf(net, LIMITS, plain)));
    // ... and back
    expectResult(await bw("ADD", cid, ns.path, bwConf(net, limits, prev)));
    expectSuccess(await bw("CHECK", cid, ns.path, checkConf));

    // DEL (the veth survives: ptp was invoked on its own) removes the host veth's HTB and the IFB; twice is fine
    for (let i = 0; i < 2; i++) expectSuccess(await bw("DEL", cid, ns.path, checkConf));
    expect(linkExists(ifb!)).toBe(false);
    expect(rootOf(hostVeth)?.kind).not.toBe("htb");
    expect(u32FiltersOf(hostVeth, "ffff:").length).toBe(0);
    await ns.destroy();
  }, 120_000);

  test("validation: both lists or a bad prefix fail ADD and CHECK with code 7; DEL still cleans up", async () => {
    const ns = await createContainerNetns();
    const { cid, net, subnet } = ids("val");
    const prev = await ptpAdd(net, subnet, cid, ns.path);
    const cases: [Record<string, unknown>, string][] = [
      [{ unshapedSubnets: ["10.0.0.0/8"], shapedSubnets: ["10.1.0.0/16"] }, "unshapedSubnets and shapedSubnets cannot be both specified, one of them should be discarded"],
      [{ unshapedSubnets: ["10.0.0.0/8", "nonsense"] }, 'bad subnet "nonsense" provided, details invalid CIDR address: nonsense'],
      [{ runtimeConfig: { bandwidth: { ...LIMITS, shapedSubnets: ["10.0.0.1"] } } }, 'bad subnet "10.0.0.1" provided'],
    ];
    for (const [extra, msg] of cases) {
      for (const command of ["ADD", "CHECK"]) {
        expectCniError(await bw(command, cid, ns.path, bwConf(net, { ...LIMITS, ...extra }, prev)), { code: 7, msg });
      }
    }
    // nothing was made; a DEL with the invalid config succeeds
    expect(linkExists(goIfbName(net, cid))).toBe(false);
    expectSuccess(await bw("DEL", cid, ns.path, bwConf(net, { ...LIMITS, ...cases[0]![0] }, prev)));
    await ns.destroy();
  }, 60_000);

  test("runtimeConfig: a static subnet list applies to the limits the runtime passes", async () => {
    const ns = await createContainerNetns();
    const { cid, net, subnet } = ids("rc");
    const r = runner();
    const l = list(net, subnet, { capabilities: { bandwidth: true }, shapedSubnets: ["10.99.2.0/24"] });
    const rt = { containerID: cid, netns: ns.path, ifName: "eth0", capabilityArgs: { bandwidth: { egressRate: 800000, egressBurst: 80000 } } };
    const result = await r.add(l, rt);
    const { hostVeth, ifb } = namesOf(result);
    expect(rootOf(hostVeth)?.kind).not.toBe("htb"); // no ingress limit
    expect(rootOf(ifb!)).toMatchObject({ kind: "htb", options: { default: "0x1" } });
    expect(htbClassesOf(ifb!).find((c) => c.classid === "1:30")).toMatchObject({ rate: "800Kbit", burst: "10000b" });
    expect(u32FiltersOf(ifb!, "1:")).toEqual([{ protocol: "ip", pref: 16, flowid: "1:30", matches: ["0a630200/ffffff00 at 16"] }]);
    await r.check(l, rt);
    await r.del(l, rt);
    expect(linkExists(ifb!)).toBe(false);
    await ns.destroy();
  }, 60_000);

  test.skipIf(!hasGoPlugin("bandwidth"))("the Go 1.1.1 plugin's DEL removes our subnet layout's IFB", async () => {
    const ns = await createContainerNetns();
    const { cid, net, subnet } = ids("go");
    const prev = await ptpAdd(net, subnet, cid, ns.path);
    const limits = { ...LIMITS, unshapedSubnets: ["10.99.1.0/24"] };
    const added = expectResult(await bw("ADD", cid, ns.path, bwConf(net, limits, prev)));
    const { ifb } = namesOf(added);
    expectSuccess(await execGoPlugin("bandwidth", { command: "DEL", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, limits, added) }));
    expect(linkExists(ifb!)).toBe(false);
    await ns.destroy();
  }, 60_000);
});
