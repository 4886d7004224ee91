/**
 * bridge interoperability with the Go reference (Debian 1.1.1 in /usr/lib/cni): an attachment made
 * by one implementation is CHECKed and DELeted by the other, and nothing is left — links, host-local
 * reservations (shared store format) and the iptables masquerade chain (shared names).
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { GO_BIN_DIR, hasGoPlugin } from "../harness/paths.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { bridgeConfig, bridgePorts, goRef, iptablesNat, ours, ping, reservationFiles, withPrevResult, type Runner } from "../harness/bridge-helpers.ts";
import { findLink } from "../harness/ip-oracle.ts";

const cases: [string, Runner, Runner][] = [
  ["Go ADD → our CHECK + DEL", goRef, ours],
  ["our ADD → Go CHECK + DEL", ours, goRef],
];

describe.skipIf(!sandboxed() || !hasGoPlugin("bridge"))("bridge interop with the Go reference", () => {
  useFixtureCleanup();

  for (const [i, [name, first, second]] of cases.entries()) {
    test(`${name} leaves nothing (ipMasq iptables, isDefaultGateway, dual stack)`, async () => {
      const bridge = `tibr${i}`;
      const net = `interop-${i}`;
      const dataDir = makeTempDir();
      const conf = bridgeConfig({
        name: net,
        cniVersion: "1.0.0",
        bridge,
        dataDir,
        subnets: [`10.79.${i}.0/24`, `fd79:${i}::/64`],
        extra: { isDefaultGateway: true, ipMasq: true },
      });
      const ns = await createContainerNetns();
      const base = { containerID: `interop-${i}`, netns: ns.path, ifName: "eth0" };
      const result = expectResult(await first("bridge", { ...base, command: "ADD", config: conf }));
      expect(ping(ns.path, `10.79.${i}.1`)).toBe(true);
      expect(iptablesNat()).toContain(`name: \\"${net}\\"`);
      expect(reservationFiles(join(dataDir, net)).length).toBe(2);

      const prev = withPrevResult(conf, result);
      expectSuccess(await second("bridge", { ...base, command: "CHECK", config: prev }), { silent: true });
      expectSuccess(await second("bridge", { ...base, command: "DEL", config: prev }), { silent: true });

      expect(findLink(ns.path, "eth0")).toBeUndefined();
      expect(bridgePorts(bridge)).toEqual([]);
      expect(reservationFiles(join(dataDir, net))).toEqual([]);
      expect(iptablesNat()).not.toContain(`name: \\"${net}\\"`);
      expect(GO_BIN_DIR).toBe("/usr/lib/cni");
    });
  }
});
