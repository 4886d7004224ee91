import { describe, expect, test } from "bun:test";
import { CNI_ERROR_CODES, CniError } from "../../shared/cni/errors.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import { hasPortVlans, loadBridgeConfig, wantsVlanFiltering } from "./config.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

function argsFor(config: Record<string, unknown>, cniArgs = ""): CmdArgs {
  const text = JSON.stringify(config);
  return withDelegate({
    command: "ADD",
    containerID: "c1",
    netns: "/proc/1/ns/net",
    ifName: "eth0",
    args: cniArgs,
    path: "",
    stdinData: new TextEncoder().encode(text),
    config: JSON.parse(text),
    cniVersion: (config.cniVersion as string) ?? "0.1.0",
    env: {},
    stderr: () => {},
    scope: PROCESS_SCOPE,
  });
}

const base = { cniVersion: "1.0.0", name: "net", type: "bridge" };

function errorOf(fn: () => unknown): CniError {
  try {
    fn();
  } catch (err) {
    if (err instanceof CniError) return err;
    throw err;
  }
  throw new Error("expected an error");
}

describe("loadBridgeConfig", () => {
  test("defaults", () => {
    const c = loadBridgeConfig(argsFor(base));
    expect(c).toMatchObject({
      bridge: "cni0",
      isGateway: false,
      isDefaultGateway: false,
      mtu: 0,
      vlan: 0,
      vlanTrunk: undefined,
      preserveDefaultVlan: false,
      mac: undefined,
      ipamType: "",
      dnsOverride: false,
    });
    expect(wantsVlanFiltering(c)).toBe(false);
  });

  test("isDefaultGateway implies isGateway", () => {
    expect(loadBridgeConfig(argsFor({ ...base, isDefaultGateway: true })).isGateway).toBe(true);
  });

  test("keys match case-insensitively (Go)", () => {
    const c = loadBridgeConfig(argsFor({ ...base, Bridge: "br9", ISGATEWAY: true, hairpinmode: true }));
    expect(c).toMatchObject({ bridge: "br9", isGateway: true, hairpinMode: true });
  });

  test("type mismatch names the field, code 7", () => {
    const e = errorOf(() => loadBridgeConfig(argsFor({ ...base, mtu: "1500" })));
    expect(e.code).toBe(CNI_ERROR_CODES.InvalidNetworkConfig);
    expect(e.message).toContain("NetConf.mtu of type int");
  });

  test("mac precedence: CNI_ARGS MAC < args.cni.mac < runtimeConfig.mac", () => {
    const envOnly = loadBridgeConfig(argsFor(base, "MAC=0a:00:00:00:00:01"));
    expect(envOnly.mac).toBe("0a:00:00:00:00:01");
    const argsWin = loadBridgeConfig(argsFor({ ...base, args: { cni: { mac: "0a:00:00:00:00:02" } } }, "MAC=0a:00:00:00:00:01"));
    expect(argsWin.mac).toBe("0a:00:00:00:00:02");
    const runtimeWins = loadBridgeConfig(
      argsFor({ ...base, args: { cni: { mac: "0a:00:00:00:00:02" } }, runtimeConfig: { mac: "0A-00-00-00-00-03" } }, "MAC=0a:00:00:00:00:01"),
    );
    expect(runtimeWins.mac).toBe("0a:00:00:00:00:03");
  });

  test("unknown CNI_ARGS key is refused unless IgnoreUnknown", () => {
    expect(() => loadBridgeConfig(argsFor(base, "FOO=1"))).toThrow("unknown args");
    expect(loadBridgeConfig(argsFor(base, "IgnoreUnknown=1;FOO=1")).mac).toBeUndefined();
  });

  test("malformed MAC is a config error", () => {
    expect(() => loadBridgeConfig(argsFor({ ...base, runtimeConfig: { mac: "zz" } }))).toThrow('invalid MAC address "zz"');
  });

  test("vlan range and trunk validation", () => {
    expect(() => loadBridgeConfig(argsFor({ ...base, vlan: 5000 }))).toThrow("invalid VLAN ID 5000 (must be between 0 and 4094)");
    expect(() => loadBridgeConfig(argsFor({ ...base, vlanTrunk: [{ minID: 5 }] }))).toThrow("maxID is missing");
    const c = loadBridgeConfig(argsFor({ ...base, vlan: 100, vlanTrunk: [{ id: 101 }, { minID: 200, maxID: 202 }] }));
    expect(c.vlan).toBe(100);
    expect(c.vlanTrunk).toEqual([101, 200, 201, 202]);
    expect(wantsVlanFiltering(c)).toBe(true);
    expect(hasPortVlans(c)).toBe(true);
  });

  test("an empty vlanTrunk still asks for vlan_filtering but adds no port VLANs", () => {
    const c = loadBridgeConfig(argsFor({ ...base, vlanTrunk: [] }));
    expect(wantsVlanFiltering(c)).toBe(true);
    expect(hasPortVlans(c)).toBe(false);
  });

  test("negative MTU and over-long bridge names are refused up front", () => {
    expect(() => loadBridgeConfig(argsFor({ ...base, mtu: -1 }))).toThrow("invalid MTU -1");
    expect(() => loadBridgeConfig(argsFor({ ...base, bridge: "a-very-long-bridge" }))).toThrow("is too long");
    expect(() => loadBridgeConfig(argsFor({ ...base, bridge: "a/b" }))).toThrow("invalid bridge name");
  });

  test("loading for DEL tolerates values that became invalid", () => {
    const c = loadBridgeConfig(argsFor({ ...base, vlan: 5000, mtu: -1, vlanTrunk: [{ minID: 9 }], runtimeConfig: { mac: "zz" } }), { forDel: true });
    expect(c).toMatchObject({ vlan: 0, mtu: 0, vlanTrunk: undefined, mac: undefined });
  });

  test("config dns overrides when any field is set, even an empty list", () => {
    expect(loadBridgeConfig(argsFor({ ...base, dns: { nameservers: [] } })).dnsOverride).toBe(true);
    expect(loadBridgeConfig(argsFor({ ...base, dns: {} })).dnsOverride).toBe(false);
    const c = loadBridgeConfig(argsFor({ ...base, dns: { nameservers: ["10.0.0.53"], domain: "x" } }));
    expect(c.dns).toEqual({ nameservers: ["10.0.0.53"], domain: "x" });
  });

  test("ipam type decides L2 vs L3", () => {
    expect(loadBridgeConfig(argsFor({ ...base, ipam: {} })).ipamType).toBe("");
    expect(loadBridgeConfig(argsFor({ ...base, ipam: { type: "host-local" } })).ipamType).toBe("host-local");
  });
});
