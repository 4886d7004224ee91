/**
 * Finding the host link a config names (upstream `getLink`): by name, by MAC, or by the first netdev
 * listed in sysfs under a kernel path, a PCI function or an auxiliary device. Links are always
 * looked up over netlink in the plugin's own namespace; sysfs only supplies a name (see sysfs.ts).
 */
import { InternalError } from "../../shared/cni/errors.ts";
import { invalidMacMessage, parseHardwareAddr } from "../../shared/ip/mac-address.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import type { HostDeviceConfig } from "./config.ts";
import { auxiliaryNetDir, kernelPathNetDir, netdevNamesIn, pciNetDir, type Sysfs } from "./sysfs.ts";

function firstLinkIn(nl: Handle, netDir: string): Link {
  const names = netdevNamesIn(netDir);
  return nl.linkByName(names[0]!);
}

/** The host link selected by `conf` (precedence device > hwaddr > kernelpath > pciBusID > auxiliary). */
export function findHostDevice(nl: Handle, conf: HostDeviceConfig, sysfs: Sysfs): Link {
  if (conf.device !== "") return nl.linkByName(conf.device);
  if (conf.hwaddr !== "") {
    const want = parseHardwareAddr(conf.hwaddr);
    if (want === undefined) {
      throw new InternalError(`failed to parse MAC address ${JSON.stringify(conf.hwaddr)}: ${invalidMacMessage(conf.hwaddr)}`);
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
