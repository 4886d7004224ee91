/**
 * dummy — VM lane (this host's kernel has no dummy): ADD/CHECK/DEL
 * across spec versions, a link named like one in the host netns, IPAM required, CHECK failures,
 * DNS from IPAM, DEL robustness, STATUS. The Debian 1.1.1 binaries have no dummy (no interop test).
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execPlugin } from "../harness/exec-plugin.ts";
import { addrsOf, listLinks } from "../harness/ip-oracle.ts";
import { detailedLink, ipIn, linkPluginConf, makeDummyMaster, pingFrom, resultIps } from "../harness/macvlan-helpers.ts";
import { reservations } from "../harness/store.ts";
import { ALL_SPEC_VERSIONS, hasCheck, resultFamily } from "../harness/versions.ts";
import { describeVm, vmPluginCalls } from "../harness/vm-lane.ts";

const { setUp, inv } = vmPluginCalls("dm", "dummy0");

describeVm("dummy", { kernel: ["dummy"] }, () => {
  for (const v of ALL_SPEC_VERSIONS) {
    test(`[${v}] ADD creates a dummy with the address, ${hasCheck(v) ? "CHECK passes, " : ""}DEL removes it and the lease`, async () => {
      const { cid, net, ns, dataDir } = await setUp("add");
      const conf = linkPluginConf({ type: "dummy", name: net, cniVersion: v, dataDir, subnet: "10.131.0.0/24" });
      const result = expectResult(await execPlugin("dummy", inv(ns.path, "ADD", conf, cid)));
      expect(resultIps(result).map((i) => i.address)).toEqual(["10.131.0.2/24"]);
      const link = detailedLink(ns.path, "dummy0")!;
      expect(link.linkinfo.info_kind).toBe("dummy");
      expect(link.flags).toContain("UP");
      expect(addrsOf(ns.path, "dummy0")).toContain("10.131.0.2/24");
      ipIn(ns.path, "link", "set", "lo", "up");
      expect(pingFrom(ns.path, "10.131.0.2")).toBe(true);
      if (resultFamily(v) !== "0.2") expect(result.interfaces).toEqual([{ name: "dummy0", mac: link.address, sandbox: ns.path }]);
      if (hasCheck(v)) expectSuccess(await execPlugin("dummy", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
      expectSuccess(await execPlugin("dummy", inv(ns.path, "DEL", conf, cid)), { silent: true });
      expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
      expect(reservations(join(dataDir, net))).toEqual({});
      expectSuccess(await execPlugin("dummy", inv(ns.path, "DEL", conf, cid)), { silent: true });
    });
  }

  test("a link with the same name in the host netns does not get in the way", async () => {
    const { cid, net, ns, dataDir } = await setUp("conflict");
    makeDummyMaster({ name: "dummy0" });
    const conf = linkPluginConf({ type: "dummy", name: net, dataDir, subnet: "10.132.0.0/24" });
    expectResult(await execPlugin("dummy", inv(ns.path, "ADD", conf, cid)));
    expect(detailedLink(ns.path, "dummy0")!.linkinfo.info_kind).toBe("dummy");
    expect(detailedLink(undefined, "dummy0")).toBeDefined();
    expectSuccess(await execPlugin("dummy", inv(ns.path, "DEL", conf, cid)));
    expect(detailedLink(undefined, "dummy0")).toBeDefined();
  });

  test("IPAM is required on ADD and CHECK", async () => {
    const { cid, net, ns } = await setUp("noipam");
    const conf = linkPluginConf({ type: "dummy", name: net, subnet: null });
    expectCniError(await execPlugin("dummy", inv(ns.path, "ADD", conf, cid)), { code: 7, msg: "dummy interface requires an IPAM configuration" });
    expectCniError(await execPlugin("dummy", inv(ns.path, "CHECK", conf, cid)), { code: 7, msg: "dummy interface requires an IPAM configuration" });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    expectSuccess(await execPlugin("dummy", inv(ns.path, "DEL", conf, cid)), { silent: true });
  });

  test("result DNS comes from IPAM; the config dns is not used (as upstream)", async () => {
    const { cid, net, ns, dataDir } = await setUp("dns");
    const resolvConf = join(dataDir, "resolv.conf");
    writeFileSync(resolvConf, "nameserver 192.0.2.53\n");
    const conf = linkPluginConf({ type: "dummy", name: net, dataDir, subnet: "10.133.0.0/24", ipam: { resolvConf }, dns: { nameservers: ["198.51.100.1"] } });
    const result = expectResult(await execPlugin("dummy", inv(ns.path, "ADD", conf, cid)));
    expect(result.dns).toEqual({ nameservers: ["192.0.2.53"] });
    expectSuccess(await execPlugin("dummy", inv(ns.path, "DEL", conf, cid)));
  });

  test("CHECK fails when the link is down, has another MAC, or the prevResult is missing", async () => {
    const { cid, net, ns, dataDir } = await setUp("chk");
    const conf = linkPluginConf({ type: "dummy", name: net, dataDir, subnet: "10.134.0.0/24" });
    const result = expectResult(await execPlugin("dummy", inv(ns.path, "ADD", conf, cid)));
    expectCniError(await execPlugin("dummy", inv(ns.path, "CHECK", conf, cid)), { code: 999, msg: "dummy: Required prevResult missing" });
    const wrongMac = structuredClone(result);
    wrongMac.interfaces[0].mac = "02:00:00:00:00:77";
    expectCniError(await execPlugin("dummy", inv(ns.path, "CHECK", { ...conf, prevResult: wrongMac }, cid)), { code: 999, msg: "doesn't match container Mac" });
    ipIn(ns.path, "link", "set", "dummy0", "down");
    expectCniError(await execPlugin("dummy", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { code: 999, msg: "Interface dummy0 is down" });
    expectSuccess(await execPlugin("dummy", inv(ns.path, "DEL", conf, cid)));
  });

  test("DEL with the netns gone releases the lease; STATUS delegates to IPAM", async () => {
    const { cid, net, ns, dataDir } = await setUp("gone");
    const conf = linkPluginConf({ type: "dummy", name: net, dataDir, subnet: "10.135.0.0/24" });
    expectResult(await execPlugin("dummy", inv(ns.path, "ADD", conf, cid)));
    await ns.destroy();
    expectSuccess(await execPlugin("dummy", inv(ns.path, "DEL", conf, cid)), { silent: true });
    expect(reservations(join(dataDir, net))).toEqual({});
    expectSuccess(await execPlugin("dummy", { command: "STATUS", config: { ...conf, cniVersion: "1.1.0" } }), { silent: true });
    expectCniError(await execPlugin("dummy", { command: "STATUS", config: { cniVersion: "1.1.0", name: net, type: "dummy" } }), { code: 7, msg: "dummy interface requires an IPAM configuration" });
  });
});
