/**
 * vlan — VM lane (this host's kernel has no 8021q): ADD/CHECK/DEL across
 * spec versions with and without linkInContainer, MTU (given, the master's, too large, negative),
 * VLAN id bounds, real traffic (a container reaches a peer on the same VLAN id through a veth master
 * and not one on another id), DEL with the master gone, STATUS, and interop with the Go reference.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execGoPlugin, execPlugin } from "../harness/exec-plugin.ts";
import { addrsOf, listLinks } from "../harness/ip-oracle.ts";
import { detailedLink, expectL2Lifecycle, ipIn, linkPluginConf, makeVethMaster, pingFrom, resultIps } from "../harness/macvlan-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { ALL_SPEC_VERSIONS, hasCheck, resultFamily } from "../harness/versions.ts";
import { describeVm, vmPluginCalls } from "../harness/vm-lane.ts";

const { ids, setUp, inv } = vmPluginCalls("vl", "eth0");

describeVm("vlan", { kernel: ["vlan"] }, () => {
  for (const v of ALL_SPEC_VERSIONS) {
    // linkInContainer=true for two versions only: each VM-lane test costs seconds under TCG.
    for (const lic of v === "0.4.0" || v === "1.1.0" ? ([false, true] as const) : ([false] as const)) {
      test(`[${v}] linkInContainer=${lic}: ADD creates VLAN 42 on the master, ${hasCheck(v) ? "CHECK passes, " : ""}DEL removes it and the lease`, async () => {
        const { cid, net, ns, dataDir } = await setUp("add");
        const master = makeVethMaster(lic ? { netns: ns.path } : {});
        const conf = linkPluginConf({ type: "vlan", name: net, cniVersion: v, dataDir, subnet: "10.121.0.0/24", master: master.name, vlanId: 42, mtu: 1400, linkInContainer: lic });
        const result = expectResult(await execPlugin("vlan", inv(ns.path, "ADD", conf, cid)));
        expect(resultIps(result).map((i) => i.address)).toEqual(["10.121.0.2/24"]);
        const link = detailedLink(ns.path, "eth0")!;
        expect(link.linkinfo.info_kind).toBe("vlan");
        expect(link.linkinfo.info_data.id).toBe(42);
        expect(link.mtu).toBe(1400);
        expect(link.flags).toContain("UP");
        if (lic) expect(link.link).toBe(master.name);
        expect(addrsOf(ns.path, "eth0")).toContain("10.121.0.2/24");
        if (resultFamily(v) !== "0.2") expect(result.interfaces).toEqual([{ name: "eth0", mac: link.address, sandbox: ns.path, ...(v === "1.1.0" ? { mtu: 1400 } : {}) }]);
        if (hasCheck(v)) expectSuccess(await execPlugin("vlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
        expectSuccess(await execPlugin("vlan", inv(ns.path, "DEL", conf, cid)), { silent: true });
        expect(listLinks(ns.path).map((l) => l.ifname).includes("eth0")).toBe(false);
        expect(reservations(join(dataDir, net))).toEqual({});
        expectSuccess(await execPlugin("vlan", inv(ns.path, "DEL", conf, cid)), { silent: true });
      });
    }
  }

  test("MTU: 0 takes the master's; above the master's or negative is refused before anything is created", async () => {
    const { cid, net, ns, dataDir } = await setUp("mtu");
    const master = makeVethMaster({ mtu: 1300 });
    const base = { type: "vlan", name: net, dataDir, subnet: "10.122.0.0/24", master: master.name, vlanId: 5 };
    expectResult(await execPlugin("vlan", inv(ns.path, "ADD", linkPluginConf(base), cid)));
    expect(detailedLink(ns.path, "eth0")!.mtu).toBe(1300);
    expectSuccess(await execPlugin("vlan", inv(ns.path, "DEL", linkPluginConf(base), cid)));
    expectCniError(await execPlugin("vlan", inv(ns.path, "ADD", linkPluginConf({ ...base, mtu: 1500 }), cid)), { code: 7, msg: "invalid MTU 1500, must be [0, master MTU(1300)]" });
    expectCniError(await execPlugin("vlan", inv(ns.path, "ADD", linkPluginConf({ ...base, mtu: -1 }), cid)), { code: 7, msg: "invalid MTU -1" });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    expect(reservations(join(dataDir, net))).toEqual({});
  });

  test("config errors: master required, VLAN id 4095 or -1, missing master", async () => {
    const { cid, net, ns, dataDir } = await setUp("errors");
    const master = makeVethMaster();
    const base = { type: "vlan", name: net, dataDir, subnet: "10.123.0.0/24" };
    expectCniError(await execPlugin("vlan", inv(ns.path, "ADD", linkPluginConf({ ...base, vlanId: 5 }), cid)), { code: 7, msg: '"master" field is required' });
    for (const id of [4095, -1]) {
      expectCniError(await execPlugin("vlan", inv(ns.path, "ADD", linkPluginConf({ ...base, master: master.name, vlanId: id }), cid)), { code: 7, msg: `invalid VLAN ID ${id}` });
    }
    expectCniError(await execPlugin("vlan", inv(ns.path, "ADD", linkPluginConf({ ...base, master: "nosuch0", vlanId: 5 }), cid)), { code: 999, msg: 'failed to lookup master "nosuch0"' });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    expect(reservations(join(dataDir, net))).toEqual({});
  });

  for (const lic of [false, true]) {
    test(`L2 (ipam {}, linkInContainer=${lic}): the VLAN link is up without addresses, the result lists only it; CHECK, DEL; refused at 0.2.0`, async () => {
      const { cid, net, ns } = await setUp("l2");
      const master = makeVethMaster(lic ? { netns: ns.path } : {});
      const conf = { cniVersion: "1.0.0", name: net, type: "vlan", master: master.name, vlanId: 7, linkInContainer: lic, ipam: {} };
      expectCniError(await execPlugin("vlan", inv(ns.path, "ADD", { ...conf, cniVersion: "0.2.0" }, cid)), { code: 999, msg: "cannot convert: no valid IP addresses" });
      expect(listLinks(ns.path).some((l) => l.ifname === "eth0")).toBe(false);
      const link = await expectL2Lifecycle(conf, ns.path, cid);
      expect(link.linkinfo.info_data.id).toBe(7);
    });
  }

  test("MAC (#492): runtimeConfig.mac beats CNI_ARGS MAC; CHECK sees it; a bad one is code 7 before the link exists", async () => {
    const { cid, net, ns } = await setUp("mac");
    const master = makeVethMaster();
    const conf = { cniVersion: "1.0.0", name: net, type: "vlan", master: master.name, vlanId: 9 };
    const run = (config: unknown, command: string, args: string) => execPlugin("vlan", { ...inv(ns.path, command, config, cid), args });
    expectResult(await run(conf, "ADD", "K8S_POD_NAME=x;MAC=0a:58:00:00:00:11"));
    expect(detailedLink(ns.path, "eth0")!.address).toBe("0a:58:00:00:00:11");
    expectSuccess(await run(conf, "DEL", ""), { silent: true });
    const withCap = { ...conf, runtimeConfig: { mac: "0a:58:00:00:00:12" } };
    const result = expectResult(await run(withCap, "ADD", "MAC=0a:58:00:00:00:11"));
    expect(result.interfaces).toEqual([{ name: "eth0", mac: "0a:58:00:00:00:12", sandbox: ns.path }]);
    expect(detailedLink(ns.path, "eth0")!.address).toBe("0a:58:00:00:00:12");
    expectSuccess(await run({ ...withCap, prevResult: result }, "CHECK", ""), { silent: true });
    expectSuccess(await run(withCap, "DEL", ""), { silent: true });
    expectCniError(await run({ ...conf, runtimeConfig: { mac: "nope" } }, "ADD", ""), { code: 7, msg: "invalid args nope for MAC addr" });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
  });

  test("traffic: a container reaches a peer on the same VLAN id through the master, not one on another id", async () => {
    const master = makeVethMaster();
    // The far end of the wire, in its own netns, with VLAN 100 and VLAN 200 interfaces.
    const peer = await createContainerNetns();
    ipIn(undefined, "link", "set", master.peer, "netns", peer.path);
    ipIn(peer.path, "link", "set", master.peer, "up");
    for (const [id, addr] of [[100, "10.124.0.254/24"], [200, "10.125.0.254/24"]] as const) {
      ipIn(peer.path, "link", "add", "link", master.peer, "name", `p.${id}`, "type", "vlan", "id", String(id));
      ipIn(peer.path, "addr", "add", addr, "dev", `p.${id}`);
      ipIn(peer.path, "link", "set", `p.${id}`, "up");
    }
    const { net, dataDir, ns: a } = await setUp("traffic");
    const b = await createContainerNetns();
    // a: VLAN 100 with an address in the VLAN-200 subnet too would be cheating; use matching subnets.
    const confA = linkPluginConf({ type: "vlan", name: `${net}a`, dataDir, subnet: "10.124.0.0/24", master: master.name, vlanId: 100 });
    const confB = linkPluginConf({ type: "vlan", name: `${net}b`, dataDir, subnet: "10.124.0.0/24", master: master.name, vlanId: 300, ipam: { ranges: [[{ subnet: "10.124.0.0/24", rangeStart: "10.124.0.100" }]] } });
    expectResult(await execPlugin("vlan", inv(a.path, "ADD", confA, `${net}-a`)));
    expectResult(await execPlugin("vlan", inv(b.path, "ADD", confB, `${net}-b`)));
    expect(pingFrom(a.path, "10.124.0.254")).toBe(true);
    // Same subnet, wrong VLAN id: no answer.
    expect(pingFrom(b.path, "10.124.0.254")).toBe(false);
    expectSuccess(await execPlugin("vlan", inv(a.path, "DEL", confA, `${net}-a`)));
    expectSuccess(await execPlugin("vlan", inv(b.path, "DEL", confB, `${net}-b`)));
  });

  test("CHECK fails when the VLAN id differs from the config", async () => {
    const { cid, net, ns, dataDir } = await setUp("chkid");
    const master = makeVethMaster();
    const conf = linkPluginConf({ type: "vlan", name: net, dataDir, subnet: "10.126.0.0/24", master: master.name, vlanId: 7 });
    const result = expectResult(await execPlugin("vlan", inv(ns.path, "ADD", conf, cid)));
    expectCniError(await execPlugin("vlan", inv(ns.path, "CHECK", { ...conf, vlanId: 8, prevResult: result }, cid)), { code: 999, msg: "VLAN ID 7, configured 8" });
    expectCniError(await execPlugin("vlan", inv(ns.path, "CHECK", conf, cid)), { code: 999, msg: "vlan: Required prevResult missing" });
    expectSuccess(await execPlugin("vlan", inv(ns.path, "DEL", conf, cid)));
  });

  test("DEL succeeds and releases the lease when the master is gone (upstream fails)", async () => {
    const { cid, net, ns, dataDir } = await setUp("mastergone");
    const master = makeVethMaster();
    const conf = linkPluginConf({ type: "vlan", name: net, dataDir, subnet: "10.127.0.0/24", master: master.name, vlanId: 9 });
    expectResult(await execPlugin("vlan", inv(ns.path, "ADD", conf, cid)));
    ipIn(undefined, "link", "del", master.name);
    expectSuccess(await execPlugin("vlan", inv(ns.path, "DEL", conf, cid)), { silent: true });
    expect(reservations(join(dataDir, net))).toEqual({});
    await ns.destroy();
    expectSuccess(await execPlugin("vlan", inv(ns.path, "DEL", conf, cid)), { silent: true });
  });

  test("STATUS (1.1.0): code 51 while the master is missing, then IPAM STATUS (none without IPAM)", async () => {
    const { net } = ids("status");
    const master = makeVethMaster();
    const conf = linkPluginConf({ type: "vlan", name: net, cniVersion: "1.1.0", dataDir: makeTempDir("vl-"), subnet: "10.128.0.0/24", master: master.name });
    expectSuccess(await execPlugin("vlan", { command: "STATUS", config: conf }), { silent: true });
    expectCniError(await execPlugin("vlan", { command: "STATUS", config: { ...conf, master: "x" } }), { code: 51, msg: 'failed to lookup master "x"' });
    expectCniError(await execPlugin("vlan", { command: "STATUS", config: { ...conf, ipam: { type: "nosuchipam" } } }), { code: 999, msg: "nosuchipam" });
    expectSuccess(await execPlugin("vlan", { command: "STATUS", config: { cniVersion: "1.1.0", name: net, type: "vlan", master: master.name } }), { silent: true });
  });

  describe.skipIf(!hasGoPlugin("vlan"))("interop with the Go reference (1.1.1)", () => {
    for (const dir of ["go→ts", "ts→go"] as const) {
      test(`[0.4.0] ${dir}: ADD by one, CHECK and DEL by the other`, async () => {
        const { cid, net, ns, dataDir } = await setUp("interop");
        const master = makeVethMaster();
        const conf = linkPluginConf({ type: "vlan", name: net, cniVersion: "0.4.0", dataDir, subnet: "10.129.0.0/24", master: master.name, vlanId: 33, mtu: 1450 });
        const [adder, other] = dir === "go→ts" ? [execGoPlugin, execPlugin] : [execPlugin, execGoPlugin];
        const result = expectResult(await adder("vlan", inv(ns.path, "ADD", conf, cid)));
        const withPrev = { ...conf, prevResult: result };
        expectSuccess(await other("vlan", inv(ns.path, "CHECK", withPrev, cid)), { silent: true });
        expectSuccess(await other("vlan", inv(ns.path, "DEL", withPrev, cid)), { silent: true });
        expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
        expect(reservations(join(dataDir, net))).toEqual({});
      });
    }
  });
});
