/**
 * bandwidth on the veth path (the host end of a ptp veth is shaped, as upstream does), chained after
 * ptp + host-local through the conflist runner, in the test's throwaway host netns:
 * - ADD/CHECK/DEL across spec versions: TBF on the host veth (`tc -s -j qdisc`: rate, burst, lat),
 *   ingress qdisc + u32 match-all filter redirecting to the IFB `bwp…`, TBF on the IFB, IFB in the
 *   result; DEL removes the IFB;
 * - ingress-only / egress-only, runtimeConfig `bandwidth`, static config winning over it;
 * - validation messages (ADD and DEL), CHECK failing on a changed qdisc and on a missing IFB;
 * - beyond upstream: two interfaces of one pod on one network, re-ADD after a failed DEL, an
 *   existing clsact qdisc on the host veth;
 * - interop with the Go plugin (/usr/lib/cni/bandwidth 1.1.1) in both directions;
 * - real throughput in both directions, limited to the configured rate within a tolerance.
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
  bwConf,
  goIfbName,
  ifbLinks,
  ingressFiltersOf,
  linkExists,
  ptpAdd,
  qdiscsOf,
  tbfOf,
  tc,
  transferBothWays,
  expectLimited,
  expectUnshaped,
  transferBothWaysUnshaped,
} from "../harness/bandwidth-helpers.ts";

let seq = 0;
function ids(tag: string): { cid: string; net: string; subnet: string } {
  seq++;
  return { cid: `bw-${tag}-${process.pid}-${seq}`, net: `bwnet-${tag}-${seq}`, subnet: `10.71.${seq}.0/24` };
}

const LIMITS = { ingressRate: 800000, ingressBurst: 80000, egressRate: 1600000, egressBurst: 160000 };

function list(net: string, subnet: string, version: string, bw: Record<string, unknown>): NetworkConfigList {
  const ptp = ptpConf({ cniVersion: version, name: net, dataDir: makeTempDir("bw-store-"), subnets: [subnet] });
  delete ptp.cniVersion;
  delete ptp.name;
  return { name: net, cniVersion: version, plugins: [ptp, { type: "bandwidth", ...bw }] };
}

function runner(): ConflistRunner {
  return new ConflistRunner({ cacheDir: makeTempDir("bw-cache-") });
}

/** Host veth and IFB of a result (ptp: interfaces[0] is the host veth). */
function namesOf(result: Record<string, any>): { hostVeth: string; ifb: string | undefined } {
  const ifaces = result.interfaces as { name: string; sandbox?: string }[];
  return { hostVeth: ifaces[0]!.name, ifb: ifaces.find((i) => i.name.startsWith("bwp"))?.name };
}

describe.skipIf(!sandboxed())("bandwidth", () => {
  useFixtureCleanup();

  for (const v of ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]) {
    test(`[${v}] ptp → bandwidth: TBF on the host veth, IFB with TBF and redirect; CHECK; DEL removes the IFB`, async () => {
      const { cid, net, subnet } = ids("ver");
      const ns = await createContainerNetns();
      const r = runner();
      const l = list(net, subnet, v, LIMITS);
      const rt = { containerID: cid, netns: ns.path, ifName: "eth0" };
      const result = await r.add(l, rt);
      const { hostVeth, ifb } = namesOf(result);
      expect(ifb).toBe(goIfbName(net, cid));
      expect((result.interfaces as any[]).at(-1)).toMatchObject({ name: ifb, mac: expect.stringMatching(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/) });

      // ingressRate 800000 / ingressBurst 80000 → tbf rate 800Kbit burst 10000b lat 25ms (as the Go plugin)
      expect(tbfOf(hostVeth)).toMatchObject({ handle: "1:", options: { rate: 100000, burst: 10000, lat: 25000 } });
      expect(qdiscsOf(hostVeth).some((q) => q.kind === "ingress" && q.handle === "ffff:")).toBe(true);
      const filters = ingressFiltersOf(hostVeth);
      expect(filters.length).toBe(1);
      expect(filters[0]).toMatchObject({ protocol: "all", pref: 1, kind: "u32", options: { flowid: "1:1", match: { value: "0", mask: "0" } } });
      expect(filters[0].options.actions).toMatchObject([{ kind: "mirred", mirred_action: "redirect", direction: "egress", to_dev: ifb }]);
      expect(tbfOf(ifb!)).toMatchObject({ handle: "1:", options: { rate: 200000, burst: 20000, lat: 25000 } });
      const ifbLink = JSON.parse(Bun.spawnSync(["ip", "-j", "link", "show", "dev", ifb!]).stdout.toString())[0];
      const vethLink = JSON.parse(Bun.spawnSync(["ip", "-j", "link", "show", "dev", hostVeth]).stdout.toString())[0];
      expect(ifbLink.flags).toContain("UP");
      expect(ifbLink.mtu).toBe(vethLink.mtu);

      if (!v.startsWith("0.3.")) await r.check(l, rt); // CHECK exists from 0.4.0
      await r.del(l, rt);
      expect(linkExists(ifb!)).toBe(false);
      expect(linkExists(hostVeth)).toBe(false);
      await ns.destroy();
    }, 60_000);
  }

  test("ingress only: no IFB, no ingress qdisc; egress only: no TBF on the host veth", async () => {
    const ns = await createContainerNetns();
    for (const [limits, expectIfb] of [
      [{ ingressRate: 8000, ingressBurst: 80 }, false],
      [{ egressRate: 8000, egressBurst: 80 }, true],
    ] as const) {
      const { cid, net, subnet } = ids("dir");
      const r = runner();
      const l = list(net, subnet, "1.0.0", limits);
      const rt = { containerID: cid, netns: ns.path, ifName: "eth0" };
      const result = await r.add(l, rt);
      const { hostVeth, ifb } = namesOf(result);
      if (expectIfb) {
        expect(ifb).toBeDefined();
        expect(tbfOf(hostVeth)).toBeUndefined();
        // rate 8000 bit/s, burst 80 bit → 1000 B/s, 10 B (bits, not bytes: PR #169)
        expect(tbfOf(ifb!)).toMatchObject({ options: { rate: 1000, burst: 10 } });
      } else {
        expect(ifb).toBeUndefined();
        expect(ifbLinks()).not.toContain(goIfbName(net, cid));
        expect(qdiscsOf(hostVeth).some((q) => q.kind === "ingress")).toBe(false);
        expect(tbfOf(hostVeth)).toMatchObject({ options: { rate: 1000, burst: 10 } });
      }
      await r.check(l, rt);
      await r.del(l, rt);
    }
    await ns.destroy();
  }, 60_000);

  test("runtimeConfig bandwidth is used only when no limit is in the static config", async () => {
    const ns = await createContainerNetns();
    const { cid, net, subnet } = ids("rc");
    const r = runner();
    const l = list(net, subnet, "1.0.0", { capabilities: { bandwidth: true } });
    const rt = {
      containerID: cid,
      netns: ns.path,
      ifName: "eth0",
      capabilityArgs: { bandwidth: { ingressRate: 1600000, ingressBurst: 16000, egressRate: 800000, egressBurst: 8000 } },
    };
    const result = await r.add(l, rt);
    const { hostVeth, ifb } = namesOf(result);
    expect(tbfOf(hostVeth)).toMatchObject({ options: { rate: 200000, burst: 2000 } });
    expect(tbfOf(ifb!)).toMatchObject({ options: { rate: 100000, burst: 1000 } });
    await r.check(l, rt);
    await r.del(l, rt);

    // static config wins entirely (even over the runtime's egress values)
    const b = ids("rc2");
    const l2 = list(b.net, b.subnet, "1.0.0", { capabilities: { bandwidth: true }, ingressRate: 8000, ingressBurst: 800 });
    const rt2 = { ...rt, containerID: b.cid };
    const result2 = await r.add(l2, rt2);
    const n2 = namesOf(result2);
    expect(n2.ifb).toBeUndefined();
    expect(tbfOf(n2.hostVeth)).toMatchObject({ options: { rate: 1000, burst: 100 } });
    await r.del(l2, rt2);
    await ns.destroy();
  }, 60_000);

  test("validation: upstream messages on ADD and DEL", async () => {
    const ns = await createContainerNetns();
    const cases: [Record<string, unknown>, string][] = [
      [{ ingressRate: 1000 }, "if rate is set, burst must also be set"],
      [{ egressBurst: 1000 }, "if burst is set, rate must also be set"],
      [{ egressRate: 1000, egressBurst: 8 * 4294967295 }, "burst cannot be more than 4GB"],
      [{ runtimeConfig: { bandwidth: { ingressRate: 5 } } }, "if rate is set, burst must also be set"],
    ];
    for (const [limits, msg] of cases) {
      for (const command of ["ADD", "DEL"]) {
        const run = await execPlugin("bandwidth", { command, containerID: "c", netns: ns.path, ifName: "eth0", config: bwConf("n", limits, undefined) });
        expectCniError(run, { code: 7, msg });
      }
    }
    const neg = await execPlugin("bandwidth", { command: "ADD", containerID: "c", netns: ns.path, ifName: "eth0", config: bwConf("n", { ingressRate: -1, ingressBurst: 8 }, undefined) });
    expectCniError(neg, { code: 7, msg: "ingressRate" });
    // limits without prevResult
    const noPrev = await execPlugin("bandwidth", { command: "ADD", containerID: "c", netns: ns.path, ifName: "eth0", config: bwConf("n", LIMITS, undefined) });
    expectCniError(noPrev, { code: 999, msg: "must be called as chained plugin" });
    await ns.destroy();
  }, 60_000);

  test("CHECK fails on a changed TBF and on a missing IFB", async () => {
    const ns = await createContainerNetns();
    const { cid, net, subnet } = ids("chk");
    const prev = await ptpAdd(net, subnet, cid, ns.path);
    const conf = bwConf(net, LIMITS, prev);
    const added = expectResult(await execPlugin("bandwidth", { command: "ADD", containerID: cid, netns: ns.path, ifName: "eth0", config: conf }));
    const { hostVeth, ifb } = namesOf(added);
    const checkConf = bwConf(net, LIMITS, added);
    expectSuccess(await execPlugin("bandwidth", { command: "CHECK", containerID: cid, netns: ns.path, ifName: "eth0", config: checkConf }));

    tc("qdisc", "replace", "dev", hostVeth, "root", "handle", "1:", "tbf", "rate", "900kbit", "burst", "10000", "limit", "12500");
    expectCniError(await execPlugin("bandwidth", { command: "CHECK", containerID: cid, netns: ns.path, ifName: "eth0", config: checkConf }), {
      code: 999,
      msg: "Rate doesn't match",
    });
    // a re-ADD (as after a failed DEL) replaces the leftover qdisc and IFB instead of "file exists"
    const readded = expectResult(await execPlugin("bandwidth", { command: "ADD", containerID: cid, netns: ns.path, ifName: "eth0", config: conf }));
    expect(namesOf(readded).ifb).toBe(ifb);
    expect(ifbLinks().filter((n) => n === ifb).length).toBe(1);
    expect(ingressFiltersOf(hostVeth).length).toBe(1);
    expectSuccess(await execPlugin("bandwidth", { command: "CHECK", containerID: cid, netns: ns.path, ifName: "eth0", config: checkConf }));

    Bun.spawnSync(["ip", "link", "del", ifb!]);
    expectCniError(await execPlugin("bandwidth", { command: "CHECK", containerID: cid, netns: ns.path, ifName: "eth0", config: checkConf }), {
      code: 999,
      msg: "get ifb device: Link not found",
    });
    // DEL with the IFB already gone is fine, twice; it also clears the host veth's shaping
    for (let i = 0; i < 2; i++) {
      expectSuccess(await execPlugin("bandwidth", { command: "DEL", containerID: cid, netns: ns.path, ifName: "eth0", config: checkConf }));
    }
    expect(tbfOf(hostVeth)).toBeUndefined();
    expect(ingressFiltersOf(hostVeth).length).toBe(0);
    await ns.destroy();
    // netns gone: DEL still succeeds
    expectSuccess(await execPlugin("bandwidth", { command: "DEL", containerID: cid, netns: ns.path, ifName: "eth0", config: checkConf }));
  }, 60_000);

  test("two interfaces of one pod on one network get distinct IFBs; DEL of one keeps the other", async () => {
    const ns = await createContainerNetns();
    const { cid, net, subnet } = ids("two");
    const b = ids("two-b");
    const results: Record<string, any>[] = [];
    for (const [ifName, sn] of [["eth0", subnet], ["eth1", b.subnet]] as const) {
      const prev = await ptpAdd(net, sn, cid, ns.path, ifName);
      results.push(expectResult(await execPlugin("bandwidth", { command: "ADD", containerID: cid, netns: ns.path, ifName, config: bwConf(net, LIMITS, prev) })));
    }
    const [a0, a1] = results.map(namesOf);
    expect(a0!.ifb).toBe(goIfbName(net, cid));
    expect(a1!.ifb).toMatch(/^bwp[0-9a-f]{12}$/);
    expect(a1!.ifb).not.toBe(a0!.ifb);
    expect(ingressFiltersOf(a1!.hostVeth)[0].options.actions[0].to_dev).toBe(a1!.ifb);
    for (const [i, ifName] of ["eth0", "eth1"].entries()) {
      expectSuccess(await execPlugin("bandwidth", { command: "CHECK", containerID: cid, netns: ns.path, ifName, config: bwConf(net, LIMITS, results[i]) }));
    }
    expectSuccess(await execPlugin("bandwidth", { command: "DEL", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, results[0]) }));
    expect(linkExists(a0!.ifb!)).toBe(false);
    expect(linkExists(a1!.ifb!)).toBe(true);
    expectSuccess(await execPlugin("bandwidth", { command: "CHECK", containerID: cid, netns: ns.path, ifName: "eth1", config: bwConf(net, LIMITS, results[1]) }));
    expectSuccess(await execPlugin("bandwidth", { command: "DEL", containerID: cid, netns: ns.path, ifName: "eth1", config: bwConf(net, LIMITS, results[1]) }));
    expect(linkExists(a1!.ifb!)).toBe(false);
    await ns.destroy();
  }, 60_000);

  test("an existing clsact qdisc on the host veth is reused (upstream #894)", async () => {
    const ns = await createContainerNetns();
    const { cid, net, subnet } = ids("clsact");
    const prev = await ptpAdd(net, subnet, cid, ns.path);
    tc("qdisc", "add", "dev", prev.interfaces[0].name, "clsact");
    const added = expectResult(await execPlugin("bandwidth", { command: "ADD", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, prev) }));
    const { hostVeth, ifb } = namesOf(added);
    expect(qdiscsOf(hostVeth).filter((q) => q.handle === "ffff:").map((q) => q.kind)).toEqual(["clsact"]);
    expect(ingressFiltersOf(hostVeth)[0].options.actions[0].to_dev).toBe(ifb);
    expectSuccess(await execPlugin("bandwidth", { command: "CHECK", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, added) }));
    expectSuccess(await execPlugin("bandwidth", { command: "DEL", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, added) }));
    expect(linkExists(ifb!)).toBe(false);
    await ns.destroy();
  }, 60_000);

  describe.skipIf(!hasGoPlugin("bandwidth"))("interop with the Go plugin", () => {
    test("Go ADD → our CHECK and DEL (IFB, filter and TBF removed)", async () => {
      const ns = await createContainerNetns();
      const { cid, net, subnet } = ids("go1");
      const prev = await ptpAdd(net, subnet, cid, ns.path);
      const added = expectResult(await execGoPlugin("bandwidth", { command: "ADD", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, prev) }));
      const { hostVeth, ifb } = namesOf(added);
      expect(ifb).toBe(goIfbName(net, cid));
      expectSuccess(await execPlugin("bandwidth", { command: "CHECK", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, added) }));
      expectSuccess(await execPlugin("bandwidth", { command: "DEL", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, added) }));
      expect(linkExists(ifb!)).toBe(false);
      expect(tbfOf(hostVeth)).toBeUndefined();
      expect(ingressFiltersOf(hostVeth).length).toBe(0);
      await ns.destroy();
    }, 60_000);

    test("our ADD → Go CHECK and DEL", async () => {
      const ns = await createContainerNetns();
      const { cid, net, subnet } = ids("go2");
      const prev = await ptpAdd(net, subnet, cid, ns.path);
      const added = expectResult(await execPlugin("bandwidth", { command: "ADD", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, prev) }));
      const { ifb } = namesOf(added);
      expectSuccess(await execGoPlugin("bandwidth", { command: "CHECK", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, added) }));
      expectSuccess(await execGoPlugin("bandwidth", { command: "DEL", containerID: cid, netns: ns.path, ifName: "eth0", config: bwConf(net, LIMITS, added) }));
      expect(linkExists(ifb!)).toBe(false);
      await ns.destroy();
    }, 60_000);
  });

  test("real throughput is limited to the configured rate in both directions", async () => {
    const ns = await createContainerNetns();
    const { cid, net, subnet } = ids("tput");
    const RATE = 1_000_000; // 1 Mbit/s each way
    const BURST = 8 * 8000; // 8000 bytes
    const r = runner();
    const l = list(net, subnet, "1.0.0", { ingressRate: RATE, ingressBurst: BURST, egressRate: RATE, egressBurst: BURST });
    const rt = { containerID: cid, netns: ns.path, ifName: "eth0" };
    const result = await r.add(l, rt);
    const containerIp = String((result.ips as any[])[0].address).split("/")[0]!;
    const hostIp = String((result.ips as any[])[0].gateway);
    const SIZE = 300_000; // ~2.4 s at 1 Mbit/s
    const shaped = await transferBothWays(`bandwidth throughput at ${RATE} bit/s`, ns.path, containerIp, hostIp, SIZE);
    for (const t of shaped) expectLimited(t, RATE, SIZE, "shaped");
    // the same transfers without shaping are far faster, so the limit is what we measured
    await r.del(l, rt);
    const b = ids("tput-free");
    const l2 = list(b.net, b.subnet, "1.0.0", {});
    const rt2 = { ...rt, containerID: b.cid };
    const free = await r.add(l2, rt2);
    const freeIps = (free.ips as any[])[0];
    const unshaped = await transferBothWaysUnshaped("bandwidth throughput unshaped", ns.path, String(freeIps.address).split("/")[0]!, String(freeIps.gateway), SIZE, RATE);
    for (const t of unshaped) expectUnshaped(t, RATE, SIZE, "unshaped");
    await r.del(l2, rt2);
    await ns.destroy();
  }, 120_000);
});
