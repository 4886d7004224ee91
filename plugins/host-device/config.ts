/**
 * host-device configuration (upstream plugins/main/host-device NetConf + `loadConf`): the selectors
 * `device` > `hwaddr` > `kernelpath` > `pciBusID` > auxiliary device (from `runtimeConfig.deviceID`),
 * the DPDK mode recomputed from the PCI function's driver, and this implementation's
 * `allowUnsafeDevice` (see safety.ts).
 *
 * Loading for DEL (`forDel`) is lenient (beyond upstream): a deviceID or PCI function that has
 * disappeared, or a config without any selector, must not make DEL fail forever — DEL then works
 * from the container interface alone.
 */
import { t } from "../../shared/cni/decode.ts";
import { CniError, InvalidConfigError } from "../../shared/cni/errors.ts";
import { annotateError } from "../../shared/error/annotate.ts";
import { lenientForDel, loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import type { CmdArgs, DNS } from "../../shared/cni/types.ts";
import { hasDpdkDriver, resolveDeviceID, type Sysfs } from "./sysfs.ts";

const hostDeviceSchema = t.object("NetConf", {
  ...netConfFields,
  device: t.string(),
  hwaddr: t.string(),
  /** Untagged Go field: matched as `DPDKMode` case-insensitively. */
  DPDKMode: t.bool(),
  kernelpath: t.string(),
  pciBusID: t.string(),
  runtimeConfig: t.object("NetConf", { deviceID: t.string() }),
  allowUnsafeDevice: t.bool(),
});

/** The validated configuration. Exactly the selector fields upstream has, plus the safety switch. */
export interface HostDeviceConfig {
  cniVersion: string;
  ipamType: string;
  /** The config's `dns` when any field is set (upstream copies it into the result). */
  dns: DNS | undefined;
  device: string;
  hwaddr: string;
  kernelpath: string;
  /** `pciBusID`, or the runtime deviceID when it names a PCI function. */
  pciAddr: string;
  /** The runtime deviceID when it names an auxiliary-bus device. */
  auxDevice: string;
  /** True when the PCI function is bound to a userspace driver: nothing is moved, only IPAM runs. */
  dpdkMode: boolean;
  /** Allow moving the default-route interface or a master of other links (never `lo`). */
  allowUnsafeDevice: boolean;
}

export const NO_SELECTOR_MESSAGE = `specify either "device", "hwaddr", "kernelpath" or "pciBusID"`;

function dnsIfSet(d: DNS | undefined): DNS | undefined {
  if (d === undefined) return undefined;
  const set = d.nameservers !== undefined || d.search !== undefined || d.options !== undefined || (d.domain ?? "") !== "";
  return set ? d : undefined;
}

/** How host-device's config is loaded: `forDel` (see the module doc), and the sysfs to look devices up in. */
export interface HostDeviceLoadOptions extends LoadOptions {
  sysfs: Sysfs;
}

/** Decodes and validates the config against `opts.sysfs` (upstream `loadConf`). */
export function loadHostDeviceConfig(args: CmdArgs, opts: HostDeviceLoadOptions): HostDeviceConfig {
  const c = loadNetConf(hostDeviceSchema, args);
  const conf: HostDeviceConfig = {
    cniVersion: c.cniVersion ?? args.cniVersion,
    ipamType: c.ipam?.type ?? "",
    dns: dnsIfSet(c.dns as DNS | undefined),
    device: c.device ?? "",
    hwaddr: c.hwaddr ?? "",
    kernelpath: c.kernelpath ?? "",
    pciAddr: c.pciBusID ?? "",
    auxDevice: "",
    dpdkMode: c.DPDKMode ?? false,
    allowUnsafeDevice: c.allowUnsafeDevice ?? false,
  };

  const deviceID = c.runtimeConfig?.deviceID ?? "";
  if (deviceID !== "") {
    lenientForDel(opts, undefined, () => {
      const target = resolveDeviceID(opts.sysfs, deviceID);
      if (target.bus === "pci") {
        conf.pciAddr = target.id;
      } else {
        conf.pciAddr = "";
        conf.auxDevice = target.id;
      }
    });
  }

  lenientForDel(opts, undefined, () => {
    if (conf.device === "" && conf.hwaddr === "" && conf.kernelpath === "" && conf.pciAddr === "" && conf.auxDevice === "") {
      throw new InvalidConfigError(NO_SELECTOR_MESSAGE);
    }
  });

  if (conf.pciAddr !== "") {
    conf.dpdkMode = lenientForDel(opts, conf.dpdkMode, () => {
      try {
        return hasDpdkDriver(opts.sysfs, conf.pciAddr);
      } catch (err) {
        throw err instanceof CniError ? annotateError("error with host device", err) : err;
      }
    });
  }
  return conf;
}
