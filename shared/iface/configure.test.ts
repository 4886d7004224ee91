/**
 * configureIface and the CHECK helpers against the kernel (upstream pkg/ipam ipam_linux_test.go and
 * pkg/ip utils scenarios), in throwaway namespaces. Root only.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { Result } from "../cni/types.ts";
import { Handle } from "../netlink/index.ts";
import { createScratchNetns, runIn, skipUnlessRoot, type ScratchNetns } from "../netns/testing.ts";
import { validateContainerLink, validateExpectedInterfaceIPs, validateExpectedRoutes } from "./check.ts";
import { configureIface } from "./configure.ts";
import { setupVeth } from "./veth.ts";

const SKIP = skipUnlessRoot("shared/ip configureIface");

function errorText(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  return "<no error>";
}

describe.skipIf(SKIP)("configureIface + CHECK helpers", () => {
  let host: ScratchNetns;
  let cont: ScratchNetns;
  let hostNl: Handle;
  let contNl: Handle;
  beforeEach(() => {
    host = createScratchNetns();
    cont = createScratchNetns();
    hostNl = Handle.open(host.ns);
    contNl = Handle.open(cont.ns);
    setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth0", hostVethName: "hveth0" });
  });
  afterEach(() => {
    hostNl.close();
    contNl.close();
    host[Symbol.dispose]();
    cont[Symbol.dispose]();
  });
  const ip = (...args: string[]) => JSON.parse(runIn(cont, ["ip", "-j", ...args]) || "[]") as any[];

  const dual = (): Result => ({
    interfaces: [{ name: "hveth0" }, { name: "eth0", sandbox: cont.path }],
    ips: [
      { address: "10.20.0.5/24", gateway: "10.20.0.1", interface: 1 },
      { address: "fd20::5/64", gateway: "fd20::1", interface: 1 },
    ],
    routes: [
      { dst: "0.0.0.0/0" },
      { dst: "::/0" },
      { dst: "192.168.50.0/24", gw: "10.20.0.9", priority: 77 },
      { dst: "192.168.60.0/24", table: 1000 },
    ],
  });

  test("addresses, sysctls, link up, routes with gateway fallback, metric, table and scope", () => {
    const result = dual();
    configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result, warn: () => {} });
    const eth0 = ip("addr", "show", "dev", "eth0")[0];
    expect(eth0.flags).toContain("UP");
    const addrs = eth0.addr_info.map((a: any) => `${a.local}/${a.prefixlen}`);
    expect(addrs).toContain("10.20.0.5/24");
    expect(addrs).toContain("fd20::5/64");
    // DAD settled: nothing tentative is left.
    expect(eth0.addr_info.some((a: any) => a.tentative)).toBe(false);
    expect(runIn(cont, ["sysctl", "-n", "net.ipv6.conf.eth0.keep_addr_on_down"]).trim()).toBe("1");
    expect(runIn(cont, ["sysctl", "-n", "net.ipv6.conf.lo.disable_ipv6"]).trim()).toBe("0");

    const v4 = ip("-4", "route", "show");
    expect(v4).toContainEqual(expect.objectContaining({ dst: "default", gateway: "10.20.0.1", dev: "eth0" }));
    expect(v4).toContainEqual(expect.objectContaining({ dst: "192.168.50.0/24", gateway: "10.20.0.9", metric: 77 }));
    const t1000 = ip("-4", "route", "show", "table", "1000");
    expect(t1000).toContainEqual(expect.objectContaining({ dst: "192.168.60.0/24", gateway: "10.20.0.1" }));
    const v6 = ip("-6", "route", "show");
    expect(v6).toContainEqual(expect.objectContaining({ dst: "default", gateway: "fd20::1", dev: "eth0" }));

    // CHECK helpers agree with what was configured.
    validateExpectedInterfaceIPs(contNl, "eth0", result.ips!);
    validateExpectedRoutes(contNl, [result.routes![0]!, result.routes![1]!, result.routes![2]!]);
    expect(validateContainerLink(contNl, result.interfaces![1]!, { kind: "veth" }).name).toBe("eth0");
  });

  test("IPv6 addresses survive link down (keep_addr_on_down)", () => {
    configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result: dual(), warn: () => {} });
    runIn(cont, ["ip", "link", "set", "eth0", "down"]);
    const addrs = ip("addr", "show", "dev", "eth0")[0].addr_info.map((a: any) => a.local);
    expect(addrs).toContain("fd20::5");
  });

  test("two routes to the same destination become ECMP (append)", () => {
    const result: Result = {
      interfaces: [{ name: "eth0" }],
      ips: [{ address: "10.21.0.5/24", gateway: "10.21.0.1", interface: 0 }],
      routes: [
        { dst: "172.30.0.0/16", gw: "10.21.0.1" },
        { dst: "172.30.0.0/16", gw: "10.21.0.2" },
      ],
    };
    configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result, warn: () => {} });
    const r = ip("-4", "route", "show", "172.30.0.0/16");
    const text = JSON.stringify(r);
    expect(text).toContain("10.21.0.1");
    expect(text).toContain("10.21.0.2");
  });

  test("upstream errors: no interfaces, wrong index, index out of range, missing IP index skipped", () => {
    expect(errorText(() => configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result: { ips: [] }, warn: () => {} }))).toBe(
      "no interfaces to configure",
    );
    const wrong: Result = { interfaces: [{ name: "eth0" }, { name: "other" }], ips: [{ address: "10.1.1.2/24", interface: 1 }] };
    expect(errorText(() => configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result: wrong, warn: () => {} }))).toMatch(
      /^failed to add IP addr \{Interface:1 Address:\{IP:10\.1\.1\.2 Mask:ffffff00\} Gateway:<nil>\} to "eth0": invalid interface index$/,
    );
    for (const idx of [-1, 2]) {
      const bad: Result = { interfaces: [{ name: "eth0" }, { name: "x" }], ips: [{ address: "10.1.1.2/24", interface: idx }] };
      expect(errorText(() => configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result: bad, warn: () => {} }))).toContain("invalid interface index");
    }
    expect(errorText(() => configureIface({ nl: contNl, ns: cont.ns, ifName: "nope0", result: { interfaces: [{ name: "nope0" }] }, warn: () => {} }))).toBe(
      'failed to lookup "nope0": Link not found',
    );
    // An IP without `interface` is skipped, not an error.
    configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result: { interfaces: [{ name: "eth0" }], ips: [{ address: "10.1.1.2/24" }] }, warn: () => {} });
    expect(ip("addr", "show", "dev", "eth0")[0].addr_info.some((a: any) => a.local === "10.1.1.2")).toBe(false);
  });

  test("route scope is sent to the kernel (a link-scope route via a gateway is refused, as in upstream)", () => {
    const result: Result = {
      interfaces: [{ name: "eth0" }],
      ips: [{ address: "10.23.0.5/24", gateway: "10.23.0.1", interface: 0 }],
      routes: [{ dst: "192.168.70.0/24", scope: 253 }],
    };
    expect(errorText(() => configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result, warn: () => {} }))).toMatch(
      /^failed to add route '\{192\.168\.70\.0 ffffff00\} via 10\.23\.0\.1 dev eth0 metric 0 \(Scope: link, Table: 0\)': .*Nexthop has invalid gateway/,
    );
  });

  test("a route that cannot be added names it like upstream", () => {
    const result: Result = {
      interfaces: [{ name: "eth0" }],
      ips: [{ address: "10.22.0.5/24", gateway: "10.22.0.1", interface: 0 }],
      routes: [{ dst: "172.31.0.0/16", gw: "192.0.2.1" }],
    };
    expect(errorText(() => configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result, warn: () => {} }))).toMatch(
      /^failed to add route '\{172\.31\.0\.0 ffff0000\} via 192\.0\.2\.1 dev eth0 metric 0 \(Scope: universe, Table: 0\)': /,
    );
  });

  test("CHECK helpers fail with upstream's messages when state is missing", () => {
    const result = dual();
    configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result, warn: () => {} });
    runIn(cont, ["ip", "addr", "del", "10.20.0.5/24", "dev", "eth0"]);
    expect(errorText(() => validateExpectedInterfaceIPs(contNl, "eth0", result.ips!))).toBe(
      "Failed to match addr 10.20.0.5/24 on interface eth0",
    );
    expect(errorText(() => validateExpectedRoutes(contNl, [{ dst: "192.168.99.0/24", gw: "10.20.0.1" }]))).toBe(
      "Expected Route {Dst:{IP:192.168.99.0 Mask:ffffff00} GW:10.20.0.1 MTU:0 AdvMSS:0 Priority:0 Table:<nil> Scope:<nil>} not found in routing table",
    );
    // gateway mismatch on an existing destination
    expect(errorText(() => validateExpectedRoutes(contNl, [{ dst: "192.168.50.0/24", gw: "10.20.0.8" }]))).toContain("not found in routing table");
    const eth0 = { name: "eth0", sandbox: cont.path };
    const ptp = { linkPrefix: "ptp: " };
    expect(errorText(() => validateContainerLink(contNl, eth0, { kind: "macvlan" }))).toBe("Error: Container interface eth0 not of type macvlan");
    expect(errorText(() => validateContainerLink(contNl, eth0, { kind: "tun", kindLabel: "tap" }))).toBe("Error: Container interface eth0 not of type tap");
    expect(errorText(() => validateContainerLink(contNl, { ...eth0, mac: "02:00:00:00:00:01" }, { wording: ptp }))).toMatch(
      /^ptp: Interface eth0 Mac 02:00:00:00:00:01 doesn't match container Mac: [0-9a-f:]{17}$/,
    );
    expect(errorText(() => validateContainerLink(contNl, { ...eth0, name: "eth9" }, { wording: ptp }))).toBe("ptp: Container Interface name in prevResult: eth9 not found");
    expect(errorText(() => validateContainerLink(contNl, { ...eth0, name: "eth9" }, { wording: { lowerCase: true } }))).toBe(
      "container Interface name in prevResult: eth9 not found",
    );
    // The recorded MAC is compared case-insensitively.
    const mac = validateContainerLink(contNl, eth0, {}).mac!;
    expect(validateContainerLink(contNl, { ...eth0, mac: mac.toUpperCase() }, { kind: "veth" }).name).toBe("eth0");
  });

  test("DAD failure is reported instead of returning a tentative address", () => {
    // The host end holds the same address: the container's DAD must fail.
    runIn(host, ["ip", "link", "set", "hveth0", "up"]);
    runIn(host, ["sysctl", "-qw", "net.ipv6.conf.hveth0.disable_ipv6=0"]);
    runIn(host, ["ip", "addr", "add", "fd30::5/64", "dev", "hveth0", "nodad"]);
    runIn(cont, ["sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=1"]);
    const result: Result = { interfaces: [{ name: "eth0" }], ips: [{ address: "fd30::5/64", gateway: "fd30::1", interface: 0 }] };
    expect(errorText(() => configureIface({ nl: contNl, ns: cont.ns, ifName: "eth0", result, warn: () => {} }))).toMatch(
      /^failed while waiting for addresses to settle: link eth0 has address fd30::5 in DADFAILED state$/,
    );
  });
});
