/**
 * host-device selection through sysfs, in-process with a fake sysfs tree (the plugin's sysfs root is
 * injectable; the binary always reads /sys): `kernelpath`, `pciBusID` (net/ and virtio*\/net),
 * `runtimeConfig.deviceID` naming a PCI function or an auxiliary device, and DPDK functions
 * (userspace driver: nothing moved, only IPAM runs; DEL only releases the address; CHECK passes).
 * The netdev names in the fake tree are real veths in the throwaway host netns, so the moves are real.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { CmdArgs, Command, Result } from "../../shared/cni/types.ts";
import { makeHostDevicePlugin } from "../../plugins/host-device/host-device.ts";
import { registerCleanup, useFixtureCleanup } from "../harness/cleanup.ts";
import { hostDeviceConf, hostVeth, linkDetails, uniqueName } from "../harness/host-device-helpers.ts";
import { createFakeSysfs, type FakeSysfs } from "../harness/host-device-sysfs.ts";
import { addrsOf } from "../harness/ip-oracle.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { DIST_BIN } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

function fakeSysfs(): FakeSysfs {
  const s = createFakeSysfs();
  registerCleanup(`fake sysfs ${s.root}`, () => s.remove());
  return s;
}

let seq = 0;
function cmd(command: Command, netns: string, config: Record<string, unknown>, ifName = "net1"): CmdArgs {
  seq++;
  return withDelegate({
    command,
    containerID: `hd-sysfs-${process.pid}-${config.name as string}`,
    netns,
    ifName,
    args: "",
    path: DIST_BIN,
    stdinData: new TextEncoder().encode(JSON.stringify(config)),
    config,
    cniVersion: config.cniVersion as string,
    env: { CNI_COMMAND: command, CNI_CONTAINERID: `hd-sysfs-${process.pid}-${config.name as string}`, CNI_NETNS: netns, CNI_IFNAME: ifName, CNI_PATH: DIST_BIN },
    stderr: () => {},
    scope: PROCESS_SCOPE,
  });
}

/**
 * ADD through the fake tree, then checks the move and DEL it back. A 1.1.0 result's entry carries
 * the device's `pciID` (none before 1.1.0, none for a device that is not on PCI).
 */
async function addAndReturn(sysfs: FakeSysfs, devName: string, top: Record<string, unknown>, o: { cniVersion?: string; pciID?: string } = {}): Promise<void> {
  const plugin = makeHostDevicePlugin({ sysfs });
  const ns = await createContainerNetns();
  const mac = linkDetails(undefined, devName)!.address!;
  const conf = hostDeviceConf({ cniVersion: o.cniVersion ?? "1.0.0", name: `n${seq}`, top });
  const result = (await plugin.add(cmd("ADD", ns.path, conf))) as Result;
  expect(result.interfaces).toEqual([{ name: "net1", mac, sandbox: ns.path, ...(o.pciID !== undefined ? { pciID: o.pciID } : {}) }]);
  expect(linkDetails(ns.path, "net1")).toMatchObject({ address: mac, ifalias: devName });
  expect(linkDetails(undefined, devName)).toBeUndefined();
  await plugin.del(cmd("DEL", ns.path, conf));
  expect(linkDetails(undefined, devName)).toMatchObject({ address: mac });
}

describe.skipIf(!sandboxed())("host-device via sysfs (fake tree)", () => {
  useFixtureCleanup();

  test("kernelpath: the first netdev under <kernelpath>/net is moved (no pciID: sysfs does not show it on PCI)", async () => {
    const dev = hostVeth(uniqueName("hsk"));
    const s = fakeSysfs();
    s.addKernelPath("pci0000:00/0000:00:19.0", [dev.name]);
    await addAndReturn(s, dev.name, { kernelpath: "/sys/devices/pci0000:00/0000:00:19.0" }, { cniVersion: "1.1.0" });
  });

  test("pciBusID: net/ of a kernel-driven function, and virtio*/net; pciID in 1.1.0 results", async () => {
    const a = hostVeth(uniqueName("hsp"));
    const b = hostVeth(uniqueName("hsv"));
    const s = fakeSysfs();
    s.addPci("0000:00:1f.6", { driver: "e1000e", netdevs: [a.name] });
    s.addPci("0000:00:03.0", { driver: "virtio-pci", netdevs: [b.name], virtio: true });
    await addAndReturn(s, a.name, { pciBusID: "0000:00:1f.6" });
    await addAndReturn(s, b.name, { pciBusID: "0000:00:03.0" });
    // At 1.1.0 the result names the PCI function (for virtio: the function the virtio device is on).
    await addAndReturn(s, a.name, { device: a.name }, { cniVersion: "1.1.0", pciID: "0000:00:1f.6" });
    await addAndReturn(s, b.name, { runtimeConfig: { deviceID: "0000:00:03.0" } }, { cniVersion: "1.1.0", pciID: "0000:00:03.0" });
  });

  test("runtimeConfig.deviceID: a PCI function (overriding pciBusID) and an auxiliary device", async () => {
    const a = hostVeth(uniqueName("hsd"));
    const b = hostVeth(uniqueName("hsa"));
    const s = fakeSysfs();
    s.addPci("0000:3b:00.2", { driver: "iavf", netdevs: [a.name] });
    s.addAuxiliary("mlx5_core.sf.4", [b.name]);
    await addAndReturn(s, a.name, { pciBusID: "0000:00:00.0", runtimeConfig: { deviceID: "0000:3b:00.2" } });
    await addAndReturn(s, b.name, { runtimeConfig: { deviceID: "mlx5_core.sf.4" } });
  });

  test("an unknown deviceID fails ADD; DEL with it still succeeds (lenient)", async () => {
    const s = fakeSysfs();
    const plugin = makeHostDevicePlugin({ sysfs: s });
    const ns = await createContainerNetns();
    const conf = hostDeviceConf({ cniVersion: "1.0.0", name: "unknown", top: { runtimeConfig: { deviceID: "0000:99:00.0" } } });
    await expect(plugin.add(cmd("ADD", ns.path, conf))).rejects.toThrow("runtime config DeviceID 0000:99:00.0 not found or unsupported");
    await plugin.del(cmd("DEL", ns.path, conf));
  });

  test("DPDK (vfio-pci) with IPAM: nothing moves, the address is allocated, CHECK passes, DEL releases it", async () => {
    const dev = hostVeth(uniqueName("hsx"));
    const s = fakeSysfs();
    s.addPci("0000:af:00.1", { driver: "vfio-pci", netdevs: [dev.name] });
    const plugin = makeHostDevicePlugin({ sysfs: s });
    const ns = await createContainerNetns();
    const dataDir = makeTempDir("hostdev-dpdk-");
    const conf = hostDeviceConf({ cniVersion: "1.0.0", name: "dpdk", top: { pciBusID: "0000:af:00.1" }, ipam: { dataDir, subnet: "10.83.0.0/24" } });
    const result = (await plugin.add(cmd("ADD", ns.path, conf))) as Result;
    expect(result.interfaces).toBeUndefined();
    expect(result.ips).toEqual([{ address: "10.83.0.2/24", gateway: "10.83.0.1" }]);
    expect(linkDetails(undefined, dev.name)?.flags).toContain("UP");
    expect(linkDetails(ns.path, "net1")).toBeUndefined();
    expect(addrsOf(undefined, dev.name)).toEqual([]);
    expect(Object.keys(reservations(join(dataDir, "dpdk")))).toEqual(["10.83.0.2"]);

    await plugin.check!(cmd("CHECK", ns.path, { ...conf, prevResult: { cniVersion: "1.0.0", ...result } }));
    await plugin.del(cmd("DEL", ns.path, conf));
    expect(reservations(join(dataDir, "dpdk"))).toEqual({});
    expect(linkDetails(undefined, dev.name)?.flags).toContain("UP");
  });

  test("DPDK without IPAM: an empty result, nothing moved", async () => {
    const dev = hostVeth(uniqueName("hsy"));
    const s = fakeSysfs();
    s.addPci("0000:af:00.2", { driver: "igb_uio", netdevs: [dev.name] });
    const plugin = makeHostDevicePlugin({ sysfs: s });
    const ns = await createContainerNetns();
    const conf = hostDeviceConf({ cniVersion: "1.0.0", name: "dpdk2", top: { runtimeConfig: { deviceID: "0000:af:00.2" } } });
    expect(await plugin.add(cmd("ADD", ns.path, conf))).toEqual({});
    expect(linkDetails(undefined, dev.name)).toBeDefined();
    await plugin.del(cmd("DEL", ns.path, conf));
  });
});
