/**
 * macvlan: every option across spec versions with linkInContainer
 * false / true / absent, checked with `ip -d -j` and real traffic: two containers on one master
 * reach each other in bridge mode and not in private mode. MAC precedence, MTU bounds, bcqueuelen,
 * default-route master, CHECK failures, DEL with the master or the netns gone, STATUS, and interop
 * with the Go reference (Debian 1.1.1) in both directions.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execGoPlugin, execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { addrsOf, ipJson, listLinks } from "../harness/ip-oracle.ts";
import { detailedLink, ipIn, linkPluginConf, makeVethMaster, pingFrom, resultIps, setDefaultRouteVia } from "../harness/macvlan-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { ALL_SPEC_VERSIONS, GO_REFERENCE_VERSIONS, hasCheck, hasStatusAndGc, resultFamily } from "../harness/versions.ts";
import { readFileSync } from "node:fs";

let n = 0;
function ids(tag: string): { cid: string; net: string } {
  n++;
  return { cid: `mv-${tag}-${process.pid}-${n}`, net: `mvnet-${tag}-${n}` };
}
function inv(netns: string | undefined, command: string, config: unknown, cid: string, extra: Partial<PluginInvocation> = {}): PluginInvocation {
  return { command, containerID: cid, netns, ifName: "eth0", config, ...extra };
}
function nsSysctl(netns: string, key: string): string {
  const run = Bun.spawnSync(["nsenter", `--net=${netns}`, "--", "cat", `/proc/sys/${key}`], { stdout: "pipe" });
  return run.stdout.toString().trim();
}
const LINK_IN_CONTAINER = [false, true, undefined] as const;

describe.skipIf(!sandboxed())("macvlan", () => {
  useFixtureCleanup();

  for (const v of ALL_SPEC_VERSIONS) {
    for (const lic of LINK_IN_CONTAINER) {
      test(`[${v}] linkInContainer=${lic}: L3 ADD creates a macvlan on the master, ${hasCheck(v) ? "CHECK passes, " : ""}DEL removes it and the lease`, async () => {
        const { cid, net } = ids("l3");
        const ns = await createContainerNetns();
        const master = makeVethMaster(lic === true ? { netns: ns.path } : {});
        const dataDir = makeTempDir("mv-store-");
        const conf = linkPluginConf({
          type: "macvlan", name: net, cniVersion: v, dataDir, subnet: "10.71.0.0/24", master: master.name, mode: "bridge", mtu: 1400,
          ...(lic === undefined ? {} : { linkInContainer: lic }),
        });
        const result = expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
        expect(result.cniVersion).toBe(v);
        const ips = resultIps(result);
        expect(ips.map((i) => i.address)).toEqual(["10.71.0.2/24"]);
        const link = detailedLink(ns.path, "eth0")!;
        expect(link.linkinfo.info_kind).toBe("macvlan");
        expect(link.linkinfo.info_data.mode).toBe("bridge");
        expect(link.mtu).toBe(1400);
        expect(link.flags).toContain("UP");
        if (lic === true) expect(link.link).toBe(master.name);
        expect(addrsOf(ns.path, "eth0")).toContain("10.71.0.2/24");
        expect(nsSysctl(ns.path, "net/ipv4/conf/eth0/arp_notify")).toBe("1");
        expect(nsSysctl(ns.path, "net/ipv6/conf/eth0/ndisc_notify")).toBe("1");
        if (resultFamily(v) !== "0.2") {
          // The MTU the plugin set is in the interface entry from 1.1.0 on.
          expect(result.interfaces).toEqual([{ name: "eth0", mac: link.address, sandbox: ns.path, ...(v === "1.1.0" ? { mtu: 1400 } : {}) }]);
          expect(result.ips[0].interface).toBe(0);
        }
        // No temporary link left behind anywhere.
        expect(listLinks(ns.path).map((l) => l.ifname).filter((x) => x.startsWith("veth"))).toEqual([]);
        expect(listLinks(undefined).map((l) => l.ifname).filter((x) => /^veth[0-9a-f]{8}$/.test(x))).toEqual([]);
        if (hasCheck(v)) {
          expectSuccess(await execPlugin("macvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
        }
        const delConf = hasCheck(v) ? { ...conf, prevResult: result } : conf;
        expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", delConf, cid)), { silent: true });
        expect(detailedLink(ns.path, "eth0")).toBeUndefined();
        expect(reservations(join(dataDir, net))).toEqual({});
        expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", delConf, cid)), { silent: true });
      });
    }

    test(`[${v}] L2 (no IPAM): ${resultFamily(v) === "0.2" ? "refused before anything is created (no IPs to report)" : "link UP without addresses"}`, async () => {
      const { cid, net } = ids("l2");
      const ns = await createContainerNetns();
      const master = makeVethMaster();
      const conf = linkPluginConf({ type: "macvlan", name: net, cniVersion: v, subnet: null, master: master.name });
      const run = await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid));
      if (resultFamily(v) === "0.2") {
        expectCniError(run, { code: 999, msg: "cannot convert: no valid IP addresses" });
        expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
        return;
      }
      const result = expectResult(run);
      expect(result.ips ?? []).toEqual([]);
      const link = detailedLink(ns.path, "eth0")!;
      expect(link.flags).toContain("UP");
      expect(link.mtu).toBe(1500);
      expect(result.interfaces[0]).toEqual({ name: "eth0", mac: link.address, sandbox: ns.path });
      if (hasCheck(v)) expectSuccess(await execPlugin("macvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
      expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", conf, cid)), { silent: true });
      expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    });
  }

  for (const mode of ["bridge", "private", "vepa"] as const) {
    test(`two containers on one master, mode ${mode}: ${mode === "bridge" ? "they reach each other" : "they do not reach each other"}`, async () => {
      const { net } = ids(`pair-${mode}`);
      const master = makeVethMaster();
      const dataDir = makeTempDir("mv-store-");
      const conf = linkPluginConf({ type: "macvlan", name: net, dataDir, subnet: "10.72.0.0/24", master: master.name, mode });
      const a = await createContainerNetns();
      const b = await createContainerNetns();
      const ra = expectResult(await execPlugin("macvlan", inv(a.path, "ADD", conf, `${net}-a`)));
      const rb = expectResult(await execPlugin("macvlan", inv(b.path, "ADD", conf, `${net}-b`)));
      expect(detailedLink(a.path, "eth0")!.linkinfo.info_data.mode).toBe(mode);
      const ipA = ra.ips[0].address.split("/")[0];
      const ipB = rb.ips[0].address.split("/")[0];
      expect(pingFrom(a.path, ipB)).toBe(mode === "bridge");
      expect(pingFrom(b.path, ipA)).toBe(mode === "bridge");
      expectSuccess(await execPlugin("macvlan", inv(a.path, "DEL", conf, `${net}-a`)));
      expectSuccess(await execPlugin("macvlan", inv(b.path, "DEL", conf, `${net}-b`)));
      expect(reservations(join(dataDir, net))).toEqual({});
    });
  }

  test("a container reaches a host address on the master's peer (traffic leaves through the master)", async () => {
    const { cid, net } = ids("uplink");
    const master = makeVethMaster();
    // The far end of the "wire": put the peer into its own namespace with an address.
    const peerNs = await createContainerNetns();
    ipIn(undefined, "link", "set", master.peer, "netns", peerNs.path);
    ipIn(peerNs.path, "addr", "add", "10.73.0.254/24", "dev", master.peer);
    ipIn(peerNs.path, "link", "set", master.peer, "up");
    const ns = await createContainerNetns();
    const conf = linkPluginConf({ type: "macvlan", name: net, dataDir: makeTempDir("mv-store-"), subnet: "10.73.0.0/24", master: master.name });
    expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
    expect(pingFrom(ns.path, "10.73.0.254")).toBe(true);
    expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", conf, cid)));
  });

  test("passthru mode takes the master's MAC", async () => {
    const { cid, net } = ids("passthru");
    const master = makeVethMaster();
    const ns = await createContainerNetns();
    const conf = linkPluginConf({ type: "macvlan", name: net, subnet: null, master: master.name, mode: "passthru" });
    const result = expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
    expect(detailedLink(ns.path, "eth0")!.linkinfo.info_data.mode).toBe("passthru");
    expect(result.interfaces[0].mac).toBe(detailedLink(undefined, master.name)!.address);
    expectSuccess(await execPlugin("macvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
    expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", conf, cid)));
  });

  describe("MAC address", () => {
    const cases: { label: string; mac?: string; args?: string; runtime?: string; want: string }[] = [
      { label: "config mac", mac: "02:11:22:33:44:01", want: "02:11:22:33:44:01" },
      { label: "CNI_ARGS MAC wins over config", mac: "02:11:22:33:44:01", args: "IgnoreUnknown=1;MAC=02:11:22:33:44:02", want: "02:11:22:33:44:02" },
      { label: "runtimeConfig.mac wins over both", mac: "02:11:22:33:44:01", args: "MAC=02:11:22:33:44:02", runtime: "02-11-22-33-44-03", want: "02:11:22:33:44:03" },
    ];
    for (const c of cases) {
      test(c.label, async () => {
        const { cid, net } = ids("mac");
        const master = makeVethMaster();
        const ns = await createContainerNetns();
        const conf = linkPluginConf({
          type: "macvlan", name: net, subnet: null, master: master.name,
          ...(c.mac ? { mac: c.mac } : {}), ...(c.runtime ? { runtimeConfig: { mac: c.runtime } } : {}),
        });
        const result = expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid, c.args ? { args: c.args } : {})));
        expect(detailedLink(ns.path, "eth0")!.address).toBe(c.want);
        expect(result.interfaces[0].mac).toBe(c.want);
        expectSuccess(await execPlugin("macvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { silent: true });
        expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", conf, cid)));
      });
    }
    test("an invalid MAC is refused before anything is created", async () => {
      const { cid, net } = ids("badmac");
      const master = makeVethMaster();
      const ns = await createContainerNetns();
      const conf = linkPluginConf({ type: "macvlan", name: net, subnet: null, master: master.name, mac: "zz:11" });
      expectCniError(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)), { code: 7, msg: "invalid args zz:11 for MAC addr: address zz:11: invalid MAC address" });
      expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    });
    test("unknown CNI_ARGS keys are refused", async () => {
      const { cid, net } = ids("badargs");
      const master = makeVethMaster();
      const ns = await createContainerNetns();
      const conf = linkPluginConf({ type: "macvlan", name: net, subnet: null, master: master.name });
      expectCniError(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid, { args: "FOO=bar" })), { code: 4, msg: 'ARGS: unknown args ["FOO=bar"]' });
    });
  });

  describe("MTU", () => {
    test("larger than the master's is refused (nothing created, no lease taken)", async () => {
      const { cid, net } = ids("bigmtu");
      const master = makeVethMaster({ mtu: 1400 });
      const ns = await createContainerNetns();
      const dataDir = makeTempDir("mv-store-");
      const conf = linkPluginConf({ type: "macvlan", name: net, dataDir, subnet: "10.74.0.0/24", master: master.name, mtu: 1500 });
      expectCniError(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)), { code: 7, msg: "invalid MTU 1500, must be [0, master MTU(1400)]" });
      expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
      expect(reservations(join(dataDir, net))).toEqual({});
    });
    test("negative is refused", async () => {
      const { cid, net } = ids("negmtu");
      const master = makeVethMaster();
      const ns = await createContainerNetns();
      const conf = linkPluginConf({ type: "macvlan", name: net, subnet: null, master: master.name, mtu: -1 });
      expectCniError(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)), { code: 7, msg: "invalid MTU -1" });
    });
    test("0 inherits the master's MTU", async () => {
      const { cid, net } = ids("mtu0");
      const master = makeVethMaster({ mtu: 1300 });
      const ns = await createContainerNetns();
      const conf = linkPluginConf({ type: "macvlan", name: net, subnet: null, master: master.name, mtu: 0 });
      expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
      expect(detailedLink(ns.path, "eth0")!.mtu).toBe(1300);
      expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", conf, cid)));
    });
  });

  test("bcqueuelen is applied", async () => {
    const { cid, net } = ids("bcq");
    const master = makeVethMaster();
    const ns = await createContainerNetns();
    const conf = linkPluginConf({ type: "macvlan", name: net, subnet: null, master: master.name, bcqueuelen: 123 });
    expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
    expect(detailedLink(ns.path, "eth0")!.linkinfo.info_data.bcqueuelen).toBe(123);
    expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", conf, cid)));
  });

  test("without master: the default-route interface (host netns, or the container's with linkInContainer)", async () => {
    const { cid, net } = ids("defroute");
    const master = makeVethMaster();
    setDefaultRouteVia(master.name, "10.75.0.10/24", "10.75.0.1");
    const ns = await createContainerNetns();
    const conf = linkPluginConf({ type: "macvlan", name: net, subnet: null });
    expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
    expect(detailedLink(ns.path, "eth0")!.linkinfo.info_kind).toBe("macvlan");
    expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", conf, cid)));
    ipIn(undefined, "route", "del", "default");

    // linkInContainer: the default route of the container's netns decides.
    const ns2 = await createContainerNetns();
    const inner = makeVethMaster({ netns: ns2.path, name: "up0" });
    ipIn(ns2.path, "addr", "add", "10.76.0.10/24", "dev", inner.name);
    ipIn(ns2.path, "route", "add", "default", "via", "10.76.0.1");
    const conf2 = linkPluginConf({ type: "macvlan", name: net, subnet: null, linkInContainer: true });
    expectResult(await execPlugin("macvlan", inv(ns2.path, "ADD", conf2, `${cid}-2`)));
    expect(detailedLink(ns2.path, "eth0")!.link).toBe("up0");
    expectSuccess(await execPlugin("macvlan", inv(ns2.path, "DEL", conf2, `${cid}-2`)));
  });

  test("without master, chained (#901): the prevResult's host interface is the master, not the default-route one", async () => {
    const { cid, net } = ids("chained");
    const other = makeVethMaster();
    setDefaultRouteVia(other.name, "10.77.0.10/24", "10.77.0.1");
    const wanted = makeVethMaster();
    const ns = await createContainerNetns();
    // As a plugin before macvlan in the chain would report it: a host-side link and a container link.
    const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: wanted.name }, { name: "eth9", sandbox: ns.path }], ips: [] };
    const conf = { ...linkPluginConf({ type: "macvlan", name: net, subnet: null }), prevResult };
    expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
    const ifindex = (name: string): number => ipJson<{ ifindex: number }[]>(undefined, "link", "show", name)[0]!.ifindex;
    // The master is in another netns: `ip -d -j` gives its index there, not its name.
    expect(detailedLink(ns.path, "eth0")!.link_index).toBe(ifindex(wanted.name));
    expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", conf, cid)));
    // A prevResult with nothing on the master's side: the default-route interface, as before.
    const containerOnly = { ...conf, prevResult: { ...prevResult, interfaces: [{ name: "eth9", sandbox: ns.path }] } };
    expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", containerOnly, cid)));
    expect(detailedLink(ns.path, "eth0")!.link_index).toBe(ifindex(other.name));
    expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", containerOnly, cid)));
    ipIn(undefined, "route", "del", "default");
  });

  test("no master and no default route: a clear error", async () => {
    const { cid, net } = ids("noroute");
    const ns = await createContainerNetns();
    const conf = linkPluginConf({ type: "macvlan", name: net, subnet: null });
    expectCniError(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)), { code: 999, msg: "no default route interface found" });
  });

  test("a missing master fails ADD without taking an address", async () => {
    const { cid, net } = ids("nomaster");
    const ns = await createContainerNetns();
    const dataDir = makeTempDir("mv-store-");
    const conf = linkPluginConf({ type: "macvlan", name: net, dataDir, subnet: "10.77.0.0/24", master: "nosuchdev0" });
    expectCniError(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)), { code: 999, msg: 'failed to lookup master "nosuchdev0": Link not found' });
    expect(reservations(join(dataDir, net))).toEqual({});
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
  });

  test("unknown mode is refused", async () => {
    const { cid, net } = ids("badmode");
    const master = makeVethMaster();
    const ns = await createContainerNetns();
    const conf = linkPluginConf({ type: "macvlan", name: net, subnet: null, master: master.name, mode: "bogus" });
    expectCniError(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)), { code: 7, msg: 'unknown macvlan mode: "bogus"' });
  });

  test("ADD twice with the same ifname fails and leaves the first link alone", async () => {
    const { cid, net } = ids("twice");
    const master = makeVethMaster();
    const ns = await createContainerNetns();
    const conf = linkPluginConf({ type: "macvlan", name: net, subnet: null, master: master.name });
    const first = expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
    expectCniError(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)), { code: 999, msg: 'failed to rename macvlan to "eth0"' });
    expect(listLinks(ns.path).map((l) => l.ifname).sort()).toEqual(["eth0", "lo"]);
    expect(detailedLink(ns.path, "eth0")!.address).toBe(first.interfaces[0].mac);
  });

  describe("CHECK failures", () => {
    const setup = async () => {
      const { cid, net } = ids("chk");
      const master = makeVethMaster();
      const ns = await createContainerNetns();
      const dataDir = makeTempDir("mv-store-");
      const conf = linkPluginConf({ type: "macvlan", name: net, dataDir, subnet: "10.78.0.0/24", master: master.name, mode: "bridge" });
      const result = expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
      return { cid, ns, conf, result, master };
    };
    test("mode differs from the config", async () => {
      const { cid, ns, conf, result } = await setup();
      expectCniError(await execPlugin("macvlan", inv(ns.path, "CHECK", { ...conf, mode: "private", prevResult: result }, cid)), {
        code: 999,
        msg: "container macvlan mode bridge does not match expected value: private",
      });
    });
    test("MAC differs from the prevResult", async () => {
      const { cid, ns, conf, result } = await setup();
      result.interfaces[0].mac = "02:00:00:00:00:99";
      expectCniError(await execPlugin("macvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { code: 999, msg: "Mac 02:00:00:00:00:99 doesn't match" });
    });
    test("address removed behind our back", async () => {
      const { cid, ns, conf, result } = await setup();
      ipIn(ns.path, "addr", "flush", "dev", "eth0");
      expectCniError(await execPlugin("macvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { code: 999, msg: "Failed to match addr 10.78.0.2/24" });
    });
    test("prevResult missing", async () => {
      const { cid, ns, conf } = await setup();
      expectCniError(await execPlugin("macvlan", inv(ns.path, "CHECK", conf, cid)), { code: 999, msg: "required prevResult missing" });
    });
    test("sandbox differs", async () => {
      const { cid, ns, conf, result } = await setup();
      result.interfaces[0].sandbox = "/proc/1/ns/net";
      expectCniError(await execPlugin("macvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { code: 999, msg: "doesn't match configured netns" });
    });
    test("the link is gone", async () => {
      const { cid, ns, conf, result } = await setup();
      ipIn(ns.path, "link", "del", "eth0");
      expectCniError(await execPlugin("macvlan", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { code: 999, msg: "container Interface name in prevResult: eth0 not found" });
    });
  });

  test("DEL works when the master is gone (and releases the address)", async () => {
    const { cid, net } = ids("mastergone");
    const master = makeVethMaster();
    const ns = await createContainerNetns();
    const dataDir = makeTempDir("mv-store-");
    const conf = linkPluginConf({ type: "macvlan", name: net, dataDir, subnet: "10.79.0.0/24", master: master.name, mtu: 1400 });
    const result = expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
    ipIn(undefined, "link", "del", master.name);
    expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", { ...conf, prevResult: result }, cid)), { silent: true });
    expect(reservations(join(dataDir, net))).toEqual({});
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
  });

  test("DEL with the netns gone, and with CNI_NETNS unset, still releases the address", async () => {
    for (const how of ["gone", "unset"] as const) {
      const { cid, net } = ids(`del-${how}`);
      const master = makeVethMaster();
      const ns = await createContainerNetns();
      const dataDir = makeTempDir("mv-store-");
      const conf = linkPluginConf({ type: "macvlan", name: net, dataDir, subnet: "10.80.0.0/24", master: master.name });
      expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
      if (how === "gone") await ns.destroy();
      expectSuccess(await execPlugin("macvlan", inv(how === "gone" ? ns.path : undefined, "DEL", conf, cid)), { silent: true });
      expect(reservations(join(dataDir, net))).toEqual({});
    }
  });

  test("DEL carries on after a failed IPAM DEL: the link goes, the IPAM error is reported", async () => {
    const { cid, net } = ids("ipamdel");
    const master = makeVethMaster();
    const ns = await createContainerNetns();
    const dataDir = makeTempDir("mv-store-");
    const conf = linkPluginConf({ type: "macvlan", name: net, dataDir, subnet: "10.81.0.0/24", master: master.name });
    expectResult(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)));
    const broken = { ...conf, ipam: { ...(conf.ipam as Record<string, unknown>), type: "nosuchipam" } };
    expectCniError(await execPlugin("macvlan", inv(ns.path, "DEL", broken, cid)), { code: 999, msg: 'failed to find plugin "nosuchipam"' });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    expect(Object.keys(reservations(join(dataDir, net)))).toEqual(["10.81.0.2"]);
    expectSuccess(await execPlugin("macvlan", inv(ns.path, "DEL", conf, cid)), { silent: true });
    expect(reservations(join(dataDir, net))).toEqual({});
  });

  test("a failure after IPAM ADD rolls back through the DEL steps: the lease and the link go", async () => {
    const { cid, net } = ids("rollback");
    const master = makeVethMaster();
    const ns = await createContainerNetns();
    const dataDir = makeTempDir("mv-store-");
    // The route's gateway is unreachable: ConfigureIface fails after the link exists and IPAM ran.
    const conf = linkPluginConf({
      type: "macvlan", name: net, dataDir, subnet: "10.82.0.0/24", master: master.name,
      ipam: { routes: [{ dst: "172.16.0.0/16", gw: "192.0.2.1" }] },
    });
    expectCniError(await execPlugin("macvlan", inv(ns.path, "ADD", conf, cid)), { code: 999, msg: "failed to add route '{172.16.0.0 ffff0000} via 192.0.2.1 dev eth0" });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    expect(listLinks(undefined).map((l) => l.ifname).filter((x) => /^veth[0-9a-f]{8}$/.test(x))).toEqual([]);
    expect(reservations(join(dataDir, net))).toEqual({});
  });

  test("STATUS: code 51 for a missing master, delegates to IPAM when set, succeeds for L2; refused before 1.1.0", async () => {
    const { net } = ids("status");
    const dataDir = makeTempDir("mv-store-");
    const missing = linkPluginConf({ type: "macvlan", name: net, cniVersion: "1.1.0", dataDir, subnet: "10.81.0.0/24", master: "whatever0" });
    expectCniError(await execPlugin("macvlan", { command: "STATUS", config: missing }), { code: 51, msg: 'failed to lookup master "whatever0"' });
    const l3 = { ...missing, master: makeVethMaster().name };
    expectSuccess(await execPlugin("macvlan", { command: "STATUS", config: l3 }), { silent: true });
    const l2 = linkPluginConf({ type: "macvlan", name: net, cniVersion: "1.1.0", subnet: null });
    expectSuccess(await execPlugin("macvlan", { command: "STATUS", config: l2 }), { silent: true });
    const badIpam = { ...l2, ipam: { type: "nosuchipam" } };
    expectCniError(await execPlugin("macvlan", { command: "STATUS", config: badIpam }), { code: 999, msg: 'failed to find plugin "nosuchipam"' });
    expect(hasStatusAndGc("1.0.0")).toBe(false);
    expectCniError(await execPlugin("macvlan", { command: "STATUS", config: { ...l2, cniVersion: "1.0.0" } }), { code: 1 });
  });

  describe.skipIf(!hasGoPlugin("macvlan"))("interop with the Go reference (1.1.1)", () => {
    for (const v of GO_REFERENCE_VERSIONS.filter(hasCheck)) {
      for (const dir of ["go→ts", "ts→go"] as const) {
        test(`[${v}] ${dir}: ADD by one, CHECK and DEL by the other`, async () => {
          const { cid, net } = ids("interop");
          const master = makeVethMaster();
          const ns = await createContainerNetns();
          const dataDir = makeTempDir("mv-interop-");
          const conf = linkPluginConf({ type: "macvlan", name: net, cniVersion: v, dataDir, subnet: "10.82.0.0/24", master: master.name, mode: "private", mtu: 1450 });
          const [adder, other] = dir === "go→ts" ? [execGoPlugin, execPlugin] : [execPlugin, execGoPlugin];
          const result = expectResult(await adder("macvlan", inv(ns.path, "ADD", conf, cid)));
          expect(detailedLink(ns.path, "eth0")!.mtu).toBe(1450);
          const withPrev = { ...conf, prevResult: result };
          expectSuccess(await other("macvlan", inv(ns.path, "CHECK", withPrev, cid)), { silent: true });
          expectSuccess(await other("macvlan", inv(ns.path, "DEL", withPrev, cid)), { silent: true });
          expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
          expect(reservations(join(dataDir, net))).toEqual({});
        });
      }
    }
    test("same result as Go for the same request (modulo MAC)", async () => {
      const master = makeVethMaster();
      const outs: Record<string, any>[] = [];
      for (const run of [execGoPlugin, execPlugin]) {
        const { cid, net } = ids("same");
        const ns = await createContainerNetns();
        const conf = linkPluginConf({ type: "macvlan", name: "mvsame", cniVersion: "0.4.0", dataDir: makeTempDir("mv-same-"), subnet: "10.83.0.0/24", master: master.name, dns: { nameservers: ["192.0.2.1"] } });
        const r = expectResult(await run("macvlan", inv(ns.path, "ADD", conf, cid)));
        r.interfaces[0].mac = "x";
        r.interfaces[0].sandbox = "x";
        outs.push(r);
        expectSuccess(await run("macvlan", inv(ns.path, "DEL", conf, cid)));
        void net;
      }
      expect(outs[1]).toEqual(outs[0]!);
    });
  });
  void readFileSync;
});
