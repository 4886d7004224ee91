/**
 * A fake sysfs tree for host-device tests: PCI functions (with a driver link, a `subsystem` link and
 * `net/` or `virtio*\/net` entries, each netdev also under `class/net/<name>` with its `device`
 * link), auxiliary devices and kernel-path devices, in a temp dir that the fixture cleanup removes.
 * Pass `{ root }` to the plugin's sysfs parameter.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface FakeSysfs {
  readonly root: string;
  /** `<root>/bus/pci/devices/<addr>`, bound to `driver`, with `netdevs` under net/ (or virtioN/net). */
  addPci(addr: string, o: { driver?: string; netdevs?: string[]; virtio?: boolean }): void;
  /** `<root>/bus/auxiliary/devices/<name>/net/<netdevs>`. */
  addAuxiliary(name: string, netdevs: string[]): void;
  /** `<root>/devices/<rel>/net/<netdevs>` for a kernelpath `/sys/devices/<rel>`. */
  addKernelPath(rel: string, netdevs: string[]): void;
  remove(): void;
}

export function createFakeSysfs(): FakeSysfs {
  const root = mkdtempSync(join(tmpdir(), "hostdev-sysfs-"));
  const pciDevices = join(root, "bus", "pci", "devices");
  const drivers = join(root, "bus", "pci", "drivers");
  const classNet = join(root, "class", "net");
  mkdirSync(pciDevices, { recursive: true });
  mkdirSync(join(root, "bus", "virtio"), { recursive: true });
  mkdirSync(classNet, { recursive: true });
  return {
    root,
    addPci(addr, o) {
      // Real sysfs: the device lives under /sys/devices/pci0000:00/<addr>, the bus entry is a link.
      const real = join(root, "devices", "pci0000:00", addr);
      mkdirSync(real, { recursive: true });
      symlinkSync(real, join(pciDevices, addr));
      symlinkSync(join(root, "bus", "pci"), join(real, "subsystem"));
      if (o.driver !== undefined) {
        mkdirSync(join(drivers, o.driver), { recursive: true });
        symlinkSync(join(drivers, o.driver), join(real, "driver"));
      }
      const netdevs = o.netdevs ?? [];
      if (netdevs.length > 0) {
        const parent = o.virtio ? join(real, "virtio3") : real;
        if (o.virtio) {
          mkdirSync(parent, { recursive: true });
          symlinkSync(join(root, "bus", "virtio"), join(parent, "subsystem"));
        }
        for (const n of netdevs) {
          const netdev = join(parent, "net", n);
          mkdirSync(netdev, { recursive: true });
          symlinkSync(parent, join(netdev, "device"));
          symlinkSync(netdev, join(classNet, n));
        }
      }
    },
    addAuxiliary(name, netdevs) {
      const dir = join(root, "bus", "auxiliary", "devices", name);
      mkdirSync(dir, { recursive: true });
      for (const n of netdevs) mkdirSync(join(dir, "net", n), { recursive: true });
    },
    addKernelPath(rel, netdevs) {
      const dir = join(root, "devices", rel);
      mkdirSync(dir, { recursive: true });
      for (const n of netdevs) mkdirSync(join(dir, "net", n), { recursive: true });
    },
    remove() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}
