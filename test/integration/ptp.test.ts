/**
 * ptp: ADD/CHECK/DEL across every spec version (0.1.0/0.2.0 through
 * result conversion; CHECK only from 0.4.0) for IPv4, IPv6 and dual stack, checked with `ip -j`,
 * /proc/sys, iptables-save / nft and real pings; ipMasq in both backends; DNS override rules; DEL
 * robustness (twice, netns gone, CNI_NETNS unset: the masquerade rules still go — upstream #810);
 * ADD twice; STATUS and GC.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { bothGcKeys, olderGcKey } from "../harness/gc-keys.ts";
import { addrsOf, ipJson, listLinks, listRoutes } from "../harness/ip-oracle.ts";
import { hostSysctl, setHostSysctl } from "../harness/host-sysctl.ts";
import { createContainerNetns } from "../harness/netns.ts";
import {
  hostAddrs,
  hostLink,
  iptablesMasqLines,
  masqChainName,
  nftMasqLines,
  ping,
  ptpConf,
  type PtpConfOptions,
} from "../harness/ptp-helpers.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { reservations } from "../harness/store.ts";
import { waitFor } from "../harness/wait.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { ALL_SPEC_VERSIONS, hasCheck, resultFamily } from "../harness/versions.ts";

let seq = 0;
/** Unique container ID / network name per test (all tests share one throwaway host netns). */
function ids(tag: string): { cid: string; net: string } {
  seq++;
  return { cid: `ptp-${tag}-${process.pid}-${seq}`, net: `ptpnet-${tag}-${seq}` };
}

function inv(netns: string | undefined, command: string, config: unknown, cid: string, extra: Partial<PluginInvocation> = {}): PluginInvocation {
  return { command, containerID: cid, netns, ifName: "eth0", config, ...extra };
}

/** The current-shape view of any version's result: [{address, gateway}] plus interfaces. */
function ipsOf(result: Record<string, any>): { address: string; gateway?: string }[] {
  if (result.ips) return result.ips;
  return [result.ip4, result.ip6].filter(Boolean).map((x: any) => ({ address: x.ip, gateway: x.gateway }));
}

const FAMILIES = {
  v4: ["10.61.X.0/24"],
  v6: ["fd61:X::/64"],
  dual: ["10.61.X.0/24", "fd61:X::/64"],
} as const;

describe.skipIf(!sandboxed())("ptp", () => {
  useFixtureCleanup();

  for (const v of ALL_SPEC_VERSIONS) {
    for (const [fam, templates] of Object.entries(FAMILIES)) {
      test(`[${v}] ${fam}: ADD configures both ends, routes via the host, pings the gateway; ${hasCheck(v) ? "CHECK passes; " : ""}DEL leaves nothing`, async () => {
        const { cid, net } = ids(`${fam}`);
        const subnets = templates.map((t) => t.replace("X", String(10 + (seq % 200))));
        const dataDir = makeTempDir("ptp-store-");
        const conf = ptpConf({ cniVersion: v, name: net, dataDir, subnets, ipMasq: true, mtu: 1400 });
        const ns = await createContainerNetns();
        // ADD must turn forwarding on: start from off (the test's netns may have inherited it on).
        const forwarding = [setHostSysctl("net.ipv4.ip_forward", "0"), setHostSysctl("net.ipv6.conf.all.forwarding", "0")] as const;

        const result = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
        expect(result.cniVersion).toBe(v);
        const ips = ipsOf(result);
        expect(ips.length).toBe(subnets.length);
        const family = resultFamily(v);
        if (family === "0.2") {
          expect(result).not.toHaveProperty("interfaces");
          expect(result.dns).toEqual({});
        } else {
          expect(result.interfaces.length).toBe(2);
          expect(result.interfaces[1]).toMatchObject({ name: "eth0", sandbox: ns.path });
          expect(result.interfaces[0].name).toMatch(/^veth[0-9a-f]{8}$/);
          for (const ip of result.ips) {
            expect(ip.interface).toBe(1);
            if (family === "0.4") expect(ip.version).toBe(ip.address.includes(":") ? "6" : "4");
            else expect(ip).not.toHaveProperty("version");
          }
        }

        // Host side: the veth (the only new veth pointing at this netns) carries every gateway as /32 or /128.
        const contLink = listLinks(ns.path).find((l) => l.ifname === "eth0")!;
        expect(contLink.mtu).toBe(1400);
        expect(contLink.flags).toContain("UP");
        const hostName = family === "0.2" ? undefined : result.interfaces[0].name;
        const hostVeth = hostName ? hostLink(hostName)! : listLinks(undefined).find((l) => l.ifindex === Number(contLink.link_index ?? -1))!;
        expect(hostVeth).toBeDefined();
        expect(hostVeth.mtu).toBe(1400);
        // The MTU the plugin set is in both veth entries of a 1.1.0 result (not before).
        if (family !== "0.2") expect(result.interfaces.map((i: { mtu?: number }) => i.mtu)).toEqual(v === "1.1.0" ? [1400, 1400] : [undefined, undefined]);
        expect(hostVeth.flags).toContain("UP");
        expect(hostSysctl(`net/ipv6/conf/${hostVeth.ifname}/accept_ra`)).toBe("0");
        const hAddrs = hostAddrs(hostVeth.ifname);
        for (const ip of ips) {
          const is6 = ip.address.includes(":");
          const bare = ip.address.split("/")[0]!;
          expect(hAddrs).toContain(`${ip.gateway}/${is6 ? 128 : 32}`);
          expect(addrsOf(ns.path, "eth0")).toContain(ip.address);
          // host route to the container, scope host
          const hr = listRoutes(undefined, { family: is6 ? 6 : 4 }).find((r) => r.dst === bare && r.dev === hostVeth.ifname);
          expect(hr).toBeDefined();
          // container: no connected route; gateway /32 scope link; subnet via gateway; default via gateway
          const cr = listRoutes(ns.path, { family: is6 ? 6 : 4 });
          const [netAddr, plen] = subnets.find((s) => s.includes(":") === is6)!.split("/");
          const subnetRoute = cr.find((r) => r.dst === `${netAddr}/${plen}`);
          expect(subnetRoute).toMatchObject({ gateway: ip.gateway, dev: "eth0", prefsrc: bare });
          expect(cr.find((r) => r.dst === ip.gateway)).toMatchObject({ dev: "eth0", prefsrc: bare });
          if (!is6) expect(cr.find((r) => r.dst === ip.gateway)).toMatchObject({ scope: "link" });
          expect(cr.find((r) => r.dst === "default")).toMatchObject({ gateway: ip.gateway, dev: "eth0" });
          expect(cr.filter((r) => r.dst === `${netAddr}/${plen}` && r.gateway === undefined)).toEqual([]);
          expect(hostSysctl(is6 ? "net.ipv6.conf.all.forwarding" : "net.ipv4.ip_forward")).toBe("1");
          expect(ping(ns.path, ip.gateway!)).toBe(true);
        }
        setHostSysctl("net.ipv4.ip_forward", forwarding[0]);
        setHostSysctl("net.ipv6.conf.all.forwarding", forwarding[1]);
        // ipMasq (default backend: iptables): chain with ACCEPT + MASQUERADE and a POSTROUTING jump per IP.
        const lines = iptablesMasqLines(net, cid);
        expect(lines.filter((l) => l.includes("-j MASQUERADE")).length).toBeGreaterThanOrEqual(ips.length);
        expect(lines.filter((l) => l.startsWith("-A POSTROUTING")).length).toBeGreaterThanOrEqual(ips.length);

        if (hasCheck(v)) {
          const withPrev = { ...conf, prevResult: result };
          expectSuccess(await execPlugin("ptp", inv(ns.path, "CHECK", withPrev, cid)), { silent: true });
        }

        const delConf = hasCheck(v) ? { ...conf, prevResult: result } : conf;
        expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", delConf, cid)), { silent: true });
        expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
        expect(hostLink(hostVeth.ifname)).toBeUndefined();
        expect(iptablesMasqLines(net, cid)).toEqual([]);
        expect(reservations(join(dataDir, net))).toEqual({});
        // DEL is idempotent.
        expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", delConf, cid)), { silent: true });
      });
    }
  }

  test("two ptp containers reach each other through the host (v4 and v6)", async () => {
    const { net } = ids("pair");
    const dataDir = makeTempDir("ptp-store-");
    const conf = ptpConf({ name: net, dataDir, subnets: ["10.62.0.0/24", "fd62::/64"] });
    const a = await createContainerNetns();
    const b = await createContainerNetns();
    const ra = expectResult(await execPlugin("ptp", inv(a.path, "ADD", conf, `${net}-a`)));
    const rb = expectResult(await execPlugin("ptp", inv(b.path, "ADD", conf, `${net}-b`)));
    for (const ip of rb.ips) expect(ping(a.path, ip.address.split("/")[0])).toBe(true);
    for (const ip of ra.ips) expect(ping(b.path, ip.address.split("/")[0])).toBe(true);
    // Both host veths carry the same gateway address.
    expect(hostAddrs(ra.interfaces[0].name)).toEqual(hostAddrs(rb.interfaces[0].name));
    expectSuccess(await execPlugin("ptp", inv(a.path, "DEL", conf, `${net}-a`)));
    // b still works after a is gone (the shared gateway address stays on b's veth).
    expect(ping(b.path, "10.62.0.1")).toBe(true);
    expectSuccess(await execPlugin("ptp", inv(b.path, "DEL", conf, `${net}-b`)));
  });

  for (const backend of ["iptables", "nftables"] as const) {
    test(`ipMasqBackend ${backend}: rules on ADD, CHECK verifies them, DEL removes them`, async () => {
      const { cid, net } = ids(`masq-${backend}`);
      const dataDir = makeTempDir("ptp-store-");
      const conf = ptpConf({ name: net, dataDir, subnets: ["10.63.0.0/24", "fd63::/64"], ipMasq: true, ipMasqBackend: backend });
      const ns = await createContainerNetns();
      const result = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
      if (backend === "iptables") {
        const lines = iptablesMasqLines(net, cid);
        expect(lines.some((l) => l.includes("-d 10.63.0.0/24") && l.includes("-j ACCEPT"))).toBe(true);
        expect(lines.some((l) => l.includes("! -d 224.0.0.0/4") && l.includes("-j MASQUERADE"))).toBe(true);
        expect(lines.some((l) => l.includes("! -d ff00::/8") && l.includes("-j MASQUERADE"))).toBe(true);
        expect(lines.some((l) => l.startsWith("-A POSTROUTING -s 10.63.0.2/32"))).toBe(true);
        expect(nftMasqLines(cid)).toEqual([]);
      } else {
        const lines = nftMasqLines(cid);
        expect(lines.some((l) => l.includes("ip saddr 10.63.0.2") && l.includes("ip daddr != 10.63.0.0/24"))).toBe(true);
        expect(lines.some((l) => l.includes("ip6 saddr fd63::2") && l.includes("ip6 daddr != fd63::/64"))).toBe(true);
        expect(iptablesMasqLines(net, cid)).toEqual([]);
      }
      const withPrev = { ...conf, prevResult: result };
      expectSuccess(await execPlugin("ptp", inv(ns.path, "CHECK", withPrev, cid)), { silent: true });
      expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", withPrev, cid)), { silent: true });
      expect(iptablesMasqLines(net, cid)).toEqual([]);
      expect(nftMasqLines(cid)).toEqual([]);
    });
  }

  test("CHECK fails when the masquerade rules were removed behind our back", async () => {
    const { cid, net } = ids("masq-gone");
    const dataDir = makeTempDir("ptp-store-");
    const conf = ptpConf({ name: net, dataDir, subnets: ["10.64.0.0/24"], ipMasq: true, ipMasqBackend: "nftables" });
    const ns = await createContainerNetns();
    const result = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
    Bun.spawnSync(["nft", "flush", "table", "inet", "cni_plugins_masquerade"]);
    expectCniError(await execPlugin("ptp", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { code: 999, msg: "masquerade" });
    expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", conf, cid)));
  });

  test("unknown ipMasqBackend is refused before any address is allocated", async () => {
    const { cid, net } = ids("badbackend");
    const dataDir = makeTempDir("ptp-store-");
    const conf = ptpConf({ name: net, dataDir, ipMasq: true, ipMasqBackend: "pf" });
    const ns = await createContainerNetns();
    expectCniError(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)), { code: 7, msg: 'unknown ipmasq backend "pf"' });
    expect(reservations(join(dataDir, net))).toEqual({});
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
  });

  describe("DNS", () => {
    const setup = async (dns: Record<string, unknown> | undefined) => {
      const { cid, net } = ids("dns");
      const dataDir = makeTempDir("ptp-store-");
      const resolvConf = join(dataDir, "resolv.conf");
      writeFileSync(resolvConf, "nameserver 192.0.2.53\nsearch ipam.example\n");
      const o: PtpConfOptions = { name: net, dataDir, resolvConf, ...(dns ? { dns } : {}) };
      const ns = await createContainerNetns();
      const r = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", ptpConf(o), cid)));
      expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", ptpConf(o), cid)));
      return r;
    };
    test("keeps the IPAM DNS when the config has none", async () => {
      expect((await setup(undefined)).dns).toEqual({ nameservers: ["192.0.2.53"], search: ["ipam.example"] });
    });
    test("config DNS replaces the IPAM DNS", async () => {
      expect((await setup({ nameservers: ["198.51.100.1"] })).dns).toEqual({ nameservers: ["198.51.100.1"] });
    });
    test("empty lists still count as set (IPAM DNS replaced by an empty one)", async () => {
      const r = await setup({ nameservers: [], search: [], options: [] });
      expect(r.dns?.nameservers ?? []).toEqual([]);
      expect(r.dns?.search ?? []).toEqual([]);
    });
  });

  test("DEL with the netns gone releases the address and removes the masquerade rules (both backends)", async () => {
    for (const backend of ["iptables", "nftables"]) {
      const { cid, net } = ids(`gone-${backend}`);
      const dataDir = makeTempDir("ptp-store-");
      const conf = ptpConf({ name: net, dataDir, subnets: ["10.65.0.0/24"], ipMasq: true, ipMasqBackend: backend });
      const ns = await createContainerNetns();
      const result = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
      await ns.destroy();
      expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", conf, cid)), { silent: true });
      expect(reservations(join(dataDir, net))).toEqual({});
      expect(iptablesMasqLines(net, cid)).toEqual([]);
      expect(nftMasqLines(cid)).toEqual([]);
      // The host end goes with the namespace, which the kernel dismantles in its own time (cleanup_net).
      await waitFor(`the host veth of the gone namespace (${backend}) to go`, () => hostLink(result.interfaces[0].name) === undefined, 10_000);
    }
  });

  test("DEL with CNI_NETNS unset still removes the masquerade rules and the reservation", async () => {
    const { cid, net } = ids("unset");
    const dataDir = makeTempDir("ptp-store-");
    const conf = ptpConf({ name: net, dataDir, subnets: ["10.66.0.0/24"], ipMasq: true });
    const ns = await createContainerNetns();
    expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
    expect(iptablesMasqLines(net, cid).length).toBeGreaterThan(0);
    expectSuccess(await execPlugin("ptp", inv(undefined, "DEL", conf, cid)), { silent: true });
    expect(reservations(join(dataDir, net))).toEqual({});
    expect(iptablesMasqLines(net, cid)).toEqual([]);
  });

  test("DEL of a never-added attachment succeeds; CHECK after DEL fails", async () => {
    const { cid, net } = ids("never");
    const dataDir = makeTempDir("ptp-store-");
    const conf = ptpConf({ cniVersion: "1.0.0", name: net, dataDir, ipMasq: true });
    const ns = await createContainerNetns();
    expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", conf, cid)), { silent: true });
    const result = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
    expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", conf, cid)));
    expectCniError(await execPlugin("ptp", inv(ns.path, "CHECK", { ...conf, prevResult: result }, cid)), { code: 999 });
  });

  test("ADD twice fails and leaks no reservation; the first attachment keeps working", async () => {
    const { cid, net } = ids("twice");
    const dataDir = makeTempDir("ptp-store-");
    const conf = ptpConf({ name: net, dataDir, subnets: ["10.67.0.0/24"] });
    const ns = await createContainerNetns();
    const first = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
    expectCniError(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)), { code: 999 });
    expect(Object.keys(reservations(join(dataDir, net)))).toEqual(["10.67.0.2"]);
    expect(ping(ns.path, "10.67.0.1")).toBe(true);
    // Another container ID with the same ifname in the same netns: IPAM succeeds, the veth clashes → rollback.
    expectCniError(await execPlugin("ptp", inv(ns.path, "ADD", conf, `${cid}-other`)), {
      code: 999,
      msg: /container veth name \("eth0"\) peer provided \("veth[0-9a-f]{8}"\) already exists/,
    });
    expect(Object.keys(reservations(join(dataDir, net)))).toEqual(["10.67.0.2"]);
    expectSuccess(await execPlugin("ptp", inv(ns.path, "CHECK", { ...conf, prevResult: first }, cid)));
    expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", conf, cid)));
  });

  test("CHECK without prevResult, after removing the IP, and at 0.3.1", async () => {
    const { cid, net } = ids("check");
    const dataDir = makeTempDir("ptp-store-");
    const conf = ptpConf({ name: net, dataDir, subnets: ["10.68.0.0/24"] });
    const ns = await createContainerNetns();
    const result = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
    expectCniError(await execPlugin("ptp", inv(ns.path, "CHECK", conf, cid)), { code: 999, msg: "ptp: Required prevResult missing" });
    expectCniError(await execPlugin("ptp", inv(ns.path, "CHECK", { ...conf, cniVersion: "0.3.1", prevResult: result }, cid)), { code: 1 });
    const withPrev = { ...conf, prevResult: result };
    const wrongMac = { ...conf, prevResult: { ...result, interfaces: [result.interfaces[0], { ...result.interfaces[1], mac: "02:00:00:00:00:99" }] } };
    expectCniError(await execPlugin("ptp", inv(ns.path, "CHECK", wrongMac, cid)), { code: 999, msg: "ptp: Interface eth0 Mac 02:00:00:00:00:99 doesn't match" });
    const wrongSandbox = { ...conf, prevResult: { ...result, interfaces: [result.interfaces[0], { ...result.interfaces[1], sandbox: "/elsewhere" }] } };
    expectCniError(await execPlugin("ptp", inv(ns.path, "CHECK", wrongSandbox, cid)), { code: 999, msg: "Sandbox in prevResult" });
    ipJson(ns.path, "route", "del", "default");
    expectCniError(await execPlugin("ptp", inv(ns.path, "CHECK", withPrev, cid)), { code: 999, msg: "Expected Route" });
    ipJson(ns.path, "addr", "del", "10.68.0.2/24", "dev", "eth0");
    expectCniError(await execPlugin("ptp", inv(ns.path, "CHECK", withPrev, cid)), { code: 999, msg: "Failed to match addr 10.68.0.2/24 on interface eth0" });
    expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", conf, cid)));
  });

  test("missing netns, a regular file, and the plugin's own netns are code 8 with no leak", async () => {
    const { cid, net } = ids("badns");
    const dataDir = makeTempDir("ptp-store-");
    const conf = ptpConf({ name: net, dataDir, subnets: ["10.69.0.0/24"] });
    const file = join(dataDir, "not-a-netns");
    writeFileSync(file, "");
    const vethsBefore = listLinks(undefined).length;
    for (const path of ["/proc/999999999/ns/net", file, `/proc/${process.pid}/ns/net`]) {
      expectCniError(await execPlugin("ptp", inv(path, "ADD", conf, cid)), { code: 8 });
      expect(reservations(join(dataDir, net))).toEqual({});
      expect(listLinks(undefined).length).toBe(vethsBefore);
    }
    // DEL with a vanished netns path is fine.
    expectSuccess(await execPlugin("ptp", inv("/proc/999999999/ns/net", "DEL", conf, cid)));
  });

  test("a failure after the veth exists removes the pair, the masquerade rules and the reservation", async () => {
    const { cid, net } = ids("rollback");
    const dataDir = makeTempDir("ptp-store-");
    // The route's gateway is unreachable: ConfigureIface fails after the veth was created.
    const conf = ptpConf({ name: net, dataDir, subnets: ["10.72.0.0/24"], ipMasq: true, routes: [{ dst: "172.16.0.0/16", gw: "192.0.2.1" }] });
    const ns = await createContainerNetns();
    const before = listLinks(undefined).map((l) => l.ifname).sort();
    expectCniError(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)), { code: 999, msg: "failed to add route '{172.16.0.0 ffff0000} via 192.0.2.1 dev eth0" });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    expect(listLinks(undefined).map((l) => l.ifname).sort()).toEqual(before);
    expect(reservations(join(dataDir, net))).toEqual({});
    expect(iptablesMasqLines(net, cid)).toEqual([]);
  });

  test("DEL carries on after a failed IPAM DEL: the pair and the masquerade rules go, the IPAM error is reported", async () => {
    const { cid, net } = ids("ipamdel");
    const dataDir = makeTempDir("ptp-store-");
    const conf = ptpConf({ name: net, dataDir, subnets: ["10.73.0.0/24"], ipMasq: true });
    const ns = await createContainerNetns();
    const result = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
    const hostVeth = result.interfaces[0].name;
    expect(iptablesMasqLines(net, cid).length).toBeGreaterThan(0);
    const broken = { ...conf, ipam: { ...(conf.ipam as Record<string, unknown>), type: "nosuchipam" } };
    expectCniError(await execPlugin("ptp", inv(ns.path, "DEL", broken, cid)), { code: 999, msg: 'failed to find plugin "nosuchipam"' });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    expect(hostLink(hostVeth)).toBeUndefined();
    expect(iptablesMasqLines(net, cid)).toEqual([]);
    // The lease is still held; a DEL with a working IPAM releases it.
    expect(Object.keys(reservations(join(dataDir, net)))).toEqual(["10.73.0.2"]);
    expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", conf, cid)), { silent: true });
    expect(reservations(join(dataDir, net))).toEqual({});
  });

  test("MAC (#492): runtimeConfig.mac beats CNI_ARGS MAC on the container end; CHECK sees it; a bad one is code 7 before IPAM", async () => {
    const { cid, net } = ids("mac");
    const dataDir = makeTempDir("ptp-store-");
    const conf = ptpConf({ cniVersion: "1.0.0", name: net, dataDir, subnets: ["10.78.0.0/24"] });
    const ns = await createContainerNetns();
    const args = "IgnoreUnknown=1;K8S_POD_NAME=x;MAC=0a:58:00:00:00:01";
    let result = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid, { args })));
    expect(ipJson<any[]>(ns.path, "link", "show", "eth0")[0].address).toBe("0a:58:00:00:00:01");
    expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", conf, cid, { args })), { silent: true });
    const withCap = { ...conf, runtimeConfig: { mac: "0A:58:00:00:00:02" } };
    result = expectResult(await execPlugin("ptp", inv(ns.path, "ADD", withCap, cid, { args: "IgnoreUnknown=1;MAC=0a:58:00:00:00:01" })));
    expect(ipJson<any[]>(ns.path, "link", "show", "eth0")[0].address).toBe("0a:58:00:00:00:02");
    expect(result.interfaces[1]).toEqual({ name: "eth0", mac: "0a:58:00:00:00:02", sandbox: ns.path });
    expectSuccess(await execPlugin("ptp", inv(ns.path, "CHECK", { ...withCap, prevResult: result }, cid)), { silent: true });
    expectSuccess(await execPlugin("ptp", inv(ns.path, "DEL", withCap, cid)), { silent: true });
    expectCniError(await execPlugin("ptp", inv(ns.path, "ADD", { ...conf, runtimeConfig: { mac: "nope" } }, cid)), { code: 7, msg: "invalid args nope for MAC addr" });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    expect(reservations(join(dataDir, net))).toEqual({});
  });

  test("an IPAM address without a gateway is a clear error and is released", async () => {
    const { cid, net } = ids("nogw");
    const ns = await createContainerNetns();
    const conf = { cniVersion: "1.0.0", name: net, type: "ptp", ipam: { type: "static", addresses: [{ address: "10.70.0.5/24" }] } };
    expectCniError(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)), { code: 999, msg: "no gateway" });
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
  });

  for (const backend of ["nftables", "iptables"] as const) {
    test(`[${backend}] STATUS delegates to IPAM; GC releases unlisted attachments and their masquerade rules`, async () => {
      const { cid, net } = ids(`gc-${backend}`);
      const dataDir = makeTempDir("ptp-store-");
      const conf = ptpConf({ cniVersion: "1.1.0", name: net, dataDir, subnets: ["10.71.0.0/24"], ipMasq: true, ipMasqBackend: backend });
      const masqLines = (id: string): string[] => (backend === "nftables" ? nftMasqLines(id) : iptablesMasqLines(net, id));
      const ns = await createContainerNetns();
      expectResult(await execPlugin("ptp", inv(ns.path, "ADD", conf, cid)));
      const ns2 = await createContainerNetns();
      expectResult(await execPlugin("ptp", inv(ns2.path, "ADD", conf, `o-${cid}`)));
      expectSuccess(await execPlugin("ptp", { command: "STATUS", config: conf }), { silent: true });
      const before = masqLines(cid);
      const one = { containerID: cid, ifname: "eth0" };
      const keepBoth = { ...conf, ...bothGcKeys([one, { containerID: `o-${cid}`, ifname: "eth0" }], []) };
      expectSuccess(await execPlugin("ptp", { command: "GC", config: keepBoth }), { silent: true });
      expect(Object.keys(reservations(join(dataDir, net)))).toHaveLength(2); // the newer key wins
      expect(masqLines(`o-${cid}`).length).toBeGreaterThan(0);
      const keepOne = { ...conf, ...olderGcKey([one]) };
      expectSuccess(await execPlugin("ptp", { command: "GC", config: keepOne }), { silent: true });
      expect(Object.keys(reservations(join(dataDir, net)))).toEqual(["10.71.0.2"]);
      expect(before.length).toBeGreaterThan(0);
      expect(masqLines(cid)).toEqual(before);
      expect(masqLines(`o-${cid}`)).toEqual([]);
      const keepNone = { ...conf, "cni.dev/valid-attachments": [] };
      expectSuccess(await execPlugin("ptp", { command: "GC", config: keepNone }), { silent: true });
      expect(reservations(join(dataDir, net))).toEqual({});
      expect(masqLines(cid)).toEqual([]);
      expect(masqChainName("test", "1234")).toBe("CNI-2bbe0c48b91a7d1b8a6753a8"); // oracle self-check (upstream value)
    });
  }
});
