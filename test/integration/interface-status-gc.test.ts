/**
 * STATUS and GC of every interface plugin (bridge, ptp, macvlan, ipvlan, vlan, dummy, tap,
 * host-device). GC passes `cni.dev/valid-attachments` to the IPAM plugin: with host-local, a stale
 * reservation goes and a valid one stays. STATUS answers code 51 when the master or bridge the
 * config names cannot be used (what ADD would fail on, and what the network's existing containers
 * hang off), then asks IPAM, whose code passes unchanged (host-local exhausted: 50). Neither verb creates
 * links, so no kernel module beyond veth is needed.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { hostLocalConfig } from "../harness/configs.ts";
import { execPlugin } from "../harness/exec-plugin.ts";
import { bothGcKeys, olderGcKey } from "../harness/gc-keys.ts";
import { makeVethMaster, uniqueLinkName } from "../harness/macvlan-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";

/** Each plugin's own fields that a STATUS/GC config carries (none needs a link to exist). */
const PLUGINS: Record<string, Record<string, unknown>> = {
  bridge: { bridge: "cni-gc0" },
  ptp: {},
  macvlan: { master: "nosuchmaster0" },
  ipvlan: { master: "nosuchmaster0" },
  vlan: { master: "nosuchmaster0", vlanId: 7 },
  dummy: {},
  tap: {},
  "host-device": { device: "nosuchdev0" },
};

let n = 0;
function network(tag: string): string {
  n++;
  return `ifgc-${tag}-${process.pid}-${n}`;
}

function pluginConf(type: string, net: string, ipam: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { cniVersion: "1.1.0", name: net, type, ...PLUGINS[type], ...(ipam ? { ipam } : {}), ...extra };
}

describe.skipIf(!sandboxed())("interface plugins: STATUS and GC", () => {
  useFixtureCleanup();

  for (const type of Object.keys(PLUGINS)) {
    test(`${type}: GC releases the host-local reservation of a stale attachment and keeps the valid one (either GC key, the newer wins)`, async () => {
      const net = network(type.slice(0, 4));
      const dataDir = makeTempDir("ifgc-store-");
      const hl = hostLocalConfig({ name: net, cniVersion: "1.1.0", dataDir, ranges: [[{ subnet: "10.72.0.0/24" }]] });
      const ns = await createContainerNetns();
      for (const cid of ["keep", "stale"]) {
        expectResult(await execPlugin("host-local", { command: "ADD", containerID: `${cid}-${net}`, netns: ns.path, ifName: "eth0", config: hl }));
      }
      expect(Object.values(reservations(join(dataDir, net))).length).toBe(2);

      const both = [{ containerID: `keep-${net}`, ifname: "eth0" }, { containerID: `stale-${net}`, ifname: "eth0" }];
      const ipam = hl.ipam as Record<string, unknown>;
      expectSuccess(await execPlugin(type, { command: "GC", config: pluginConf(type, net, ipam, bothGcKeys(both, [])) }), { silent: true });
      expect(Object.values(reservations(join(dataDir, net))).length).toBe(2);
      const conf = pluginConf(type, net, ipam, olderGcKey([{ containerID: `keep-${net}`, ifname: "eth0" }]));
      expectSuccess(await execPlugin(type, { command: "GC", config: conf }), { silent: true });
      const left = reservations(join(dataDir, net));
      expect(Object.keys(left)).toEqual(["10.72.0.2"]);
      expect(JSON.stringify(left)).toContain(`keep-${net}`);
    });
  }

  test("GC without IPAM succeeds and touches nothing (macvlan, ipvlan, vlan, tap, host-device, bridge)", async () => {
    for (const type of ["macvlan", "ipvlan", "vlan", "tap", "host-device", "bridge"]) {
      expectSuccess(await execPlugin(type, { command: "GC", config: pluginConf(type, network("l2"), undefined, { "cni.dev/valid-attachments": [] }) }), {
        silent: true,
      });
    }
  });

  for (const type of ["macvlan", "ipvlan", "vlan"]) {
    test(`${type}: STATUS is code 51 while the configured master is missing, then asks IPAM once it exists`, async () => {
      const master = uniqueLinkName("stm");
      const ipam = { type: "host-local", dataDir: makeTempDir("ifst-store-"), ranges: [[{ subnet: "10.73.0.0/30" }]] };
      const conf = pluginConf(type, network("st"), ipam, { master });
      expectCniError(await execPlugin(type, { command: "STATUS", config: conf }), { code: 51, msg: `failed to lookup master "${master}"` });
      makeVethMaster({ name: master });
      expectSuccess(await execPlugin(type, { command: "STATUS", config: conf }), { silent: true });
      // IPAM's verdict is passed on: a missing IPAM plugin fails STATUS.
      expectCniError(await execPlugin(type, { command: "STATUS", config: { ...conf, ipam: { type: "nosuchipam" } } }), {
        code: 999,
        msg: 'failed to find plugin "nosuchipam"',
      });
      // The master in the container netns (linkInContainer) cannot be looked at: nothing to check.
      const inContainer = pluginConf(type, network("st"), undefined, { master: "nosuchmaster0", linkInContainer: true });
      expectSuccess(await execPlugin(type, { command: "STATUS", config: inContainer }), { silent: true });
    });
  }

  test("bridge: STATUS is code 51 when the bridge name is taken by a link that is not a bridge; a missing bridge is fine", async () => {
    const name = uniqueLinkName("stb");
    const conf = pluginConf("bridge", network("br"), undefined, { bridge: name });
    expectSuccess(await execPlugin("bridge", { command: "STATUS", config: conf }), { silent: true });
    makeVethMaster({ name });
    expectCniError(await execPlugin("bridge", { command: "STATUS", config: conf }), { code: 51, msg: `"${name}" already exists but is not a bridge` });
  });

  test("STATUS of ptp, dummy, tap and host-device asks IPAM only (a missing device is ADD's business)", async () => {
    for (const type of ["ptp", "dummy", "tap", "host-device"]) {
      const ipam = { type: "host-local", dataDir: makeTempDir("ifst-store-"), ranges: [[{ subnet: "10.74.0.0/30" }]] };
      expectSuccess(await execPlugin(type, { command: "STATUS", config: pluginConf(type, network("ok"), ipam) }), { silent: true });
      expectCniError(await execPlugin(type, { command: "STATUS", config: pluginConf(type, network("ok"), { type: "nosuchipam" }) }), {
        code: 999,
        msg: 'failed to find plugin "nosuchipam"',
      });
    }
  });

  test("IPAM's STATUS code passes unchanged through every interface plugin: an exhausted host-local 50, an unreachable dhcp daemon 51", async () => {
    const dataDir = makeTempDir("ifst-full-");
    const full = { type: "host-local", dataDir, ranges: [[{ subnet: "10.75.0.0/30" }]] };
    const net = network("full");
    // a /30 with its gateway .1 has one address: .2
    expectResult(await execPlugin("host-local", { command: "ADD", containerID: "fill", netns: "/nonexistent", ifName: "eth0", config: { cniVersion: "1.1.0", name: net, ipam: full } }));
    const noDaemon = { type: "dhcp", daemonSocketPath: join(makeTempDir("ifst-dhcp-"), "none.sock") };
    const usable: Record<string, Record<string, unknown>> = { macvlan: { master: "lo" }, ipvlan: { master: "lo" }, vlan: { master: "lo", vlanId: 7 } };
    for (const type of Object.keys(PLUGINS)) {
      const extra = usable[type] ?? {};
      expectCniError(await execPlugin(type, { command: "STATUS", config: pluginConf(type, net, full, extra) }), { code: 50, msg: "no IP addresses available" });
      expectCniError(await execPlugin(type, { command: "STATUS", config: pluginConf(type, network("dh"), noDaemon, extra) }), { code: 51, msg: "DHCP daemon not reachable" });
    }
  });
});
