/**
 * bridge:
 * every option against the real binary, table-driven across spec versions (0.1.0/0.2.0 results via
 * conversion; CHECK only from 0.4.0), checked with `ip -j [-d]`, nft/iptables listings, host-local's
 * store and real pings between namespaces.
 */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { bothGcKeys, olderGcKey } from "../harness/gc-keys.ts";
import type { PluginInvocation, PluginRun } from "../harness/exec-plugin.ts";
import { addrsOf, findLink, isUp, listRoutes } from "../harness/ip-oracle.ts";
import { hostSysctl, setHostSysctl } from "../harness/host-sysctl.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { formatChainName as chainName } from "../../shared/firewall/naming.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { ALL_SPEC_VERSIONS, hasCheck, resultFamily } from "../harness/versions.ts";
import {
  bridgeConfig,
  bridgePorts,
  iptablesNat,
  ipOf,
  linkDetails,
  linkNames,
  nftRuleset,
  ours,
  ping,
  reservationFiles,
  withPrevResult,
  type BridgeConfOptions,
} from "../harness/bridge-helpers.ts";

let seq = 0;
/** A fresh bridge name and /24 per test (all tests share this file's host netns). */
function fresh(): { bridge: string; subnet: string; gw: string; n: number } {
  seq++;
  return { bridge: `tbr${seq}`, subnet: `10.77.${seq}.0/24`, gw: `10.77.${seq}.1`, n: seq };
}

function inv(command: string, netns: string, config: Record<string, unknown>, extra: Partial<PluginInvocation> = {}): PluginInvocation {
  return { command, containerID: "ctr-br", netns, ifName: "eth0", config, ...extra };
}

function netDir(dataDir: string, name = "brnet"): string {
  return join(dataDir, name);
}

async function add(conf: Record<string, unknown>, netns: string, extra: Partial<PluginInvocation> = {}): Promise<Record<string, any>> {
  return expectResult(await ours("bridge", inv("ADD", netns, conf, extra)));
}

async function del(conf: Record<string, unknown>, netns: string, extra: Partial<PluginInvocation> = {}): Promise<PluginRun> {
  return ours("bridge", inv("DEL", netns, conf, extra));
}

describe.skipIf(!sandboxed())("bridge", () => {
  useFixtureCleanup();

  for (const v of ALL_SPEC_VERSIONS) {
    test(`[${v}] bridge ADD/CHECK/DEL with isDefaultGateway (IPv4): bridge, veth, gateway, default route, accept_ra=0, clean DEL`, async () => {
      const { bridge, subnet, gw } = fresh();
      const dataDir = makeTempDir();
      const conf = bridgeConfig({ cniVersion: v, bridge, dataDir, subnets: [subnet], extra: { isDefaultGateway: true } });
      const ns = await createContainerNetns();
      const result = await add(conf, ns.path);

      const eth0 = addrsOf(ns.path, "eth0").filter((a) => !a.startsWith("fe80"));
      expect(eth0.length).toBe(1);
      const ip = eth0[0]!;
      expect(ip.startsWith(subnet.slice(0, -5))).toBe(true);
      expect(addrsOf(undefined, bridge)).toContain(`${gw}/24`);
      expect(listRoutes(ns.path, { family: 4 }).some((r) => r.dst === "default" && r.gateway === gw)).toBe(true);
      expect(isUp(findLink(ns.path, "eth0"))).toBe(true);

      const ports = bridgePorts(bridge);
      expect(ports.length).toBe(1);
      const hostVeth = ports[0]!;
      expect(hostVeth).toMatch(/^veth[0-9a-f]{8}$/);
      expect(hostSysctl(`net/ipv6/conf/${bridge}/accept_ra`)).toBe("0");
      expect(hostSysctl(`net/ipv6/conf/${hostVeth}/accept_ra`)).toBe("0");
      const br = linkDetails(undefined, bridge)!;
      expect(br.linkinfo.info_kind).toBe("bridge");
      expect(br.linkinfo.info_data.vlan_filtering).toBe(0);

      const family = resultFamily(v);
      if (family === "0.2") {
        expect(result.ip4.ip).toBe(ip);
        expect(result.ip4.gateway).toBe(gw);
        expect(result.interfaces).toBeUndefined();
      } else {
        expect(result.interfaces).toEqual([
          { name: bridge, mac: br.address },
          { name: hostVeth, mac: findLink(undefined, hostVeth)!.address },
          { name: "eth0", mac: findLink(ns.path, "eth0")!.address, sandbox: ns.path },
        ]);
        expect(result.interfaces[1].mac).not.toBe(result.interfaces[0].mac);
        expect(result.ips).toEqual([{ ...(family === "0.4" ? { version: "4" } : {}), interface: 2, address: ip, gateway: gw }]);
        expect(result.routes).toEqual([{ dst: "0.0.0.0/0", gw }]);
      }
      expect(reservationFiles(netDir(dataDir))).toEqual([ipOf(ip)]);

      if (hasCheck(v)) expectSuccess(await ours("bridge", inv("CHECK", ns.path, withPrevResult(conf, result))), { silent: true });

      const delConf = hasCheck(v) ? withPrevResult(conf, result) : conf;
      expectSuccess(await del(delConf, ns.path), { silent: true });
      expect(findLink(ns.path, "eth0")).toBeUndefined();
      expect(bridgePorts(bridge)).toEqual([]);
      expect(reservationFiles(netDir(dataDir))).toEqual([]);
      // DEL is idempotent.
      expectSuccess(await del(delConf, ns.path), { silent: true });
    });

    test(`[${v}] bridge dual-stack: both gateways on the bridge, default routes per family, pings container↔gateway`, async () => {
      const { bridge, subnet, gw, n } = fresh();
      const v6net = `fd77:${n}::/64`;
      const dataDir = makeTempDir();
      const conf = bridgeConfig({ cniVersion: v, bridge, dataDir, subnets: [subnet, v6net], extra: { isDefaultGateway: true } });
      const ns = await createContainerNetns();
      const result = await add(conf, ns.path);
      expect(addrsOf(undefined, bridge)).toEqual(expect.arrayContaining([`${gw}/24`, `fd77:${n}::1/64`]));
      const routes6 = listRoutes(ns.path, { family: 6 });
      expect(routes6.some((r) => r.dst === "default" && r.gateway === `fd77:${n}::1`)).toBe(true);
      if (resultFamily(v) === "0.2") {
        expect(result.ip6.gateway).toBe(`fd77:${n}::1`);
      } else {
        expect(result.ips.map((i: any) => i.gateway)).toEqual([gw, `fd77:${n}::1`]);
        expect(result.routes).toEqual([
          { dst: "0.0.0.0/0", gw },
          { dst: "::/0", gw: `fd77:${n}::1` },
        ]);
      }
      expect(ping(ns.path, gw)).toBe(true);
      expect(ping(ns.path, `fd77:${n}::1`)).toBe(true);
      if (hasCheck(v)) expectSuccess(await ours("bridge", inv("CHECK", ns.path, withPrevResult(conf, result))), { silent: true });
      expectSuccess(await del(hasCheck(v) ? withPrevResult(conf, result) : conf, ns.path), { silent: true });
      expect(reservationFiles(netDir(dataDir))).toEqual([]);
    });

    test(`[${v}] bridge L2-only (no IPAM): ${resultFamily(v) === "0.2" ? "refused for a 0.x result without IPs, nothing created" : "interfaces only, container up"}${hasCheck(v) ? ", CHECK succeeds" : ""}`, async () => {
      const { bridge } = fresh();
      const conf = bridgeConfig({ cniVersion: v, bridge });
      const ns = await createContainerNetns();
      if (resultFamily(v) === "0.2") {
        expectCniError(await ours("bridge", inv("ADD", ns.path, conf)), { code: 999, msg: "cannot convert: no valid IP addresses" });
        expect(linkNames(ns.path)).toEqual(["lo"]);
        expect(findLink(undefined, bridge)).toBeUndefined();
        return;
      }
      const result = await add(conf, ns.path);
      expect(isUp(findLink(ns.path, "eth0"))).toBe(true);
      expect(bridgePorts(bridge).length).toBe(1);
      if (resultFamily(v) !== "0.2") {
        expect(result.interfaces.map((i: any) => i.name)).toEqual([bridge, bridgePorts(bridge)[0], "eth0"]);
        expect(result.ips ?? []).toEqual([]);
      }
      if (hasCheck(v)) expectSuccess(await ours("bridge", inv("CHECK", ns.path, withPrevResult(conf, result))), { silent: true });
      expectSuccess(await del(conf, ns.path), { silent: true });
      expect(findLink(ns.path, "eth0")).toBeUndefined();
    });
  }

  test("two containers on one bridge ping each other and the gateway", async () => {
    const { bridge, subnet, gw } = fresh();
    const dataDir = makeTempDir();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir, subnets: [subnet], extra: { isGateway: true } });
    const a = await createContainerNetns();
    const b = await createContainerNetns();
    const forward = setHostSysctl("net.ipv4.ip_forward", "0"); // isGateway turns it on: start from off
    const ra = await add(conf, a.path, { containerID: "ctr-a" });
    expect(hostSysctl("net.ipv4.ip_forward")).toBe("1");
    setHostSysctl("net.ipv4.ip_forward", forward);
    const rb = await add(conf, b.path, { containerID: "ctr-b" });
    const ipA = ipOf(ra.ips[0].address);
    const ipB = ipOf(rb.ips[0].address);
    expect(ipA).not.toBe(ipB);
    expect(ping(a.path, ipB)).toBe(true);
    expect(ping(b.path, ipA)).toBe(true);
    expect(ping(a.path, gw)).toBe(true);
    expectSuccess(await del(conf, a.path, { containerID: "ctr-a" }), { silent: true });
    expectSuccess(await del(conf, b.path, { containerID: "ctr-b" }), { silent: true });
  });

  for (const cniVersion of ["1.0.0", "1.1.0"]) {
    test(`[${cniVersion}] mtu applies to a new bridge and both veth ends; a 1.1.0 result lists it on both veth entries`, async () => {
      const { bridge, subnet } = fresh();
      const conf = bridgeConfig({ cniVersion, bridge, dataDir: makeTempDir(), subnets: [subnet], extra: { mtu: 1400 } });
      const ns = await createContainerNetns();
      const result = await add(conf, ns.path);
      expect(findLink(undefined, bridge)!.mtu).toBe(1400);
      expect(findLink(undefined, bridgePorts(bridge)[0]!)!.mtu).toBe(1400);
      expect(findLink(ns.path, "eth0")!.mtu).toBe(1400);
      const mtus = (result.interfaces as { mtu?: number }[]).map((i) => i.mtu);
      expect(mtus).toEqual(cniVersion === "1.1.0" ? [undefined, 1400, 1400] : [undefined, undefined, undefined]);
      expectSuccess(await del(conf, ns.path), { silent: true });
    });
  }

  test("hairpinMode and portIsolation set the port flags; promiscMode sets the bridge promiscuous", async () => {
    const { bridge, subnet } = fresh();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir: makeTempDir(), subnets: [subnet], extra: { hairpinMode: true, portIsolation: true } });
    const ns = await createContainerNetns();
    await add(conf, ns.path);
    const port = linkDetails(undefined, bridgePorts(bridge)[0]!)!;
    expect(port.linkinfo.info_slave_data.hairpin).toBe(true);
    expect(port.linkinfo.info_slave_data.isolated).toBe(true);
    expectSuccess(await del(conf, ns.path), { silent: true });

    const { bridge: b2, subnet: s2 } = fresh();
    const conf2 = bridgeConfig({ cniVersion: "1.0.0", bridge: b2, dataDir: makeTempDir(), subnets: [s2], extra: { promiscMode: true } });
    const ns2 = await createContainerNetns();
    const r2 = await add(conf2, ns2.path);
    expect(linkDetails(undefined, b2)!.flags).toContain("PROMISC");
    const port2 = linkDetails(undefined, bridgePorts(b2)[0]!)!;
    expect(port2.linkinfo.info_slave_data.hairpin).toBe(false);
    expect(port2.linkinfo.info_slave_data.isolated).toBe(false);
    expectSuccess(await ours("bridge", inv("CHECK", ns2.path, withPrevResult(conf2, r2))), { silent: true });
    // CHECK compares promiscuity exactly.
    expectCniError(await ours("bridge", inv("CHECK", ns2.path, withPrevResult({ ...conf2, promiscMode: false }, r2))), {
      code: 999,
      msg: /configured Promisc Mode false doesn't match current state: true/,
    });
    expectSuccess(await del(conf2, ns2.path), { silent: true });

    const ns3 = await createContainerNetns();
    expectCniError(await ours("bridge", inv("ADD", ns3.path, { ...conf2, hairpinMode: true })), {
      code: 7,
      msg: "cannot set hairpin mode and promiscuous mode at the same time",
    });
  });

  for (const [how, extra, cniArgs] of [
    ["CNI_ARGS MAC", {}, "IgnoreUnknown=1;MAC=0a:11:22:33:44:01"],
    ["args.cni.mac over CNI_ARGS", { args: { cni: { mac: "0a:11:22:33:44:02" } } }, "IgnoreUnknown=1;MAC=0a:11:22:33:44:01"],
    ["runtimeConfig.mac over both", { args: { cni: { mac: "0a:11:22:33:44:02" } }, runtimeConfig: { mac: "0a:11:22:33:44:03" } }, "IgnoreUnknown=1;MAC=0a:11:22:33:44:01"],
  ] as const) {
    test(`container MAC from ${how}`, async () => {
      const { bridge, subnet } = fresh();
      const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir: makeTempDir(), subnets: [subnet], extra });
      const ns = await createContainerNetns();
      const result = await add(conf, ns.path, { args: cniArgs });
      const want = how.startsWith("CNI_ARGS") ? "0a:11:22:33:44:01" : how.startsWith("args") ? "0a:11:22:33:44:02" : "0a:11:22:33:44:03";
      expect(findLink(ns.path, "eth0")!.address).toBe(want);
      expect(result.interfaces[2].mac).toBe(want);
      expectSuccess(await del(conf, ns.path, { args: cniArgs }), { silent: true });
    });
  }

  test("disableContainerInterface leaves the container veth down; with IPAM it is refused", async () => {
    const { bridge, subnet } = fresh();
    const conf = bridgeConfig({ cniVersion: "1.1.0", bridge, extra: { disableContainerInterface: true } });
    const ns = await createContainerNetns();
    const result = await add(conf, ns.path);
    expect(isUp(findLink(ns.path, "eth0"))).toBe(false);
    expectSuccess(await ours("bridge", inv("CHECK", ns.path, withPrevResult(conf, result))), { silent: true });
    expectSuccess(await del(conf, ns.path), { silent: true });

    const dataDir = makeTempDir();
    const withIpam = bridgeConfig({ cniVersion: "1.1.0", bridge, dataDir, subnets: [subnet], extra: { disableContainerInterface: true } });
    expectCniError(await ours("bridge", inv("ADD", ns.path, withIpam)), { code: 7, msg: "cannot use IPAM when DisableContainerInterface flag is set" });
    expect(findLink(ns.path, "eth0")).toBeUndefined();
    expect(reservationFiles(netDir(dataDir))).toEqual([]);
  });

  test("macspoofchk installs upstream's nftables bridge rules and DEL removes them", async () => {
    const { bridge, subnet } = fresh();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir: makeTempDir(), subnets: [subnet], extra: { macspoofchk: true } });
    const ns = await createContainerNetns();
    const result = await add(conf, ns.path, { containerID: "spoof1" });
    const hostVeth = result.interfaces[1].name;
    const mac = result.interfaces[2].mac;
    const objs = nftRuleset();
    const chains = objs.filter((o) => o.chain?.table === "nat" && o.chain?.family === "bridge").map((o) => o.chain.name);
    expect(chains).toEqual(expect.arrayContaining(["PREROUTING", "cni-br-iface-spoof1-eth0", "cni-br-iface-spoof1-eth0-mac"]));
    const rules = objs.filter((o) => o.rule?.family === "bridge").map((o) => o.rule);
    const pre = rules.find((r) => r.chain === "PREROUTING" && r.comment === "macspoofchk-spoof1-eth0");
    expect(JSON.stringify(pre.expr)).toContain(hostVeth);
    const macRules = rules.filter((r) => r.chain === "cni-br-iface-spoof1-eth0-mac");
    expect(macRules.length).toBe(2);
    expect(JSON.stringify(macRules[0].expr)).toContain(mac);
    expect(JSON.stringify(macRules[1].expr)).toContain("drop");
    expectSuccess(await del(conf, ns.path, { containerID: "spoof1" }), { silent: true });
    const after = nftRuleset();
    expect(after.some((o) => o.chain?.name?.startsWith("cni-br-iface-spoof1"))).toBe(false);
    expect(after.some((o) => o.rule?.comment === "macspoofchk-spoof1-eth0")).toBe(false);
  });

  test("enabledad sets accept_dad=1 and enhanced_dad=1 in the container; default accept_dad=0", async () => {
    const { bridge, n } = fresh();
    for (const enabledad of [true, false]) {
      const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir: makeTempDir(), subnets: [`fd78:${n}::/64`], extra: { enabledad } });
      const ns = await createContainerNetns();
      await add(conf, ns.path);
      const read = (key: string) =>
        Bun.spawnSync(["nsenter", `--net=${ns.path}`, "--", "cat", `/proc/sys/net/ipv6/conf/eth0/${key}`]).stdout.toString().trim();
      expect(read("accept_dad")).toBe(enabledad ? "1" : "0");
      if (enabledad) expect(read("enhanced_dad")).toBe("1");
      expectSuccess(await del(conf, ns.path), { silent: true });
    }
  });

  test("forceAddress: a different bridge address fails without it and is replaced with it", async () => {
    const { bridge, subnet, gw } = fresh();
    const ns = await createContainerNetns();
    Bun.spawnSync(["ip", "link", "add", bridge, "type", "bridge"]);
    Bun.spawnSync(["ip", "addr", "add", "10.99.99.1/24", "dev", bridge]);
    const dataDir = makeTempDir();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir, subnets: [subnet], extra: { isGateway: true } });
    expectCniError(await ours("bridge", inv("ADD", ns.path, conf)), {
      code: 999,
      msg: `"${bridge}" already has an IP address different from ${gw}/24`,
    });
    expect(findLink(ns.path, "eth0")).toBeUndefined();
    expect(reservationFiles(netDir(dataDir))).toEqual([]);
    expect(bridgePorts(bridge)).toEqual([]);
    await add({ ...conf, forceAddress: true }, ns.path);
    expect(addrsOf(undefined, bridge).filter((a) => !a.startsWith("fe80"))).toEqual([`${gw}/24`]);
    expectSuccess(await del(conf, ns.path), { silent: true });
  });

  test("the bridge MAC stays put when ports come and go (no isGateway)", async () => {
    const { bridge, subnet } = fresh();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir: makeTempDir(), subnets: [subnet] });
    const nss = [await createContainerNetns(), await createContainerNetns(), await createContainerNetns()];
    const first = await add(conf, nss[0]!.path, { containerID: "mac-0" });
    const brMac = first.interfaces[0].mac;
    for (let i = 1; i < nss.length; i++) {
      const r = await add(conf, nss[i]!.path, { containerID: `mac-${i}` });
      expect(r.interfaces[0].mac).toBe(brMac);
    }
    for (let i = 0; i < nss.length; i++) {
      expectSuccess(await del(conf, nss[i]!.path, { containerID: `mac-${i}` }), { silent: true });
      expect(findLink(undefined, bridge)!.address).toBe(brMac);
    }
  });

  test("an existing non-bridge link with the bridge's name is a clear error and leaks nothing", async () => {
    const { bridge, subnet } = fresh();
    Bun.spawnSync(["ip", "link", "add", bridge, "type", "veth", "peer", "name", `${bridge}p`]);
    const dataDir = makeTempDir();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir, subnets: [subnet] });
    const ns = await createContainerNetns();
    expectCniError(await ours("bridge", inv("ADD", ns.path, conf)), {
      code: 999,
      msg: `failed to create bridge "${bridge}": "${bridge}" already exists but is not a bridge`,
    });
    expect(reservationFiles(netDir(dataDir))).toEqual([]);
    expect(findLink(ns.path, "eth0")).toBeUndefined();
    Bun.spawnSync(["ip", "link", "del", bridge]);
  });

  test("ADD twice fails without an extra reservation and leaves the first attachment intact", async () => {
    const { bridge, subnet } = fresh();
    const dataDir = makeTempDir();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir, subnets: [subnet] });
    const ns = await createContainerNetns();
    const first = await add(conf, ns.path);
    expectCniError(await ours("bridge", inv("ADD", ns.path, conf)), { code: 999, msg: /already exists/ });
    expect(reservationFiles(netDir(dataDir)).length).toBe(1);
    expect(bridgePorts(bridge).length).toBe(1);
    expectSuccess(await ours("bridge", inv("CHECK", ns.path, withPrevResult(conf, first))), { silent: true });
    expectSuccess(await del(conf, ns.path), { silent: true });
  });

  test("CHECK fails when the container lost its address or the prevResult is missing", async () => {
    const { bridge, subnet } = fresh();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir: makeTempDir(), subnets: [subnet] });
    const ns = await createContainerNetns();
    const result = await add(conf, ns.path);
    expectCniError(await ours("bridge", inv("CHECK", ns.path, conf)), { code: 999, msg: "Required prevResult missing" });
    Bun.spawnSync(["nsenter", `--net=${ns.path}`, "--", "ip", "addr", "del", result.ips[0].address, "dev", "eth0"]);
    expectCniError(await ours("bridge", inv("CHECK", ns.path, withPrevResult(conf, result))), { code: 999, msg: /Failed to match addr/ });
    expectSuccess(await del(conf, ns.path), { silent: true });
  });

  for (const backend of ["iptables", "nftables"] as const) {
    test(`ipMasq (${backend}): rules on ADD, removed on DEL — also with the netns gone and with CNI_NETNS unset (#810)`, async () => {
      const { bridge, subnet } = fresh();
      const dataDir = makeTempDir();
      const conf = bridgeConfig({
        name: `masq-${backend}`,
        cniVersion: "1.0.0",
        bridge,
        dataDir,
        subnets: [subnet],
        extra: { isGateway: true, ipMasq: true, ipMasqBackend: backend },
      });
      const name = `masq-${backend}`;
      const present = (cid: string): boolean =>
        backend === "iptables"
          ? iptablesNat().includes(`--comment "name: \\"${name}\\" id: \\"${cid}\\""`)
          : nftRuleset().some((o) => o.rule?.table === "cni_plugins_masquerade" && String(o.rule.comment ?? "").includes(`id: ${cid}`));

      for (const mode of ["normal", "netns-gone", "netns-unset"] as const) {
        const cid = `m-${backend}-${mode}`;
        const ns = await createContainerNetns();
        await add(conf, ns.path, { containerID: cid });
        expect(present(cid)).toBe(true);
        let netns = ns.path;
        if (mode === "netns-gone") await ns.destroy();
        if (mode === "netns-unset") netns = "";
        expectSuccess(await del(conf, netns, { containerID: cid }), { silent: true });
        expect(present(cid)).toBe(false);
        expect(reservationFiles(netDir(dataDir, name))).toEqual([]);
        // and once more: idempotent
        expectSuccess(await del(conf, netns, { containerID: cid }), { silent: true });
      }
    });
  }

  test("DEL carries on after a failed IPAM DEL: veth, spoof-check and masquerade rules go, the IPAM error is reported", async () => {
    const { bridge, subnet } = fresh();
    const dataDir = makeTempDir();
    const conf = bridgeConfig({ name: "brdel", cniVersion: "1.0.0", bridge, dataDir, subnets: [subnet], extra: { ipMasq: true, macspoofchk: true } });
    const ns = await createContainerNetns();
    const result = await add(conf, ns.path, { containerID: "ipamdel" });
    const hostVeth = result.interfaces[1].name;
    const masq = () => iptablesNat().includes(`--comment "name: \\"brdel\\" id: \\"ipamdel\\""`);
    const spoof = () => nftRuleset().some((o) => o.rule?.comment === "macspoofchk-ipamdel-eth0");
    expect(masq()).toBe(true);
    expect(spoof()).toBe(true);
    const broken = { ...conf, ipam: { ...(conf.ipam as Record<string, unknown>), type: "nosuchipam" } };
    expectCniError(await del(broken, ns.path, { containerID: "ipamdel" }), { code: 999, msg: 'failed to find plugin "nosuchipam"' });
    expect(linkNames(ns.path)).toEqual(["lo"]);
    expect(findLink(undefined, hostVeth)).toBeUndefined();
    expect(masq()).toBe(false);
    expect(spoof()).toBe(false);
    expect(reservationFiles(netDir(dataDir, "brdel")).length).toBe(1);
    expectSuccess(await del(conf, ns.path, { containerID: "ipamdel" }), { silent: true });
    expect(reservationFiles(netDir(dataDir, "brdel"))).toEqual([]);
  });

  test("a failure after IPAM ADD rolls back through the DEL steps: veth, spoof-check rules and the lease go", async () => {
    const { bridge, subnet } = fresh();
    const dataDir = makeTempDir();
    // The route's gateway is unreachable: ConfigureIface fails after the veth, spoof-check and IPAM.
    const conf = bridgeConfig({
      cniVersion: "1.0.0",
      bridge,
      dataDir,
      subnets: [subnet],
      routes: [{ dst: "172.16.0.0/16", gw: "192.0.2.1" }],
      extra: { macspoofchk: true },
    });
    const ns = await createContainerNetns();
    expectCniError(await ours("bridge", inv("ADD", ns.path, conf, { containerID: "rollback" })), {
      code: 999,
      msg: "failed to add route '{172.16.0.0 ffff0000} via 192.0.2.1 dev eth0",
    });
    expect(linkNames(ns.path)).toEqual(["lo"]);
    expect(bridgePorts(bridge)).toEqual([]);
    expect(nftRuleset().some((o) => o.rule?.comment === "macspoofchk-rollback-eth0" || o.chain?.name?.startsWith("cni-br-iface-rollback"))).toBe(false);
    expect(reservationFiles(netDir(dataDir))).toEqual([]);
  });

  test("a missing netns is code 8 and reserves nothing; DEL with it succeeds", async () => {
    const { bridge, subnet } = fresh();
    const dataDir = makeTempDir();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir, subnets: [subnet] });
    const gone = "/proc/999999999/ns/net";
    expectCniError(await ours("bridge", inv("ADD", gone, conf)), { code: 8, msg: /failed to open netns/ });
    expect(reservationFiles(netDir(dataDir))).toEqual([]);
    expectSuccess(await del(conf, gone), { silent: true });
  });

  test("DEL of a never-added attachment succeeds", async () => {
    const { bridge, subnet } = fresh();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir: makeTempDir(), subnets: [subnet], extra: { ipMasq: true, macspoofchk: true } });
    const ns = await createContainerNetns();
    expectSuccess(await del(conf, ns.path, { containerID: "never" }), { silent: true });
  });

  test("VLAN options on a kernel without bridge vlan filtering fail clearly and leave nothing", async () => {
    const probe = Bun.spawnSync(["sh", "-c", "ip link add vfprobe type bridge vlan_filtering 1 && ip link del vfprobe"]);
    if (probe.exitCode === 0) return; // covered by bridge-vlan.vm.test.ts on kernels that have it
    const { bridge, subnet } = fresh();
    const dataDir = makeTempDir();
    const ns = await createContainerNetns();
    for (const extra of [{ vlan: 100 }, { vlanTrunk: [{ id: 101 }] }] as BridgeConfOptions["extra"][]) {
      const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir, subnets: [subnet], extra: extra! });
      expectCniError(await ours("bridge", inv("ADD", ns.path, conf)), { code: 999, msg: /vlan filtering not supported|operation not supported/ });
      expect(findLink(undefined, bridge)).toBeUndefined();
      expect(linkNames(ns.path)).toEqual(["lo"]);
      expect(reservationFiles(netDir(dataDir))).toEqual([]);
    }
    // An existing bridge without vlan_filtering: the port VLAN add is refused, and rolled back.
    Bun.spawnSync(["ip", "link", "add", bridge, "type", "bridge"]);
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge, dataDir, subnets: [subnet], extra: { vlan: 100 } });
    expectCniError(await ours("bridge", inv("ADD", ns.path, conf)), { code: 999, msg: /failed to setup vlan tag|operation not supported/ });
    expect(bridgePorts(bridge)).toEqual([]);
    expect(linkNames(ns.path)).toEqual(["lo"]);
    expect(reservationFiles(netDir(dataDir))).toEqual([]);
    expect(existsSync(netDir(dataDir)) ? reservationFiles(netDir(dataDir)) : []).toEqual([]);
  });

  test("GC: stale masquerade (iptables) and spoof-check rules of this network go; valid ones stay byte-identical, other networks' and foreign rules stay", async () => {
    const a = fresh();
    const b = fresh();
    const dataDir = makeTempDir();
    const extra = { ipMasq: true, macspoofchk: true };
    const confA = bridgeConfig({ name: "brgc", cniVersion: "1.1.0", bridge: a.bridge, dataDir, subnets: [a.subnet], extra });
    const confB = bridgeConfig({ name: "brgc2", cniVersion: "1.1.0", bridge: b.bridge, dataDir, subnets: [b.subnet], extra });
    const nss: Record<string, string> = {};
    for (const [cid, conf, ifName] of [["gc-keep", confA, "eth0"], ["gc-stale", confA, "eth0"], ["gc-gone", confA, "eth0"], ["gc-stale", confB, "net1"]] as const) {
      const ns = await createContainerNetns();
      nss[`${cid}/${ifName}`] = ns.path;
      await add(conf, ns.path, { containerID: cid, ifName });
      // gc-gone's container died without DEL: its veth is gone, its rules are not.
      if (cid === "gc-gone") await ns.destroy();
    }
    Bun.spawnSync(["iptables", "-t", "nat", "-A", "POSTROUTING", "-s", "10.250.0.0/16", "-m", "comment", "--comment", "not cni", "-j", "MASQUERADE"]);
    Bun.spawnSync(["nft", "add rule bridge nat PREROUTING iifname lo counter comment \"macspoofchk-foreign-eth0\""]);
    const natLines = (): string[] => iptablesNat().split("\n").filter((l) => l.startsWith("-A") || l.startsWith(":CNI-"));
    const spoofObjs = (): string[] => nftRuleset().filter((o) => o.rule?.family === "bridge" || o.chain?.family === "bridge").map((o) => JSON.stringify(o));
    const staleA = ['id: \\"gc-stale\\"', 'id: \\"gc-gone\\"'];
    const natBefore = natLines();
    const spoofBefore = spoofObjs();
    expect(spoofBefore.some((o) => o.includes("cni-br-iface-gc-gone-eth0"))).toBe(true);
    const keep = { containerID: "gc-keep", ifname: "eth0" };
    const everyA = [keep, { containerID: "gc-stale", ifname: "eth0" }, { containerID: "gc-gone", ifname: "eth0" }];
    expectSuccess(await ours("bridge", { command: "GC", config: { ...confA, ...bothGcKeys(everyA, []) } }), { silent: true });
    expect(natLines()).toEqual(natBefore); // the newer key wins
    expect(spoofObjs()).toEqual(spoofBefore);
    const gc = await ours("bridge", { command: "GC", config: { ...confA, ...olderGcKey([keep]) } });
    expectSuccess(gc, { silent: true });
    const isStaleA = (l: string): boolean =>
      (l.includes('name: \\"brgc\\"') && staleA.some((s) => l.includes(s))) ||
      ["gc-stale", "gc-gone"].some((cid) => l.includes(chainName("brgc", cid)));
    expect(natLines()).toEqual(natBefore.filter((l) => !isStaleA(l)));
    expect(natBefore.filter(isStaleA).length).toBeGreaterThanOrEqual(6);
    expect(natLines().some((l) => l.includes('name: \\"brgc2\\" id: \\"gc-stale\\"'))).toBe(true);
    expect(natLines()).toContain('-A POSTROUTING -s 10.250.0.0/16 -m comment --comment "not cni" -j MASQUERADE');
    const staleSpoof = (o: string): boolean => /cni-br-iface-gc-(stale|gone)-eth0|macspoofchk-gc-(stale|gone)-eth0/.test(o);
    expect(spoofObjs()).toEqual(spoofBefore.filter((o) => !staleSpoof(o)));
    expect(spoofBefore.filter(staleSpoof).length).toBe(12);
    expect(spoofObjs().some((o) => o.includes("macspoofchk-gc-stale-net1"))).toBe(true);
    expect(spoofObjs().some((o) => o.includes("macspoofchk-foreign-eth0"))).toBe(true);
    // host-local collected the stale leases of this network only.
    expect(reservationFiles(netDir(dataDir, "brgc"))).toHaveLength(1);
    expect(reservationFiles(netDir(dataDir, "brgc2"))).toHaveLength(1);
    // The kept attachment is still exactly in place.
    expectSuccess(await del(confA, nss["gc-keep/eth0"]!, { containerID: "gc-keep" }), { silent: true });
    expectSuccess(await del(confB, nss["gc-stale/net1"]!, { containerID: "gc-stale", ifName: "net1" }), { silent: true });
    Bun.spawnSync(["iptables", "-t", "nat", "-D", "POSTROUTING", "-s", "10.250.0.0/16", "-m", "comment", "--comment", "not cni", "-j", "MASQUERADE"]);
  });

  test("STATUS and GC delegate to the IPAM plugin", async () => {
    const { bridge, subnet } = fresh();
    const conf = bridgeConfig({ cniVersion: "1.1.0", bridge, dataDir: makeTempDir(), subnets: [subnet] });
    expectSuccess(await ours("bridge", { command: "STATUS", config: conf }), { silent: true });
    expectSuccess(await ours("bridge", { command: "GC", config: { ...conf, "cni.dev/valid-attachments": [] } }), { silent: true });
    expectSuccess(await ours("bridge", { command: "STATUS", config: bridgeConfig({ cniVersion: "1.1.0", bridge }) }), { silent: true });
  });
});
