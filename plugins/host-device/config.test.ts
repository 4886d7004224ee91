/** Config loading against a fake sysfs (no root): selectors, deviceID, DPDK mode, forDel (DEL). */
import { afterEach, describe, expect, test } from "bun:test";
import { CniError, deciding, toErrorJson } from "../../shared/cni/errors.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import { createFakeSysfs, type FakeSysfs } from "../../test/harness/host-device-sysfs.ts";
import { loadHostDeviceConfig, NO_SELECTOR_MESSAGE } from "./config.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

let fake: FakeSysfs | undefined;
function tree(): FakeSysfs {
  fake = createFakeSysfs();
  fake.addPci("0000:af:00.1", { driver: "vfio-pci" });
  fake.addPci("0000:af:00.2", { driver: "iavf", netdevs: ["ens1f0v2"] });
  fake.addAuxiliary("mlx5_core.sf.4", ["sf4"]);
  return fake;
}
afterEach(() => {
  fake?.remove();
  fake = undefined;
});

function args(config: Record<string, unknown>): CmdArgs {
  const full = { cniVersion: "1.0.0", name: "hd", type: "host-device", ...config };
  return withDelegate({
    command: "ADD",
    containerID: "c",
    netns: "/x",
    ifName: "net1",
    args: "",
    path: "",
    stdinData: new TextEncoder().encode(JSON.stringify(full)),
    config: full,
    cniVersion: "1.0.0",
    env: {},
    stderr: () => {},
    scope: PROCESS_SCOPE,
  });
}

function failure(fn: () => unknown): { code: number; msg: string } {
  try {
    fn();
  } catch (err) {
    // What a runtime would see: the code comes from the CniError in the cause chain.
    const json = toErrorJson(err);
    expect(deciding(err)).toBeInstanceOf(CniError);
    return { code: json.code, msg: json.msg };
  }
  throw new Error("expected an error");
}

describe("loadHostDeviceConfig", () => {
  test("selectors and the safety switch are read (keys case-insensitive, as Go)", () => {
    const s = tree();
    const c = loadHostDeviceConfig(args({ Device: "eth9", HWAddr: "aa:bb:cc:dd:ee:ff", allowunsafedevice: true, ipam: { type: "static" } }), { sysfs: s });
    expect(c).toMatchObject({ device: "eth9", hwaddr: "aa:bb:cc:dd:ee:ff", allowUnsafeDevice: true, ipamType: "static", dpdkMode: false });
  });
  test("no selector: code 7 with upstream's text; loading for DEL accepts it", () => {
    const s = tree();
    expect(failure(() => loadHostDeviceConfig(args({}), { sysfs: s }))).toEqual({ code: 7, msg: NO_SELECTOR_MESSAGE });
    expect(loadHostDeviceConfig(args({}), { sysfs: s, forDel: true }).device).toBe("");
  });
  test("a wrongly typed field is a decode error", () => {
    const s = tree();
    expect(failure(() => loadHostDeviceConfig(args({ device: 5 }), { sysfs: s })).msg).toStartWith("failed to load netconf: ");
  });
  test("pciBusID with a userspace driver → DPDK mode; with a kernel driver → not", () => {
    const s = tree();
    expect(loadHostDeviceConfig(args({ pciBusID: "0000:af:00.1" }), { sysfs: s }).dpdkMode).toBe(true);
    expect(loadHostDeviceConfig(args({ pciBusID: "0000:af:00.2" }), { sysfs: s }).dpdkMode).toBe(false);
  });
  test("DPDKMode from the config stays when no PCI address is known (upstream quirk)", () => {
    const s = tree();
    expect(loadHostDeviceConfig(args({ device: "x", dpdkmode: true }), { sysfs: s }).dpdkMode).toBe(true);
    expect(loadHostDeviceConfig(args({ pciBusID: "0000:af:00.2", DPDKMode: true }), { sysfs: s }).dpdkMode).toBe(false);
  });
  test("runtimeConfig.deviceID overrides pciBusID (PCI) or selects an auxiliary device", () => {
    const s = tree();
    const pci = loadHostDeviceConfig(args({ pciBusID: "0000:af:00.2", runtimeConfig: { deviceID: "0000:af:00.1" } }), { sysfs: s });
    expect(pci).toMatchObject({ pciAddr: "0000:af:00.1", auxDevice: "", dpdkMode: true });
    const aux = loadHostDeviceConfig(args({ pciBusID: "0000:af:00.2", runtimeConfig: { deviceID: "mlx5_core.sf.4" } }), { sysfs: s });
    expect(aux).toMatchObject({ pciAddr: "", auxDevice: "mlx5_core.sf.4", dpdkMode: false });
  });
  test("an unknown deviceID or a PCI function without driver fails; loading for DEL carries on", () => {
    const s = tree();
    s.addPci("0000:af:00.3", {});
    expect(failure(() => loadHostDeviceConfig(args({ runtimeConfig: { deviceID: "0000:00:00.9" } }), { sysfs: s })).msg).toBe(
      "runtime config DeviceID 0000:00:00.9 not found or unsupported",
    );
    expect(failure(() => loadHostDeviceConfig(args({ pciBusID: "0000:af:00.3" }), { sysfs: s })).msg).toStartWith("error with host device: lstat ");
    expect(failure(() => loadHostDeviceConfig(args({ pciBusID: "0000:00:00.7" }), { sysfs: s })).msg).toStartWith("error with host device: lstat ");
    const lenient = loadHostDeviceConfig(args({ runtimeConfig: { deviceID: "0000:00:00.9" } }), { sysfs: s, forDel: true });
    expect(lenient).toMatchObject({ pciAddr: "", auxDevice: "", dpdkMode: false });
    expect(loadHostDeviceConfig(args({ pciBusID: "0000:af:00.3" }), { sysfs: s, forDel: true }).dpdkMode).toBe(false);
  });
  test("dns is kept only when set", () => {
    const s = tree();
    expect(loadHostDeviceConfig(args({ device: "x", dns: { nameservers: ["192.0.2.53"] } }), { sysfs: s }).dns).toEqual({ nameservers: ["192.0.2.53"] });
    expect(loadHostDeviceConfig(args({ device: "x", dns: {} }), { sysfs: s }).dns).toBeUndefined();
  });
});
