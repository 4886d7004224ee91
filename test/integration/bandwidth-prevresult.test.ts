/**
 * bandwidth with a prevResult whose host-side interface is unusable, on a ptp veth (a real host
 * peer exists):
 * - a host-side name the kernel cannot have (a NUL byte, more than 15 bytes, `/`, `.`/`..`, `:`,
 *   white space, empty) is refused on ADD with code 7 naming the field, and nothing is created
 *   (upstream fails too: "no veth peer of container interface found in host ns");
 * - a prevResult that lists no host-side interface (`{}`, only the container interface, an
 *   `interface` index past the list, `ips` with null entries) is shaped from inside the container
 *   (the off-veth path);
 * - whatever ADD chose, DEL with the same, an empty or no prevResult removes everything ADD created
 *   — the container interface's and the host veth's qdiscs (the ingress `ffff:` included), filters,
 *   and both IFBs — and repeated ADD/DEL cycles in the same netns leave nothing.
 */
import { describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { bwConf, goIfbName, ifbLinks, ingressFiltersOf, ptpAdd, qdiscsOf } from "../harness/bandwidth-helpers.ts";

let seq = 0;
function ids(tag: string): { cid: string; net: string; subnet: string } {
  seq++;
  return { cid: `bwpr-${tag}-${process.pid}-${seq}`, net: `bwprnet-${tag}-${seq}`, subnet: `10.74.${seq}.0/24` };
}

const LIMITS = { ingressRate: 800000, ingressBurst: 80000, egressRate: 1600000, egressBurst: 160000 };

/** The qdiscs a device has that the kernel did not give it (noqueue is a veth's default). */
function addedQdiscs(dev: string, netns?: string): string[] {
  return qdiscsOf(dev, netns)
    .filter((q) => q.kind !== "noqueue")
    .map((q) => `${q.kind} ${q.handle}`);
}

/** Nothing of bandwidth on eth0 (container), on the host veth, and no IFB in either netns. */
function expectNothingLeft(netns: string, hostVeth: string, net: string, cid: string): void {
  const ifb = goIfbName(net, cid);
  expect({
    container: addedQdiscs("eth0", netns),
    containerFilters: ingressFiltersOf("eth0", netns),
    host: addedQdiscs(hostVeth),
    hostFilters: ingressFiltersOf(hostVeth),
    containerIfbs: ifbLinks(netns),
    hostIfb: ifbLinks().includes(ifb),
  }).toEqual({ container: [], containerFilters: [], host: [], hostFilters: [], containerIfbs: [], hostIfb: false });
}

async function setup(tag: string) {
  const { cid, net, subnet } = ids(tag);
  const ns = await createContainerNetns();
  const prev = await ptpAdd(net, subnet, cid, ns.path);
  const hostVeth = prev.interfaces[0].name as string;
  const inv = (command: string, config: unknown): PluginInvocation => ({ command, containerID: cid, netns: ns.path, ifName: "eth0", config });
  return { cid, net, ns, prev, hostVeth, inv };
}

describe.skipIf(!sandboxed())("bandwidth with an unusable prevResult", () => {
  useFixtureCleanup();

  const badNames: [string, (veth: string) => string, RegExp][] = [
    ["a NUL byte", (v) => `${v}\u0000x`, /NUL/],
    ["more than 15 bytes", (v) => `${v}-0123456789`, /15 bytes/],
    ["a slash", (v) => `${v}/x`, /"\/"/],
    ["..", () => "..", /"\.\."/],
    ["a colon", (v) => `${v}:1`, /":"/],
    ["white space", (v) => `${v} `, /white space/],
    ["nothing", () => "", /empty/],
  ];
  for (const [what, name, why] of badNames) {
    test(`ADD refuses a host-side interface name with ${what} (code 7 naming the field) and creates nothing`, async () => {
      const { cid, net, ns, prev, hostVeth, inv } = await setup("name");
      const bad = { ...prev, interfaces: [{ ...prev.interfaces[0], name: name(hostVeth) }, ...prev.interfaces.slice(1)] };
      const err = expectCniError(await execPlugin("bandwidth", inv("ADD", bwConf(net, LIMITS, bad))), { code: 7, msg: "prevResult.interfaces[0].name" });
      expect(err.msg).toMatch(why);
      expectNothingLeft(ns.path, hostVeth, net, cid);
      // DEL of the refused ADD succeeds (it does not need a usable prevResult)
      expectSuccess(await execPlugin("bandwidth", inv("DEL", bwConf(net, LIMITS, bad))), { silent: true });
      expectNothingLeft(ns.path, hostVeth, net, cid);
      await ns.destroy();
    });
  }

  const offVeth: [string, (prev: Record<string, any>) => Record<string, any>][] = [
    ["an empty prevResult object", () => ({})],
    ["only the container interface", (p) => ({ ...p, interfaces: [p.interfaces[1]] })],
    ["an ips interface index past the list", (p) => ({ ...p, interfaces: [p.interfaces[1]], ips: p.ips.map((ip: object) => ({ ...ip, interface: 7 })) })],
    ["ips with null entries and no host interface", (p) => ({ ...p, interfaces: [p.interfaces[1]], ips: [null, ...p.ips, null] })],
  ];
  for (const [what, prevOf] of offVeth) {
    test(`${what}: ADD shapes from inside the container; DEL (same, empty or no prevResult) removes everything, cycle after cycle`, async () => {
      const { cid, net, ns, prev, hostVeth, inv } = await setup("off");
      const given = prevOf(prev);
      for (const delPrev of [given, {}, undefined, prev]) {
        const added = expectResult(await execPlugin("bandwidth", inv("ADD", bwConf(net, LIMITS, given))));
        const ifb = goIfbName(net, cid);
        expect((added.interfaces as { name: string; sandbox?: string }[]).at(-1)).toMatchObject({ name: ifb, sandbox: ns.path });
        expect(addedQdiscs("eth0", ns.path).sort()).toEqual(["ingress ffff:", "tbf 1:"]);
        expect(addedQdiscs(hostVeth)).toEqual([]);
        expectSuccess(await execPlugin("bandwidth", inv("DEL", bwConf(net, LIMITS, delPrev))), { silent: true });
        expectNothingLeft(ns.path, hostVeth, net, cid);
      }
      await ns.destroy();
    });
  }

  test("ips with null entries beside the host veth: the host veth is shaped; DEL with an empty or no prevResult removes it all", async () => {
    const { cid, net, ns, prev, hostVeth, inv } = await setup("nullips");
    const given = { ...prev, ips: [null, ...prev.ips] };
    for (const delPrev of [given, {}, undefined]) {
      expectResult(await execPlugin("bandwidth", inv("ADD", bwConf(net, LIMITS, given))));
      expect(addedQdiscs(hostVeth).sort()).toEqual(["ingress ffff:", "tbf 1:"]);
      expect(ifbLinks()).toContain(goIfbName(net, cid));
      expect(addedQdiscs("eth0", ns.path)).toEqual([]);
      expectSuccess(await execPlugin("bandwidth", inv("DEL", bwConf(net, LIMITS, delPrev))), { silent: true });
      expectNothingLeft(ns.path, hostVeth, net, cid);
    }
    await ns.destroy();
  });

  test("DEL with a config that lost its limits still removes what ADD made (runtimeConfig not passed again)", async () => {
    const { cid, net, ns, hostVeth, inv } = await setup("nolimits");
    expectResult(await execPlugin("bandwidth", inv("ADD", bwConf(net, LIMITS, {}))));
    expectSuccess(await execPlugin("bandwidth", inv("DEL", bwConf(net, {}, undefined))), { silent: true });
    expectNothingLeft(ns.path, hostVeth, net, cid);
    await ns.destroy();
  });
});
