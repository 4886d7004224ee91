/** sysfs lookups against a fake tree (no root): deviceID bus, DPDK drivers, net/ directories, MACs. */
import { afterEach, describe, expect, test } from "bun:test";
import { CniError } from "../../shared/cni/errors.ts";
import { createFakeSysfs, type FakeSysfs } from "../../test/harness/host-device-sysfs.ts";
import { auxiliaryNetDir, hasDpdkDriver, kernelPathNetDir, netdevNamesIn, netdevPciAddress, pciNetDir, resolveDeviceID, USERSPACE_DRIVERS } from "./sysfs.ts";

let fake: FakeSysfs | undefined;
function tree(): FakeSysfs {
  fake = createFakeSysfs();
  return fake;
}
afterEach(() => {
  fake?.remove();
  fake = undefined;
});

function messageOfThrow(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CniError);
    return (err as Error).message;
  }
  throw new Error("expected an error");
}

describe("resolveDeviceID", () => {
  test("a PCI address wins over an auxiliary device of the same name", () => {
    const s = tree();
    s.addPci("0000:00:1f.6", { driver: "e1000e", netdevs: ["eno1"] });
    s.addAuxiliary("0000:00:1f.6", ["x"]);
    expect(resolveDeviceID(s, "0000:00:1f.6")).toEqual({ bus: "pci", id: "0000:00:1f.6" });
  });
  test("an auxiliary device (mlx5_core.sf.4) is found on the auxiliary bus", () => {
    const s = tree();
    s.addAuxiliary("mlx5_core.sf.4", ["enp3s0f0s4"]);
    expect(resolveDeviceID(s, "mlx5_core.sf.4")).toEqual({ bus: "auxiliary", id: "mlx5_core.sf.4" });
  });
  test("unknown IDs fail with upstream's message; path escapes are refused", () => {
    const s = tree();
    expect(messageOfThrow(() => resolveDeviceID(s, "0000:99:00.0"))).toBe("runtime config DeviceID 0000:99:00.0 not found or unsupported");
    expect(messageOfThrow(() => resolveDeviceID(s, "../../bus"))).toContain("not a device name");
    expect(messageOfThrow(() => resolveDeviceID(s, ".."))).toContain("not a device name");
  });
});

describe("hasDpdkDriver", () => {
  for (const driver of USERSPACE_DRIVERS) {
    test(`${driver} is a userspace driver`, () => {
      const s = tree();
      s.addPci("0000:03:00.1", { driver });
      expect(hasDpdkDriver(s, "0000:03:00.1")).toBe(true);
    });
  }
  test("a kernel driver is not; a missing driver link is an lstat error", () => {
    const s = tree();
    s.addPci("0000:03:00.2", { driver: "ixgbevf", netdevs: ["ens3f0v1"] });
    s.addPci("0000:03:00.3", {});
    expect(hasDpdkDriver(s, "0000:03:00.2")).toBe(false);
    expect(messageOfThrow(() => hasDpdkDriver(s, "0000:03:00.3"))).toBe(
      `lstat ${s.root}/bus/pci/devices/0000:03:00.3/driver: no such file or directory`,
    );
  });
});

describe("net/ directories", () => {
  test("PCI: net/ first, then virtio*/net; names come back sorted", () => {
    const s = tree();
    s.addPci("0000:00:03.0", { driver: "virtio-pci", netdevs: ["ens3"], virtio: true });
    s.addPci("0000:00:04.0", { driver: "ixgbe", netdevs: ["enp0s4f1", "enp0s4"] });
    expect(netdevNamesIn(pciNetDir(s, "0000:00:03.0"))).toEqual(["ens3"]);
    expect(netdevNamesIn(pciNetDir(s, "0000:00:04.0"))).toEqual(["enp0s4", "enp0s4f1"]);
  });
  test("PCI without any net directory, empty and missing directories", () => {
    const s = tree();
    s.addPci("0000:00:05.0", { driver: "vfio-pci" });
    expect(messageOfThrow(() => pciNetDir(s, "0000:00:05.0"))).toBe("no net directory under pci device 0000:00:05.0");
    s.addAuxiliary("aux.0", []);
    const dir = auxiliaryNetDir(s, "aux.0");
    expect(messageOfThrow(() => netdevNamesIn(dir))).toContain(`failed to read directory ${dir}: "open ${dir}: no such file or directory"`);
  });
  test("auxiliary devices", () => {
    const s = tree();
    s.addAuxiliary("mlx5_core.sf.2", ["sf2"]);
    expect(netdevNamesIn(auxiliaryNetDir(s, "mlx5_core.sf.2"))).toEqual(["sf2"]);
  });
  test("kernelpath: must be absolute under /sys/devices/, `..` may not leave it; mapped onto the sysfs root", () => {
    const s = tree();
    s.addKernelPath("pci0000:00/0000:00:1f.6", ["eno1"]);
    expect(netdevNamesIn(kernelPathNetDir(s, "/sys/devices/pci0000:00/0000:00:1f.6"))).toEqual(["eno1"]);
    const bad = `kernel device path "sys/devices/x" must be absolute and begin with /sys/devices/`;
    expect(messageOfThrow(() => kernelPathNetDir(s, "sys/devices/x"))).toBe(bad);
    expect(messageOfThrow(() => kernelPathNetDir(s, "/sys/class/net/eth0"))).toContain("must be absolute and begin with /sys/devices/");
    expect(messageOfThrow(() => kernelPathNetDir(s, "/sys/devices/../../etc"))).toContain("must be absolute and begin with /sys/devices/");
  });
});

describe("netdevPciAddress (the 1.1.0 result's pciID)", () => {
  test("a netdev of a PCI function, and of a virtio device on one", () => {
    const s = tree();
    s.addPci("0000:00:1f.6", { driver: "e1000e", netdevs: ["eno1"] });
    s.addPci("0000:00:03.0", { driver: "virtio-pci", netdevs: ["ens3"], virtio: true });
    expect(netdevPciAddress(s, "eno1")).toBe("0000:00:1f.6");
    expect(netdevPciAddress(s, "ens3")).toBe("0000:00:03.0");
  });
  test("no class/net entry, an auxiliary or kernel-path device, a bad name: undefined", () => {
    const s = tree();
    s.addAuxiliary("mlx5_core.sf.4", ["sf4"]);
    s.addKernelPath("platform/soc/eth", ["end0"]);
    for (const name of ["nosuch0", "sf4", "end0", "", "..", "a/b"]) expect(netdevPciAddress(s, name)).toBeUndefined();
  });
});
