/**
 * bandwidth inside the container netns on an ipvlan — VM lane (this host's kernel has no ipvlan).
 * The ipvlan hangs off a veth master whose peer carries the "host" address in the test's netns.
 * - l2 (the default): TBF on eth0 for egress, an IFB in the container netns for ingress; CHECK;
 *   DEL; real throughput in both directions limited to the configured rate (tolerances as the
 *   host lane's, at a lower rate), far faster without shaping;
 * - l3s: received traffic bypasses the interface's tc ingress hook, so an ingress limit is refused
 *   (code 2, nothing created) while an egress-only limit is applied.
 */
import { describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { ConflistRunner, type NetworkConfigList } from "../harness/conflist.ts";
import { execPlugin } from "../harness/exec-plugin.ts";
import { requireKernel } from "../harness/kernel.ts";
import { ipIn, linkPluginConf, makeVethMaster } from "../harness/macvlan-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import {
  bwConf,
  goIfbName,
  ifbLinks,
  ingressFiltersOf,
  linkExists,
  qdiscsOf,
  tbfOf,
  transferBothWays,
  expectLimited,
  expectUnshaped,
  transferBothWaysUnshaped,
} from "../harness/bandwidth-helpers.ts";

let seq = 0;
function ids(tag: string): { cid: string; net: string; prefix: string } {
  seq++;
  return { cid: `bwv-${tag}-${process.pid}-${seq}`, net: `bwvnet-${tag}-${seq}`, prefix: `10.75.${seq}` };
}

/** An ipvlan on a fresh veth master; the master's peer gets `<prefix>.1`, the container `<prefix>.2`. */
function ipvlanPlugin(prefix: string, mode: "l2" | "l3s"): Record<string, unknown> {
  const master = makeVethMaster();
  ipIn(undefined, "addr", "add", `${prefix}.1/24`, "dev", master.peer);
  const conf = linkPluginConf({ type: "ipvlan", name: "unused", dataDir: makeTempDir("bwv-store-"), subnet: `${prefix}.0/24`, master: master.name, mode });
  delete conf.cniVersion;
  delete conf.name;
  return conf;
}

const LIMITS = { ingressRate: 800000, ingressBurst: 80000, egressRate: 1600000, egressBurst: 160000 };

describe.skipIf(!sandboxed() || requireKernel("ipvlan", "ifb") !== undefined)("bandwidth on ipvlan (inside the container netns)", () => {
  useFixtureCleanup();

  test("l2: TBF on eth0 and an IFB in the container, nothing in the host netns; CHECK; DEL", async () => {
    const { cid, net, prefix } = ids("l2");
    const ns = await createContainerNetns();
    const r = new ConflistRunner({ cacheDir: makeTempDir("bwv-cache-") });
    const l: NetworkConfigList = { name: net, cniVersion: "1.0.0", plugins: [ipvlanPlugin(prefix, "l2"), { type: "bandwidth", ...LIMITS }] };
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
    expectSuccess(await execPlugin("bandwidth", { command: "DEL", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, result) }));
    expect(tbfOf("eth0", ns.path)).toBeUndefined();
    expect(ingressFiltersOf("eth0", ns.path)).toEqual([]);
    expect(linkExists(ifb, ns.path)).toBe(false);
    await r.del(l, rt);
    await ns.destroy();
  });

  test("l2: real throughput is limited to the configured rate in both directions", async () => {
    const { cid, net, prefix } = ids("tput");
    const ns = await createContainerNetns();
    // lower than the host lane's 1 Mbit/s: unshaped traffic in the emulated VM is only a few Mbit/s
    const RATE = 500_000;
    const BURST = 8 * 8000; // 8000 bytes
    const SIZE = 150_000; // ~2.4 s at RATE
    const r = new ConflistRunner({ cacheDir: makeTempDir("bwv-cache-") });
    const ipvlan = ipvlanPlugin(prefix, "l2");
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
    const { cid, net, prefix } = ids("l3s");
    const ns = await createContainerNetns();
    const ipvlan = { ...ipvlanPlugin(prefix, "l3s"), name: net, cniVersion: "1.0.0" };
    const prev = expectResult(await execPlugin("ipvlan", { command: "ADD", containerID: cid, netns: ns.path, ifName: "eth0", config: ipvlan }));
    const inv = (command: string, config: unknown) => ({ command, containerID: cid, netns: ns.path, ifName: "eth0", config });
    const refused = await execPlugin("bandwidth", inv("ADD", bwConf(net, { ingressRate: 800000, ingressBurst: 80000, egressRate: 800000, egressBurst: 80000 }, prev)));
    expectCniError(refused, { code: 2, msg: "l3s" });
    expect(ifbLinks(ns.path)).toEqual([]);
    expect(qdiscsOf("eth0", ns.path).filter((q) => q.kind === "tbf" || q.kind === "ingress")).toEqual([]);

    const egress = { egressRate: 800000, egressBurst: 80000 };
    const added = expectResult(await execPlugin("bandwidth", inv("ADD", bwConf(net, egress, prev))));
    expect(tbfOf("eth0", ns.path)).toMatchObject({ options: { rate: 100000, burst: 10000 } });
    expectSuccess(await execPlugin("bandwidth", inv("CHECK", bwConf(net, egress, added))));
    expectSuccess(await execPlugin("bandwidth", inv("DEL", bwConf(net, egress, added))));
    expect(tbfOf("eth0", ns.path)).toBeUndefined();
    expectSuccess(await execPlugin("ipvlan", inv("DEL", ipvlan)));
    await ns.destroy();
  });
});
