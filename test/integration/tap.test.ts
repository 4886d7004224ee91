/**
 * tap: ADD/CHECK/DEL across spec versions, L2 and L3, checked with
 * `ip -d -j` (tun type tap, multi_queue, vnet_hdr, owner/group), MAC precedence, MTU, a tap as the
 * port of a bridge inside the container, DEL robustness, STATUS. (No traffic test: a tap carries
 * frames only once a process such as a VMM attaches to it.) The Debian 1.1.1 binaries have no tap, so there is no interop test.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { addrsOf, listLinks } from "../harness/ip-oracle.ts";
import { detailedLink, ipIn, linkPluginConf, resultIps } from "../harness/macvlan-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { ALL_SPEC_VERSIONS, hasCheck, resultFamily } from "../harness/versions.ts";

let n = 0;
function ids(tag: string): { cid: string; net: string } {
  n++;
  return { cid: `tap-${tag}-${process.pid}-${n}`, net: `tapnet-${tag}-${n}` };
}
function inv(netns: string | undefined, command: string, config: unknown, cid: string, extra: Partial<PluginInvocation> = {}): PluginInvocation {
  return { command, containerID: cid, netns, ifName: "tap0", config, ...extra };
}

describe.skipIf(!sandboxed())("tap", () => {
  useFixtureCleanup();

  for (const v of ALL_SPEC_VERSIONS) {
    test(`[${v}] L3: ADD creates a tap with the address, ${hasCheck(v) ? "CHECK passes, " : ""}DEL removes it and the lease`, async () => {
      const { cid, net } = ids("l3");
      const ns = await createContainerNetns();
      const dataDir = makeTempDir("tap-store-");
      const conf = linkPluginConf({ type: "tap", name: net, cniVersion: v, dataDir, subnet: "10.91.0.0/24", mtu: 1400, mac: "02:aa:00:00:00:01" });
      const result = expectResult(await execPlugin("tap", inv(ns.path, "ADD", conf, cid)));
      expect(resultIps(result).map((i) => i.address)).toEqual(["10.91.0.2/24"]);
      const link = detailedLink(ns.path, "tap0")!;
      expect(link.linkinfo.info_kind).toBe("tun");
      expect(link.linkinfo.info_data).toMatchObject({ type: "tap", pi: false, vnet_hdr: false, multi_queue: false, persist: true });
      expect(link.mtu).toBe(1400);
      expect(link.address).toBe("02:aa:00:00:00:01");
      expect(link.flags).toContain("UP");
      expect(addrsOf(ns.path, "tap0")).toContain("10.91.0.2/24");
      if (resultFamily(v) !== "0.2") expect(result.interfaces).toEqual([{ name: "tap0", mac: "02:aa:00:00:00:01", sandbox: ns.path, ...(v === "1.1.0" ? { mtu: 1400 } : {}) }]);
      if (hasCheck(v)) expectSuccess(await execPlugin("tap", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
      expectSuccess(await execPlugin("tap", inv(ns.path, "DEL", conf, cid)), { silent: true });
      expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
      expect(reservations(join(dataDir, net))).toEqual({});
      expectSuccess(await execPlugin("tap", inv(ns.path, "DEL", conf, cid)), { silent: true });
    });

    test(`[${v}] L2: ${resultFamily(v) === "0.2" ? "refused before the device exists" : "tap UP without addresses"}`, async () => {
      const { cid, net } = ids("l2");
      const ns = await createContainerNetns();
      const conf = linkPluginConf({ type: "tap", name: net, cniVersion: v, subnet: null });
      const run = await execPlugin("tap", inv(ns.path, "ADD", conf, cid));
      if (resultFamily(v) === "0.2") {
        expectCniError(run, { code: 999, msg: "cannot convert: no valid IP addresses" });
        expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
        return;
      }
      const result = expectResult(run);
      expect(detailedLink(ns.path, "tap0")!.flags).toContain("UP");
      if (hasCheck(v)) expectSuccess(await execPlugin("tap", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
      expectSuccess(await execPlugin("tap", inv(ns.path, "DEL", conf, cid)), { silent: true });
      expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    });
  }

  test("multiQueue, owner and group (vnet_hdr on when both are set, as upstream's netlink path)", async () => {
    const { cid, net } = ids("mq");
    const ns = await createContainerNetns();
    const conf = linkPluginConf({ type: "tap", name: net, subnet: null, multiQueue: true, owner: 1234, group: 2345 });
    expectResult(await execPlugin("tap", inv(ns.path, "ADD", conf, cid)));
    const d = detailedLink(ns.path, "tap0")!.linkinfo.info_data;
    expect(d).toMatchObject({ type: "tap", multi_queue: true, vnet_hdr: true, user: 1234, group: 2345 });
    expectSuccess(await execPlugin("tap", inv(ns.path, "DEL", conf, cid)));
    // owner only: no vnet_hdr, no group.
    const conf2 = linkPluginConf({ type: "tap", name: net, subnet: null, owner: 61234 });
    expectResult(await execPlugin("tap", inv(ns.path, "ADD", conf2, cid)));
    const d2 = detailedLink(ns.path, "tap0")!.linkinfo.info_data;
    expect(d2.user).toBe(61234);
    expect(d2.group).toBeUndefined();
    expect(d2.vnet_hdr).toBe(false);
    expectSuccess(await execPlugin("tap", inv(ns.path, "DEL", conf2, cid)));
  });

  test("MAC precedence: config < CNI_ARGS MAC < runtimeConfig.mac; invalid MAC refused", async () => {
    const { cid, net } = ids("mac");
    const ns = await createContainerNetns();
    const conf = linkPluginConf({ type: "tap", name: net, subnet: null, mac: "02:aa:00:00:00:01", runtimeConfig: { mac: "02:aa:00:00:00:03" } });
    const r = expectResult(await execPlugin("tap", inv(ns.path, "ADD", conf, cid, { args: "MAC=02:aa:00:00:00:02" })));
    expect(r.interfaces[0].mac).toBe("02:aa:00:00:00:03");
    expectSuccess(await execPlugin("tap", inv(ns.path, "DEL", conf, cid, { args: "MAC=02:aa:00:00:00:02" })));
    const conf2 = linkPluginConf({ type: "tap", name: net, subnet: null, mac: "02:aa:00:00:00:01" });
    const r2 = expectResult(await execPlugin("tap", inv(ns.path, "ADD", conf2, cid, { args: "MAC=02:aa:00:00:00:02" })));
    expect(detailedLink(ns.path, "tap0")!.address).toBe("02:aa:00:00:00:02");
    expect(r2.interfaces[0].mac).toBe("02:aa:00:00:00:02");
    expectSuccess(await execPlugin("tap", inv(ns.path, "DEL", conf2, cid)));
    const bad = linkPluginConf({ type: "tap", name: net, subnet: null, mac: "nope" });
    expectCniError(await execPlugin("tap", inv(ns.path, "ADD", bad, cid)), { code: 7, msg: "invalid args nope for MAC addr" });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
  });

  test("bridge: the tap becomes a port of a bridge inside the container; a missing bridge is an error that leaves nothing", async () => {
    const { cid, net } = ids("br");
    const ns = await createContainerNetns();
    ipIn(ns.path, "link", "add", "br0", "type", "bridge");
    ipIn(ns.path, "addr", "add", "10.92.0.1/24", "dev", "br0");
    ipIn(ns.path, "link", "set", "br0", "up");
    const conf = linkPluginConf({ type: "tap", name: net, subnet: null, bridge: "br0" });
    const result = expectResult(await execPlugin("tap", inv(ns.path, "ADD", conf, cid)));
    const link = detailedLink(ns.path, "tap0")!;
    expect(link.master).toBe("br0");
    expect(link.flags).toContain("UP");
    expectSuccess(await execPlugin("tap", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
    expectSuccess(await execPlugin("tap", inv(ns.path, "DEL", conf, cid)));
    expect(listLinks(ns.path).map((l) => l.ifname).sort()).toEqual(["br0", "lo"]);
    const missing = linkPluginConf({ type: "tap", name: net, subnet: null, bridge: "nobr0" });
    expectCniError(await execPlugin("tap", inv(ns.path, "ADD", missing, cid)), { code: 999, msg: "failed to get bridge nobr0" });
    expect(listLinks(ns.path).map((l) => l.ifname).sort()).toEqual(["br0", "lo"]);
  });

  test("selinuxContext is refused with code 2 before anything is created", async () => {
    const { cid, net } = ids("selinux");
    const ns = await createContainerNetns();
    const conf = linkPluginConf({ type: "tap", name: net, subnet: null, selinuxContext: "system_u:system_r:container_t:s0" });
    expectCniError(await execPlugin("tap", inv(ns.path, "ADD", conf, cid)), { code: 2, msg: "selinuxContext" });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
  });

  test("ADD twice fails cleanly; CHECK fails once the tap is gone; DEL with netns gone releases the lease", async () => {
    const { cid, net } = ids("robust");
    const ns = await createContainerNetns();
    const dataDir = makeTempDir("tap-store-");
    const conf = linkPluginConf({ type: "tap", name: net, dataDir, subnet: "10.93.0.0/24" });
    const result = expectResult(await execPlugin("tap", inv(ns.path, "ADD", conf, cid)));
    expectCniError(await execPlugin("tap", inv(ns.path, "ADD", conf, `${cid}-2`)), { code: 999, msg: 'failed to rename tap to "tap0"' });
    expect(listLinks(ns.path).map((l) => l.ifname).sort()).toEqual(["lo", "tap0"]);
    ipIn(ns.path, "link", "del", "tap0");
    expectCniError(await execPlugin("tap", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { code: 999, msg: "not found" });
    await ns.destroy();
    expectSuccess(await execPlugin("tap", inv(ns.path, "DEL", conf, cid)), { silent: true });
    expect(reservations(join(dataDir, net))).toEqual({});
  });

  test("STATUS (1.1.0): IPAM STATUS when L3, success when L2", async () => {
    const { net } = ids("status");
    expectSuccess(await execPlugin("tap", { command: "STATUS", config: linkPluginConf({ type: "tap", name: net, cniVersion: "1.1.0", dataDir: makeTempDir("tap-"), subnet: "10.94.0.0/24" }) }), { silent: true });
    expectSuccess(await execPlugin("tap", { command: "STATUS", config: linkPluginConf({ type: "tap", name: net, cniVersion: "1.1.0", subnet: null }) }), { silent: true });
  });
});
