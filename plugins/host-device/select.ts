/**
 * Finding the host link a config names (upstream `getLink`): by name, by MAC, or by the first netdev
 * listed in sysfs under a kernel path, a PCI function or an auxiliary device. Links are always
 * looked up over netlink in the plugin's own namespace; sysfs only supplies a name (see sysfs.ts).
 */
import { InternalError } from "../../shared/cni/errors.ts";
import type { Handle, Link } from "../../shared/netlink/index.ts";
import type { HostDeviceConfig } from "./config.ts";
import { auxiliaryNetDir, kernelPathNetDir, netdevNamesIn, pciNetDir, type Sysfs } from "./sysfs.ts";

/** Hardware address lengths Go's net.ParseMAC accepts (EUI-48, EUI-64, 20-byte IPoIB). */
const MAC_LENGTHS = [6, 8, 20];

/**
 * Parses a MAC like Go's `net.ParseMAC`: `aa:bb:..`, `aa-bb-..` or `aabb.ccdd.eeff`, 6, 8 or 20
 * bytes. Returns lower-case colon hex, or undefined when `s` is not a MAC.
 */
export function parseMac(s: string): string | undefined {
  let bytes: string[] = [];
  if (s.length >= 14 && s[4] === ".") {
    const groups = s.split(".");
    if (!groups.every((g) => /^[0-9a-fA-F]{4}$/.test(g))) return undefined;
    for (const g of groups) bytes.push(g.slice(0, 2), g.slice(2));
  } else if (s.length >= 14 && (s[2] === ":" || s[2] === "-")) {
    const groups = s.split(s[2]);
    if (!groups.every((g) => /^[0-9a-fA-F]{2}$/.test(g))) return undefined;
    bytes = groups;
  } else {
    return undefined;
  }
  if (!MAC_LENGTHS.includes(bytes.length)) return undefined;
  return bytes.map((b) => b.toLowerCase()).join(":");
}

function firstLinkIn(nl: Handle, netDir: string): Link {
  const names = netdevNamesIn(netDir);
  return nl.linkByName(names[0]!);
}

/** The host link selected by `conf` (precedence device > hwaddr > kernelpath > pciBusID > auxiliary). */
export function findHostDevice(nl: Handle, conf: HostDeviceConfig, sysfs: Sysfs): Link {
  if (conf.device !== "") return nl.linkByName(conf.device);
  if (conf.hwaddr !== "") {
    const want = parseMac(conf.hwaddr);
    if (want === undefined) {
      throw new InternalError(`failed to parse MAC address ${JSON.stringify(conf.hwaddr)}: address ${conf.hwaddr}: invalid MAC address`);
    }
    const found = nl.linkList().find((l) => l.mac !== undefined && l.mac.toLowerCase() === want);
    if (found !== undefined) return found;
  } else if (conf.kernelpath !== "") {
    return firstLinkIn(nl, kernelPathNetDir(sysfs, conf.kernelpath));
  } else if (conf.pciAddr !== "") {
    return firstLinkIn(nl, pciNetDir(sysfs, conf.pciAddr));
  } else if (conf.auxDevice !== "") {
    return firstLinkIn(nl, auxiliaryNetDir(sysfs, conf.auxDevice));
  }
  throw new InternalError("failed to find physical interface");
}
