/**
 * ptp interoperability with the Go reference (Debian 1.1.1, /usr/lib/cni/ptp): an attachment made
 * by one implementation is CHECKed and DELeted by the other, and nothing is left behind — no link,
 * no masquerade chain (iptables; Go 1.1.1 has no nftables backend), no host-local reservation.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execGoPlugin, execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { listLinks } from "../harness/ip-oracle.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { hostLink, iptablesMasqLines, ping, ptpConf } from "../harness/ptp-helpers.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";

function inv(netns: string, command: string, config: unknown, cid: string): PluginInvocation {
  return { command, containerID: cid, netns, ifName: "eth0", config };
}

describe.skipIf(!sandboxed() || !hasGoPlugin("ptp"))("ptp interop with the Go reference", () => {
  useFixtureCleanup();
  let n = 0;

  for (const v of ["0.4.0", "1.0.0"]) {
    for (const subnets of [["10.81.0.0/24"], ["10.81.0.0/24", "fd81::/64"]]) {
      const fam = subnets.length === 2 ? "dual" : "v4";
      test(`[${v}] ${fam}: Go ADD → our CHECK + DEL leaves nothing`, async () => {
        n++;
        const cid = `ptp-go2ts-${process.pid}-${n}`;
        const net = `ptpgo2ts${n}`;
        const dataDir = makeTempDir("ptp-interop-");
        const conf = ptpConf({ cniVersion: v, name: net, dataDir, subnets, ipMasq: true });
        const ns = await createContainerNetns();
        const result = expectResult(await execGoPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
        expect(iptablesMasqLines(net, cid).length).toBeGreaterThan(0);
        expect(ping(ns.path, "10.81.0.1")).toBe(true);
        const withPrev = { ...conf, prevResult: result };
        expectSuccess(await execPlugin("ptp", inv(ns.path, "CHECK", withPrev, cid)), { silent: true });
        expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", withPrev, cid)), { silent: true });
        expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
        expect(hostLink(result.interfaces[0].name)).toBeUndefined();
        expect(iptablesMasqLines(net, cid)).toEqual([]);
        expect(reservations(join(dataDir, net))).toEqual({});
      });

      test(`[${v}] ${fam}: our ADD → Go CHECK + DEL leaves nothing`, async () => {
        n++;
        const cid = `ptp-ts2go-${process.pid}-${n}`;
        const net = `ptpts2go${n}`;
        const dataDir = makeTempDir("ptp-interop-");
        const conf = ptpConf({ cniVersion: v, name: net, dataDir, subnets, ipMasq: true, ipMasqBackend: "iptables" });
        const ns = await createContainerNetns();
        const result = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
        expect(iptablesMasqLines(net, cid).length).toBeGreaterThan(0);
        // Go 1.1.1 does not know ipMasqBackend; it ignores the key.
        const withPrev = { ...conf, prevResult: result };
        expectSuccess(await execGoPlugin("ptp", inv(ns.path, "CHECK", withPrev, cid)), { silent: true });
        expectSuccess(await execGoPlugin("ptp", inv(ns.path, "DEL", withPrev, cid)), { silent: true });
        expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
        expect(hostLink(result.interfaces[0].name)).toBeUndefined();
        expect(iptablesMasqLines(net, cid)).toEqual([]);
        expect(reservations(join(dataDir, net))).toEqual({});
      });
    }
  }
});
