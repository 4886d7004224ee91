/**
 * bandwidth GC (spec 1.1.0; upstream's plugin has none), in the test's throwaway host netns, with
 * ptp attachments on two networks:
 * - network A: cid1/eth0 (valid), cid1/eth1 (stale, its host veth still redirecting into its IFB),
 *   cid2/eth0 (stale, its netns destroyed without DEL), cid4/eth0 shaped by the Go plugin (stale,
 *   but its IFB has no owner alias, so it cannot be attributed and stays);
 * - network B: cid1/eth2 (same container, other network): never collected by A's GC.
 * A GC without `cni.dev/valid-attachments` collects nothing; GC is idempotent.
 */
import { describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execGoPlugin, execPlugin } from "../harness/exec-plugin.ts";
import { bothGcKeys, olderGcKey } from "../harness/gc-keys.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { bwConf, goIfbName, ifbLinks, ingressFiltersOf, ptpAdd } from "../harness/bandwidth-helpers.ts";

const LIMITS = { ingressRate: 800000, ingressBurst: 80000, egressRate: 800000, egressBurst: 80000 };

function gcConf(net: string, valid: { containerID: string; ifname: string }[] | undefined, version = "1.1.0"): Record<string, unknown> {
  return { cniVersion: version, name: net, type: "bandwidth", ...LIMITS, ...(valid === undefined ? {} : { "cni.dev/valid-attachments": valid }) };
}

function gc(config: Record<string, unknown>) {
  return execPlugin("bandwidth", { command: "GC", config });
}

describe.skipIf(!sandboxed())("bandwidth GC", () => {
  useFixtureCleanup();

  test("collects this network's IFBs of stale attachments only; redirects into them are removed first", async () => {
    const tag = `${process.pid}`;
    const netA = `bwgcA-${tag}`;
    const netB = `bwgcB-${tag}`;
    const [cid1, cid2, cid4] = [`gc1-${tag}`, `gc2-${tag}`, `gc4-${tag}`];
    const ns1 = await createContainerNetns();
    const ns2 = await createContainerNetns();
    const ns4 = await createContainerNetns();

    const shaped: Record<string, { ifb: string; hostVeth: string; result: Record<string, any> }> = {};
    const attach = async (key: string, net: string, subnet: string, cid: string, netns: string, ifName: string, go = false) => {
      const prev = await ptpAdd(net, subnet, cid, netns, ifName);
      const run = await (go ? execGoPlugin : execPlugin)("bandwidth", { command: "ADD", containerID: cid, netns, ifName, config: bwConf(net, LIMITS, prev) });
      const r = expectResult(run);
      const ifb = (r.interfaces as { name: string }[]).at(-1)!.name;
      shaped[key] = { ifb, hostVeth: r.interfaces[0].name, result: r };
    };
    await attach("a1", netA, "10.74.1.0/24", cid1, ns1.path, "eth0");
    await attach("a1b", netA, "10.74.2.0/24", cid1, ns1.path, "eth1");
    await attach("a2", netA, "10.74.3.0/24", cid2, ns2.path, "eth0");
    await attach("b1", netB, "10.74.4.0/24", cid1, ns1.path, "eth2");
    const withGo = hasGoPlugin("bandwidth");
    if (withGo) await attach("a4", netA, "10.74.5.0/24", cid4, ns4.path, "eth0", true);

    expect(shaped.a1!.ifb).toBe(goIfbName(netA, cid1));
    expect(shaped.a1b!.ifb).not.toBe(shaped.a1!.ifb); // derived name for the second interface
    expect(shaped.b1!.ifb).toBe(goIfbName(netB, cid1));
    await ns2.destroy(); // cid2 leaks: its veth is gone, its IFB stays
    expect(ifbLinks()).toContain(shaped.a2!.ifb);
    const all = Object.values(shaped).map((s) => s.ifb);
    expect(ifbLinks()).toEqual(expect.arrayContaining(all));

    // no (or a malformed) valid-attachments list: nothing is collected
    expectSuccess(await gc(gcConf(netA, undefined)));
    expectSuccess(await gc({ ...gcConf(netA, []), "cni.dev/valid-attachments": [{ containerID: 5 }] }));
    expect(ifbLinks()).toEqual(expect.arrayContaining(all));
    // GC is a 1.1.0 command
    expectCniError(await gc(gcConf(netA, [], "1.0.0")), { code: 1, msg: "config version does not allow GC" });

    const validA = [{ containerID: cid1, ifname: "eth0" }];
    const everyA = [...validA, { containerID: cid1, ifname: "eth1" }, { containerID: cid2, ifname: "eth0" }];
    expectSuccess(await gc({ ...gcConf(netA, undefined), ...bothGcKeys(everyA, []) })); // the newer key wins
    expect(ifbLinks()).toEqual(expect.arrayContaining(all));
    expectSuccess(await gc({ ...gcConf(netA, undefined), ...olderGcKey(validA) }));
    const left = ifbLinks();
    expect(left).toContain(shaped.a1!.ifb);
    expect(left).not.toContain(shaped.a1b!.ifb);
    expect(left).not.toContain(shaped.a2!.ifb);
    expect(left).toContain(shaped.b1!.ifb); // another network's
    if (withGo) expect(left).toContain(shaped.a4!.ifb); // Go's IFB carries no owner
    // the stale eth1's host veth no longer redirects anywhere; the valid eth0's still does
    expect(ingressFiltersOf(shaped.a1b!.hostVeth)).toEqual([]);
    expect(ingressFiltersOf(shaped.a1!.hostVeth)[0].options.actions[0].to_dev).toBe(shaped.a1!.ifb);
    // the valid attachment is still whole
    expectSuccess(await execPlugin("bandwidth", { command: "CHECK", containerID: cid1, netns: ns1.path, ifName: "eth0", config: bwConf(netA, LIMITS, shaped.a1!.result) }));

    expectSuccess(await gc(gcConf(netA, validA))); // idempotent
    expectSuccess(await gc(gcConf(netB, [])));
    expect(ifbLinks()).not.toContain(shaped.b1!.ifb);
    expect(ifbLinks()).toContain(shaped.a1!.ifb);

    for (const [cid, ns, ifName, net] of [[cid1, ns1, "eth0", netA], [cid4, ns4, "eth0", netA]] as const) {
      expectSuccess(await execPlugin("bandwidth", { command: "DEL", containerID: cid, netns: ns.path, ifName, config: bwConf(net, LIMITS, undefined) }));
    }
    expect(ifbLinks().filter((n) => all.includes(n))).toEqual([]);
    await ns1.destroy();
    await ns4.destroy();
  });
});
