/**
 * bandwidth inside the container netns on an ipvlan — VM lane (this host's kernel has no ipvlan).
 * The ipvlan hangs off a veth master whose peer carries the "host" address in the test's netns.
 * - l2 (the default): TBF on eth0 for egress, an IFB in the container netns for ingress; CHECK;
 *   DEL; real throughput in both directions limited to the configured rate (tolerances as the
 *   host lane's, at a lower rate), far faster without shaping;
 * - l3s: received traffic bypasses the interface's tc ingress hook, so an ingress limit is refused
 *   (code 2, nothing created) while an egress-only limit is applied.
 */
import { expect, test } from "bun:test";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { ConflistRunner, type NetworkConfigList } from "../harness/conflist.ts";
import { execPlugin } from "../harness/exec-plugin.ts";
import { ipIn, linkPluginConf, makeVethMaster } from "../harness/macvlan-helpers.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { bwConf, expectLimited, expectUnshaped, goIfbName, ifbLinks, ingressFiltersOf, linkExists, qdiscsOf, tbfOf, transferBothWays, transferBothWaysUnshaped } from "../harness/bandwidth-helpers.ts";
import { describeVm, vmPluginCalls, type VmTestSetup } from "../harness/vm-lane.ts";

const { ids, setUp, inv } = vmPluginCalls("bwv", "eth0");

/** The test's ids, container netns and data dir, and the first three octets of its own /24 (`10.75.<n>`). */
async function setUpOwnSubnet(tag: string): Promise<VmTestSetup & { prefix: string }> {
  const s = await setUp(tag);
  return { ...s, prefix: `10.75.${s.n}` };
}

/** An ipvlan on a fresh veth master; the master's peer gets `<prefix>.1`, the container `<prefix>.2`. */
function ipvlanPlugin(prefix: string, mode: "l2" | "l3s", dataDir: string): Record<string, unknown> {
  const master = makeVethMaster();
  ipIn(undefined, "addr", "add", `${prefix}.1/24`, "dev", master.peer);
  const conf = linkPluginConf({ type: "ipvlan", name: "unused", dataDir, subnet: `${prefix}.0/24`, master: master.name, mode });
  delete conf.cniVersion;
  delete conf.name;
  return conf;
}

const LIMITS = { ingressRate: 800000, ingressBurst: 80000, egressRate: 1600000, egressBurst: 160000 };

describeVm("bandwidth on ipvlan (inside the container netns)", { kernel: ["ipvlan", "ifb"] }, () => {
  test("l2: TBF on eth0 and an IFB in the container, nothing in the host netns; CHECK; DEL", async () => {
    const { cid, net, prefix, ns, dataDir } = await setUpOwnSubnet("l2");
    const r = new ConflistRunner({ cacheDir: makeTempDir("bwv-cache-") });
    const l: NetworkConfigList = { name: net, cniVersion: "1.0.0", plugins: [ipvlanPlugin(prefix, "l2", dataDir), { type: "bandwidth", ...LIMITS }] };
    const rt = { containerID: cid, netns: ns.path, ifName: "eth0" };
    const hostIfbsBefore = ifbLinks();
    const result = await r.add(l, rt);
    const ifb = goIfbName(net, cid);
    expect((result.interfaces as any[]).at(-1)).toMatchObject({ name: ifb, sandbox: ns.path });
    expect(tbfOf("eth0", ns.path)).toMatchObject({ handle: "1:", options: { rate: 200000, burst: 20000 } });
    expect(tbfOf(ifb, ns.path)).toMatchObject({ handle: "1:", options: { rate: 100000, burst: 10000 } });
    expect(ingressFiltersOf("eth0", ns.path)[0].options.actions[0].to_dev).toBe(ifb);
    expect(ifbLinks()).toEqual(hostIfbsBefore);
    await r.check(l, rt);
    expectSuccess(await execPlugin("bandwidth", inv(ns.path, "DEL", bwConf(net, LIMITS, result), cid)));
    expect(tbfOf("eth0", ns.path)).toBeUndefined();
    expect(ingressFiltersOf("eth0", ns.path)).toEqual([]);
    expect(linkExists(ifb, ns.path)).toBe(false);
    await r.del(l, rt);
    await ns.destroy();
  });

  test("l2: real throughput is limited to the configured rate in both directions", async () => {
    const { cid, net, prefix, ns, dataDir } = await setUpOwnSubnet("tput");
    // lower than the host lane's 1 Mbit/s: unshaped traffic in the emulated VM is only a few Mbit/s
    const RATE = 500_000;
    const BURST = 8 * 8000; // 8000 bytes
    const SIZE = 150_000; // ~2.4 s at RATE
    const r = new ConflistRunner({ cacheDir: makeTempDir("bwv-cache-") });
    const ipvlan = ipvlanPlugin(prefix, "l2", dataDir);
    const l: NetworkConfigList = {
      name: net,
      cniVersion: "1.0.0",
      plugins: [ipvlan, { type: "bandwidth", ingressRate: RATE, ingressBurst: BURST, egressRate: RATE, egressBurst: BURST }],
    };
    const rt = { containerID: cid, netns: ns.path, ifName: "eth0" };
    await r.add(l, rt);
    const shaped = await transferBothWays(`bandwidth (ipvlan) throughput at ${RATE} bit/s`, ns.path, `${prefix}.2`, `${prefix}.1`, SIZE);
    for (const t of shaped) expectLimited(t, RATE, SIZE, "shaped");
    await r.del(l, rt);
    // the same transfers without shaping are far faster, so the limit is what we measured
    const b = ids("tput-free");
    const l2: NetworkConfigList = { name: b.net, cniVersion: "1.0.0", plugins: [ipvlan] };
    await r.add(l2, { ...rt, containerID: b.cid });
    const unshaped = await transferBothWaysUnshaped("bandwidth (ipvlan) throughput unshaped", ns.path, `${prefix}.2`, `${prefix}.1`, SIZE, RATE);
    for (const t of unshaped) expectUnshaped(t, RATE, SIZE, "unshaped");
    await r.del(l2, { ...rt, containerID: b.cid });
    await ns.destroy();
  }, 240_000);

  test("l3s: an ingress limit is refused (code 2, nothing created); an egress-only limit is applied", async () => {
    const { cid, net, prefix, ns, dataDir } = await setUpOwnSubnet("l3s");
    const ipvlan = { ...ipvlanPlugin(prefix, "l3s", dataDir), name: net, cniVersion: "1.0.0" };
    const prev = expectResult(await execPlugin("ipvlan", inv(ns.path, "ADD", ipvlan, cid)));
    const refused = await execPlugin("bandwidth", inv(ns.path, "ADD", bwConf(net, { ingressRate: 800000, ingressBurst: 80000, egressRate: 800000, egressBurst: 80000 }, prev), cid));
    expectCniError(refused, { code: 2, msg: "l3s" });
    expect(ifbLinks(ns.path)).toEqual([]);
    expect(qdiscsOf("eth0", ns.path).filter((q) => q.kind === "tbf" || q.kind === "ingress")).toEqual([]);

    const egress = { egressRate: 800000, egressBurst: 80000 };
    const added = expectResult(await execPlugin("bandwidth", inv(ns.path, "ADD", bwConf(net, egress, prev), cid)));
    expect(tbfOf("eth0", ns.path)).toMatchObject({ options: { rate: 100000, burst: 10000 } });
    expectSuccess(await execPlugin("bandwidth", inv(ns.path, "CHECK", bwConf(net, egress, added), cid)));
    expectSuccess(await execPlugin("bandwidth", inv(ns.path, "DEL", bwConf(net, egress, added), cid)));
    expect(tbfOf("eth0", ns.path)).toBeUndefined();
    expectSuccess(await execPlugin("ipvlan", inv(ns.path, "DEL", ipvlan, cid)));
    await ns.destroy();
  });
});
