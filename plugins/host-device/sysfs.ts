/**
 * The sysfs lookups host-device needs (upstream `handleDeviceID`, `hasDpdkDriver`, `getLink`'s
 * directory reads): which bus a runtime `deviceID` lives on, whether a PCI function is bound to a
 * userspace (DPDK) driver, the netdev names listed under a device's `net/` directory, and the PCI
 * address of a netdev (the 1.1.0 result's `pciID`).
 *
 * The sysfs root is a parameter (`/sys` in production) so tests run against a fake tree.
 *
 * Limitation: sysfs does not follow network namespaces. `/sys` shows the network devices of the
 * namespace that mounted it (normally the host's), so these names are only trusted to name a device;
 * the link itself is always looked up, moved and checked over netlink in the plugin's namespace.
 */
import { lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join, posix } from "node:path";
import { InternalError } from "../../shared/cni/errors.ts";
import { PathError } from "../../shared/sys/path-error.ts";

/** Linux drivers that hand a PCI network function to userspace (DPDK); such a device has no netdev. */
export const USERSPACE_DRIVERS: readonly string[] = ["vfio-pci", "uio_pci_generic", "igb_uio"];

/** The sysfs mount host-device reads (`/sys` unless a test says otherwise). */
export interface Sysfs {
  root: string;
}

export const HOST_SYSFS: Sysfs = { root: "/sys" };

/** What a runtime `deviceID` names. */
export type DeviceIdTarget = { bus: "pci"; id: string } | { bus: "auxiliary"; id: string };

/** The kernelpath prefix upstream requires. */
const KERNELPATH_PREFIX = "/sys/devices/";

export function pciDevicesDir(sysfs: Sysfs): string {
  return join(sysfs.root, "bus", "pci", "devices");
}

export function auxiliaryDevicesDir(sysfs: Sysfs): string {
  return join(sysfs.root, "bus", "auxiliary", "devices");
}

/**
 * Rejects bus IDs that could leave the bus directory (beyond upstream, which joins them as given):
 * a PCI or auxiliary device name never contains `/` and is never `.` or `..`.
 */
export function checkBusId(what: string, id: string): void {
  if (id === "." || id === ".." || id.includes("/") || id.includes("\0")) {
    throw new InternalError(`invalid ${what} ${JSON.stringify(id)}: not a device name`);
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Upstream `handleDeviceID`: a deviceID is a PCI address when `<sysfs>/bus/pci/devices/<id>`
 * exists, else an auxiliary device when `<sysfs>/bus/auxiliary/devices/<id>` exists.
 */
export function resolveDeviceID(sysfs: Sysfs, deviceID: string): DeviceIdTarget {
  checkBusId("runtime config DeviceID", deviceID);
  if (exists(join(pciDevicesDir(sysfs), deviceID))) return { bus: "pci", id: deviceID };
  if (exists(join(auxiliaryDevicesDir(sysfs), deviceID))) return { bus: "auxiliary", id: deviceID };
  throw new InternalError(`runtime config DeviceID ${deviceID} not found or unsupported`);
}

/** True when the PCI function's `driver` link points at a userspace driver (upstream `hasDpdkDriver`). */
export function hasDpdkDriver(sysfs: Sysfs, pciAddr: string): boolean {
  checkBusId("PCI address", pciAddr);
  const driverLink = join(pciDevicesDir(sysfs), pciAddr, "driver");
  let target: string;
  try {
    target = realpathSync(driverLink);
  } catch (err) {
    const cause = new PathError("lstat", driverLink, err);
    throw new InternalError(cause.message, { cause });
  }
  return USERSPACE_DRIVERS.includes(basename(target));
}

/** Entry names of a `net/` directory, sorted as Go's os.ReadDir returns them. */
export function netdevNamesIn(netDir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(netDir);
  } catch (err) {
    // Upstream quotes the cause here: `failed to read directory %s: %q`.
    const cause = new PathError("open", netDir, err);
    throw new InternalError(`failed to read directory ${netDir}: ${JSON.stringify(cause.message)}`, { cause });
  }
  if (names.length === 0) throw new InternalError(`failed to find network device in path ${netDir}`);
  return names.sort();
}

/**
 * The `net/` directory of a PCI function: `<pci>/net`, or for virtio devices the first
 * `<pci>/virtio*\/net` (upstream's glob).
 */
export function pciNetDir(sysfs: Sysfs, pciAddr: string): string {
  checkBusId("PCI address", pciAddr);
  const dev = join(pciDevicesDir(sysfs), pciAddr);
  const direct = join(dev, "net");
  try {
    lstatSync(direct);
    return direct;
  } catch {
    // not a plain netdev parent; try virtio children
  }
  let children: string[] = [];
  try {
    children = readdirSync(dev).filter((n) => n.startsWith("virtio")).sort();
  } catch {
    children = [];
  }
  for (const child of children) {
    const candidate = join(dev, child, "net");
    if (exists(candidate)) return candidate;
  }
  throw new InternalError(`no net directory under pci device ${pciAddr}`);
}

/** The `net/` directory of an auxiliary device. */
export function auxiliaryNetDir(sysfs: Sysfs, auxDevice: string): string {
  checkBusId("auxiliary device", auxDevice);
  return join(auxiliaryDevicesDir(sysfs), auxDevice, "net");
}

/**
 * The `net/` directory of a `kernelpath` (must be absolute and under /sys/devices/, as upstream).
 * Beyond upstream: a path that `..` would take out of /sys/devices/ is refused.
 */
export function kernelPathNetDir(sysfs: Sysfs, kernelpath: string): string {
  const normalized = posix.normalize(kernelpath);
  if (!kernelpath.startsWith("/") || !kernelpath.startsWith(KERNELPATH_PREFIX) || !normalized.startsWith(KERNELPATH_PREFIX)) {
    throw new InternalError(`kernel device path ${JSON.stringify(kernelpath)} must be absolute and begin with /sys/devices/`);
  }
  return join(sysfs.root, normalized.slice("/sys".length), "net");
}

/** The bus a sysfs device directory belongs to (its `subsystem` link's name), or "" when unreadable. */
function subsystemOf(deviceDir: string): string {
  try {
    return basename(realpathSync(join(deviceDir, "subsystem")));
  } catch {
    return "";
  }
}

/**
 * The PCI address (`0000:00:1f.6`) of the netdev `name` as sysfs shows it (the host's devices):
 * `class/net/<name>/device` resolved is a PCI function, or a virtio device whose parent is one (as
 * {@link pciNetDir} reads it the other way round). Undefined for a device on another bus (USB,
 * auxiliary), a virtual one (no `device`), or a name sysfs does not show.
 */
export function netdevPciAddress(sysfs: Sysfs, name: string): string | undefined {
  if (name === "" || name === "." || name === ".." || name.includes("/")) return undefined;
  let device: string;
  try {
    device = realpathSync(join(sysfs.root, "class", "net", name, "device"));
  } catch {
    return undefined;
  }
  const subsystem = subsystemOf(device);
  if (subsystem === "pci") return basename(device);
  if (subsystem === "virtio" && subsystemOf(dirname(device)) === "pci") return basename(dirname(device));
  return undefined;
}
