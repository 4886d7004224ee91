/**
 * bridge VLAN options (`vlan`, `vlanTrunk`, `preserveDefaultVlan`): runs only in the VM lane (Debian's stock kernel has bridge
 * vlan_filtering; the build host does not). Asserted with `bridge -j vlan show` and `ip -d -j link`.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { bridgeConfig, bridgePorts, linkDetails, ours, ping, reservationFiles, withPrevResult } from "../harness/bridge-helpers.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { addrsOf, findLink } from "../harness/ip-oracle.ts";
import { ipIn } from "../harness/macvlan-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { describeVm, vmPluginCalls } from "../harness/vm-lane.ts";

interface VlanShow {
  ifname: string;
  vlans: { vlan: number; vlanEnd?: number; flags?: string[] }[];
}

/** `bridge -j vlan show` in our (host) netns: ifname → [vid, flags] with ranges expanded. */
function portVlans(ifname: string): { vid: number; pvid: boolean; untagged: boolean }[] {
  const run = Bun.spawnSync(["bridge", "-j", "vlan", "show"], { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`bridge -j vlan show failed: ${run.stderr.toString()}`);
  const all = JSON.parse(run.stdout.toString() || "[]") as VlanShow[];
  const entry = all.find((e) => e.ifname === ifname);
  const out: { vid: number; pvid: boolean; untagged: boolean }[] = [];
  for (const v of entry?.vlans ?? []) {
    for (let vid = v.vlan; vid <= (v.vlanEnd ?? v.vlan); vid++) {
      out.push({ vid, pvid: v.flags?.includes("PVID") ?? false, untagged: v.flags?.includes("Egress Untagged") ?? false });
    }
  }
  return out;
}

const { setUp, inv } = vmPluginCalls("tvbr", "eth0");

describeVm("bridge VLANs (VM lane)", { kernel: ["bridge_vlan_filtering"] }, () => {
  const l2Cases: [string, Record<string, unknown>, { vid: number; pvid: boolean; untagged: boolean }[]][] = [
    ["vlan 100 (default VLAN removed)", { vlan: 100 }, [{ vid: 100, pvid: true, untagged: true }]],
    [
      "vlan 100 with preserveDefaultVlan",
      { vlan: 100, preserveDefaultVlan: true },
      [
        { vid: 1, pvid: false, untagged: true },
        { vid: 100, pvid: true, untagged: true },
      ],
    ],
    [
      "vlanTrunk 101,200~202",
      { vlanTrunk: [{ id: 101 }, { minID: 200, maxID: 202 }] },
      [
        { vid: 1, pvid: true, untagged: true },
        { vid: 101, pvid: false, untagged: false },
        { vid: 200, pvid: false, untagged: false },
        { vid: 201, pvid: false, untagged: false },
        { vid: 202, pvid: false, untagged: false },
      ],
    ],
    [
      "vlan 100 and vlanTrunk 101",
      { vlan: 100, vlanTrunk: [{ id: 101 }] },
      [
        { vid: 100, pvid: true, untagged: true },
        { vid: 101, pvid: false, untagged: false },
      ],
    ],
  ];

  for (const [name, extra, want] of l2Cases) {
    test(`L2 bridge with ${name}: vlan_filtering on, port VLANs exactly as configured, CHECK and DEL`, async () => {
      const { cid, n, ns } = await setUp("l2");
      const bridge = `tvbr${n}`;
      const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, extra });
      const result = expectResult(await ours("bridge", inv(ns.path, "ADD", conf, cid)));
      expect(linkDetails(undefined, bridge)!.linkinfo.info_data.vlan_filtering).toBe(1);
      const port = bridgePorts(bridge)[0]!;
      expect(portVlans(port).sort((a, b) => a.vid - b.vid)).toEqual(want);
      expectSuccess(await ours("bridge", inv(ns.path, "CHECK", withPrevResult(conf, result), cid)), { silent: true });
      expectSuccess(await ours("bridge", inv(ns.path, "DEL", conf, cid)), { silent: true });
      expect(bridgePorts(bridge)).toEqual([]);
    });
  }

  test("L3 with vlan 100 and isGateway: gateway on <bridge>.100, containers on the VLAN ping it and each other", async () => {
    const { cid, n, ns: a, dataDir } = await setUp("l3");
    const bridge = `tvbr${n}`;
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir, subnets: ["10.80.0.0/24"], extra: { vlan: 100, isDefaultGateway: true } });
    const b = await createContainerNetns();
    const ra = expectResult(await ours("bridge", inv(a.path, "ADD", conf, `${cid}-a`)));
    const rb = expectResult(await ours("bridge", inv(b.path, "ADD", conf, `${cid}-b`)));
    expect(ra.interfaces.map((i: any) => i.name)).toEqual([bridge, expect.stringMatching(/^veth/), "eth0", `${bridge}.100`]);
    expect(addrsOf(undefined, `${bridge}.100`)).toContain("10.80.0.1/24");
    expect(ping(a.path, "10.80.0.1")).toBe(true);
    expect(ping(a.path, rb.ips[0].address.split("/")[0])).toBe(true);
    expectSuccess(await ours("bridge", inv(a.path, "CHECK", withPrevResult(conf, ra), `${cid}-a`)), { silent: true });
    expectSuccess(await ours("bridge", inv(a.path, "DEL", conf, `${cid}-a`)), { silent: true });
    expectSuccess(await ours("bridge", inv(b.path, "DEL", conf, `${cid}-b`)), { silent: true });
    expect(reservationFiles(join(dataDir, "brnet"))).toEqual([]);
    expect(findLink(undefined, `${bridge}.100`)).toBeDefined(); // shared by the network, as upstream
  });

  test("containers on different access VLANs of one bridge cannot reach each other", async () => {
    const { cid, n, ns: a } = await setUp("access");
    const bridge = `tvbr${n}`;
    const b = await createContainerNetns();
    for (const [ns, vlan, ip] of [
      [a, 10, "192.168.50.1/24"],
      [b, 20, "192.168.50.2/24"],
    ] as const) {
      expectResult(await ours("bridge", inv(ns.path, "ADD", bridgeConfig({ cniVersion: "1.0.0", bridge, extra: { vlan } }), `${cid}-${vlan}`)));
      ipIn(ns.path, "addr", "add", ip, "dev", "eth0");
    }
    expect(ping(a.path, "192.168.50.2", 2)).toBe(false);
  });

  test("out-of-range VLAN ids are refused before anything is created", async () => {
    const { cid, n, ns } = await setUp("range");
    const bridge = `tvbr${n}`;
    expectCniError(await ours("bridge", inv(ns.path, "ADD", bridgeConfig({ cniVersion: "1.0.0", bridge, extra: { vlan: 5000 } }), cid)), {
      code: 7,
      msg: "invalid VLAN ID 5000 (must be between 0 and 4094)",
    });
    expect(findLink(undefined, bridge)).toBeUndefined();
  });
});
