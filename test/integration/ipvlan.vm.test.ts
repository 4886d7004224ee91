/**
 * ipvlan — VM lane (this host's kernel has no ipvlan): ADD/CHECK/DEL
 * across spec versions and linkInContainer, l2 and l3 pairs pinging each other, chained mode
 * (prevResult IPs and master, no IPAM), default-route master, DEL with the master gone, errors,
 * STATUS, and interop with the Go reference (Debian 1.1.1, /usr/lib/cni/ipvlan).
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execGoPlugin, execPlugin } from "../harness/exec-plugin.ts";
import { addrsOf, listLinks } from "../harness/ip-oracle.ts";
import { detailedLink, expectL2Lifecycle, ipIn, linkPluginConf, makeVethMaster, pingFrom, resultIps, setDefaultRouteVia } from "../harness/macvlan-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { ALL_SPEC_VERSIONS, hasCheck, resultFamily } from "../harness/versions.ts";
import { describeVm, vmPluginCalls } from "../harness/vm-lane.ts";

const { ids, setUp, inv } = vmPluginCalls("ipv", "eth0");

describeVm("ipvlan", { kernel: ["ipvlan"] }, () => {
  for (const v of ALL_SPEC_VERSIONS) {
    const variants = v === "1.0.0" ? ([false, true, undefined] as const) : ([undefined] as const);
    for (const lic of variants) {
      test(`[${v}] linkInContainer=${lic}: ADD creates an l2 ipvlan with the address, ${hasCheck(v) ? "CHECK passes, " : ""}DEL removes it and the lease`, async () => {
        const { cid, net, ns, dataDir } = await setUp("add");
        const master = makeVethMaster(lic === true ? { netns: ns.path } : {});
        const conf = linkPluginConf({
          type: "ipvlan", name: net, cniVersion: v, dataDir, subnet: "10.101.0.0/24", master: master.name, mtu: 1400,
          ...(lic === undefined ? {} : { linkInContainer: lic }),
        });
        const result = expectResult(await execPlugin("ipvlan", inv(ns.path, "ADD", conf, cid)));
        expect(resultIps(result).map((i) => i.address)).toEqual(["10.101.0.2/24"]);
        const link = detailedLink(ns.path, "eth0")!;
        expect(link.linkinfo.info_kind).toBe("ipvlan");
        expect(link.linkinfo.info_data.mode).toBe("l2");
        expect(link.mtu).toBe(1400);
        expect(link.flags).toContain("UP");
        expect(addrsOf(ns.path, "eth0")).toContain("10.101.0.2/24");
        if (resultFamily(v) !== "0.2") expect(result.interfaces).toEqual([{ name: "eth0", mac: link.address, sandbox: ns.path, ...(v === "1.1.0" ? { mtu: 1400 } : {}) }]);
        if (hasCheck(v)) expectSuccess(await execPlugin("ipvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
        expectSuccess(await execPlugin("ipvlan", inv(ns.path, "DEL", conf, cid)), { silent: true });
        expect(listLinks(ns.path).map((l) => l.ifname).filter((x) => x === "eth0")).toEqual([]);
        expect(reservations(join(dataDir, net))).toEqual({});
        expectSuccess(await execPlugin("ipvlan", inv(ns.path, "DEL", conf, cid)), { silent: true });
      });
    }
  }

  for (const mode of ["l2", "l3", "l3s"] as const) {
    test(`two containers on one master in mode ${mode} ping each other`, async () => {
      const { net, dataDir, ns: a } = await setUp(`pair-${mode}`);
      const master = makeVethMaster();
      const conf = linkPluginConf({ type: "ipvlan", name: net, dataDir, subnet: "10.102.0.0/24", master: master.name, mode });
      const b = await createContainerNetns();
      const ra = expectResult(await execPlugin("ipvlan", inv(a.path, "ADD", conf, `${net}-a`)));
      const rb = expectResult(await execPlugin("ipvlan", inv(b.path, "ADD", conf, `${net}-b`)));
      expect(detailedLink(a.path, "eth0")!.linkinfo.info_data.mode).toBe(mode);
      expect(pingFrom(a.path, rb.ips[0].address.split("/")[0])).toBe(true);
      expect(pingFrom(b.path, ra.ips[0].address.split("/")[0])).toBe(true);
      expectSuccess(await execPlugin("ipvlan", inv(a.path, "CHECK", { ...conf, prevResult: ra }, `${net}-a`)), { silent: true });
      expectSuccess(await execPlugin("ipvlan", inv(a.path, "DEL", conf, `${net}-a`)));
      expectSuccess(await execPlugin("ipvlan", inv(b.path, "DEL", conf, `${net}-b`)));
    });
  }

  test("chained: no IPAM, the prevResult's IPs and single interface (as master) are used", async () => {
    const { cid, net, ns } = await setUp("chained");
    const master = makeVethMaster();
    const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: master.name }], ips: [{ address: "10.103.0.5/24", gateway: "10.103.0.1", interface: 0 }], routes: [{ dst: "10.200.0.0/16", gw: "10.103.0.1" }] };
    const conf = { cniVersion: "1.0.0", name: net, type: "ipvlan", prevResult };
    const result = expectResult(await execPlugin("ipvlan", inv(ns.path, "ADD", conf, cid)));
    expect(result.ips).toEqual([{ address: "10.103.0.5/24", gateway: "10.103.0.1", interface: 0 }]);
    expect(result.interfaces[0].name).toBe("eth0");
    expect(addrsOf(ns.path, "eth0")).toContain("10.103.0.5/24");
    expect(detailedLink(ns.path, "eth0")!.linkinfo.info_kind).toBe("ipvlan");
    expect(ipIn(ns.path, "route", "show", "10.200.0.0/16")).toContain("via 10.103.0.1 dev eth0");
    expectSuccess(await execPlugin("ipvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
    expectSuccess(await execPlugin("ipvlan", inv(ns.path, "DEL", { ...conf, prevResult: result }, cid)), { silent: true });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
  });

  test("chained with a prevResult of two interfaces and no master: refused before anything is created", async () => {
    const { cid, net, ns } = await setUp("chainbad");
    const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: "a" }, { name: "b" }], ips: [{ address: "10.104.0.5/24" }] };
    expectCniError(await execPlugin("ipvlan", inv(ns.path, "ADD", { cniVersion: "1.0.0", name: net, type: "ipvlan", prevResult }, cid)), {
      code: 999,
      msg: "chained master failure. PrevResult lacks a single named interface",
    });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
  });

  test("without master and prevResult: the default-route interface; DEL works without a default route", async () => {
    const { cid, net, ns, dataDir } = await setUp("defroute");
    const master = makeVethMaster();
    setDefaultRouteVia(master.name, "10.105.0.10/24", "10.105.0.1");
    const conf = linkPluginConf({ type: "ipvlan", name: net, dataDir, subnet: "10.106.0.0/24" });
    const result = expectResult(await execPlugin("ipvlan", inv(ns.path, "ADD", conf, cid)));
    expect(detailedLink(ns.path, "eth0")!.linkinfo.info_kind).toBe("ipvlan");
    expectSuccess(await execPlugin("ipvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
    ipIn(undefined, "route", "del", "default");
    expectSuccess(await execPlugin("ipvlan", inv(ns.path, "DEL", conf, cid)), { silent: true });
    expect(reservations(join(dataDir, net))).toEqual({});
  });

  test("DEL works when the master is gone", async () => {
    const { cid, net, ns, dataDir } = await setUp("mastergone");
    const master = makeVethMaster();
    const conf = linkPluginConf({ type: "ipvlan", name: net, dataDir, subnet: "10.107.0.0/24", master: master.name });
    expectResult(await execPlugin("ipvlan", inv(ns.path, "ADD", conf, cid)));
    ipIn(undefined, "link", "del", master.name);
    expectSuccess(await execPlugin("ipvlan", inv(ns.path, "DEL", conf, cid)), { silent: true });
    expect(reservations(join(dataDir, net))).toEqual({});
  });

  test("errors: unknown mode, missing master, MTU above the master's", async () => {
    const { cid, net, ns, dataDir } = await setUp("errors");
    const master = makeVethMaster({ mtu: 1400 });
    const base = { type: "ipvlan", name: net, dataDir, subnet: "10.108.0.0/24" };
    expectCniError(await execPlugin("ipvlan", inv(ns.path, "ADD", linkPluginConf({ ...base, master: master.name, mode: "l4" }), cid)), { code: 7, msg: 'unknown ipvlan mode: "l4"' });
    expectCniError(await execPlugin("ipvlan", inv(ns.path, "ADD", linkPluginConf({ ...base, master: "nosuch0" }), cid)), { code: 999, msg: 'failed to lookup master "nosuch0"' });
    expectCniError(await execPlugin("ipvlan", inv(ns.path, "ADD", linkPluginConf({ ...base, master: master.name, mtu: 1500 }), cid)), { code: 7, msg: "invalid MTU 1500" });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    expect(reservations(join(dataDir, net))).toEqual({});
  });

  for (const lic of [false, true]) {
    test(`L2 (no ipam, no prevResult, linkInContainer=${lic}): the ipvlan is up without addresses, the result lists only it; CHECK, DEL; refused at 0.2.0`, async () => {
      const { cid, net, ns } = await setUp("l2");
      const master = makeVethMaster(lic ? { netns: ns.path } : {});
      const conf = { cniVersion: "1.1.0", name: net, type: "ipvlan", master: master.name, mode: "l2", linkInContainer: lic };
      expectCniError(await execPlugin("ipvlan", inv(ns.path, "ADD", { ...conf, cniVersion: "0.1.0" }, cid)), { code: 999, msg: "cannot convert: no valid IP addresses" });
      expect(listLinks(ns.path).some((l) => l.ifname === "eth0")).toBe(false);
      const link = await expectL2Lifecycle(conf, ns.path, cid);
      expect(link.linkinfo.info_data.mode).toBe("l2");
    });
  }

  test("CHECK fails on a mode mismatch", async () => {
    const { cid, net, ns, dataDir } = await setUp("chkmode");
    const master = makeVethMaster();
    const conf = linkPluginConf({ type: "ipvlan", name: net, dataDir, subnet: "10.109.0.0/24", master: master.name, mode: "l2" });
    const result = expectResult(await execPlugin("ipvlan", inv(ns.path, "ADD", conf, cid)));
    expectCniError(await execPlugin("ipvlan", inv(ns.path, "CHECK", { ...conf, mode: "l3", prevResult: result }, cid)), { code: 999, msg: "Container IPVlan mode l2 does not match expected value: l3" });
    expectSuccess(await execPlugin("ipvlan", inv(ns.path, "DEL", conf, cid)));
  });

  test("STATUS (1.1.0) delegates to IPAM when set", async () => {
    const { net } = ids("status");
    expectSuccess(await execPlugin("ipvlan", { command: "STATUS", config: linkPluginConf({ type: "ipvlan", name: net, cniVersion: "1.1.0", dataDir: makeTempDir("ipv-"), subnet: "10.110.0.0/24" }) }), { silent: true });
    expectCniError(await execPlugin("ipvlan", { command: "STATUS", config: { cniVersion: "1.1.0", name: net, type: "ipvlan", ipam: { type: "nosuchipam" } } }), { code: 999, msg: "nosuchipam" });
  });

  describe.skipIf(!hasGoPlugin("ipvlan"))("interop with the Go reference (1.1.1)", () => {
    for (const dir of ["go→ts", "ts→go"] as const) {
      test(`[1.0.0] ${dir}: ADD by one, CHECK and DEL by the other`, async () => {
        const { cid, net, ns, dataDir } = await setUp("interop");
        const master = makeVethMaster();
        const conf = linkPluginConf({ type: "ipvlan", name: net, cniVersion: "1.0.0", dataDir, subnet: "10.111.0.0/24", master: master.name, mode: "l3" });
        const [adder, other] = dir === "go→ts" ? [execGoPlugin, execPlugin] : [execPlugin, execGoPlugin];
        const result = expectResult(await adder("ipvlan", inv(ns.path, "ADD", conf, cid)));
        const withPrev = { ...conf, prevResult: result };
        expectSuccess(await other("ipvlan", inv(ns.path, "CHECK", withPrev, cid)), { silent: true });
        expectSuccess(await other("ipvlan", inv(ns.path, "DEL", withPrev, cid)), { silent: true });
        expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
        expect(reservations(join(dataDir, net))).toEqual({});
      });
    }
  });
});
