/**
 * bridge under concurrency: 50 parallel ADDs racing to create one new
 * bridge, then 50 parallel DELs — no failure, no duplicate address, and nothing left behind (links,
 * masquerade rules, reservations).
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { describeRun } from "../harness/exec-plugin.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { bridgeConfig, bridgePorts, iptablesNat, ours, reservationFiles } from "../harness/bridge-helpers.ts";
import { findLink } from "../harness/ip-oracle.ts";

const N = 50;

describe.skipIf(!sandboxed())("bridge concurrency", () => {
  useFixtureCleanup();

  test(`${N} parallel ADDs on one new bridge, then ${N} parallel DELs`, async () => {
    const bridge = "tcbr0";
    const dataDir = makeTempDir();
    const conf = bridgeConfig({
      name: "conc-net",
      cniVersion: "1.0.0",
      bridge,
      dataDir,
      subnets: ["10.78.0.0/24"],
      extra: { isGateway: true, ipMasq: true, ipMasqBackend: "iptables" },
    });
    expect(findLink(undefined, bridge)).toBeUndefined();
    const nss: ContainerNetns[] = [];
    for (let i = 0; i < N; i++) nss.push(await createContainerNetns());

    const adds = await Promise.all(
      nss.map((ns, i) => ours("bridge", { command: "ADD", containerID: `conc-${i}`, netns: ns.path, ifName: "eth0", config: conf, timeoutMs: 120_000 })),
    );
    const failed = adds.filter((r) => r.status !== 0).map(describeRun);
    expect(failed).toEqual([]);
    const ips = adds.map((r) => r.json.ips[0].address as string);
    expect(new Set(ips).size).toBe(N);
    expect(bridgePorts(bridge).length).toBe(N);
    expect(reservationFiles(join(dataDir, "conc-net")).length).toBe(N);
    const brMac = findLink(undefined, bridge)!.address;
    for (const r of adds) expect(r.json.interfaces[0].mac).toBe(brMac);

    const dels = await Promise.all(
      nss.map((ns, i) => ours("bridge", { command: "DEL", containerID: `conc-${i}`, netns: ns.path, ifName: "eth0", config: conf, timeoutMs: 120_000 })),
    );
    expect(dels.filter((r) => r.status !== 0).map(describeRun)).toEqual([]);
    expect(bridgePorts(bridge)).toEqual([]);
    expect(reservationFiles(join(dataDir, "conc-net"))).toEqual([]);
    expect(iptablesNat()).not.toContain("conc-net");
    expect(findLink(undefined, bridge)!.address).toBe(brMac);
  }, 300_000);
});
