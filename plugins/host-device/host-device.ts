/**
 * host-device: moves an existing host network device into the container and back (upstream
 * plugins/main/host-device/host-device.go at HEAD, upstream-matrix §2.7).
 *
 * ADD: select the host link (`device` > `hwaddr` > `kernelpath` > `pciBusID` > auxiliary device from
 * `runtimeConfig.deviceID`); a PCI function bound to a userspace (DPDK) driver stays in the host and
 * only IPAM runs. Otherwise the link goes through a temporary namespace where it is renamed to
 * CNI_IFNAME with its host name kept in the link alias, then into the container, UP (move.ts). With
 * IPAM the addresses and routes are configured on it. CHECK: IPAM CHECK, then the prevResult's
 * interface (name, MAC), addresses and routes. DEL: IPAM DEL, then the device goes back to the host
 * under its alias name (left DOWN). STATUS delegates to IPAM; GC has nothing to do.
 *
 * Deliberate differences from upstream (Go 1.1.1 / HEAD):
 * - refuses to move `lo` (always) and, unless `"allowUnsafeDevice": true`, a link carrying a
 *   default route or the master of other links (user-pain §2.4); code 7;
 * - DEL is idempotent: no CNI_IFNAME in the container (DEL twice, never added) succeeds, and so does
 *   a missing netns or an empty CNI_NETNS — upstream fails on the first two and skips IPAM DEL on the
 *   last (leaking the address);
 * - DEL leaves a CNI_IFNAME without an alias (not moved in by host-device, e.g. the container's own
 *   interface after a failed ADD) where it is and succeeds, with a note on stderr; upstream fails;
 * - DEL tolerates a runtime deviceID / PCI function that has disappeared and a config without a
 *   selector (it only needs CNI_IFNAME and the alias); upstream fails, so the pod could never go;
 * - a failed IPAM ADD or address configuration moves the device back to the host (upstream leaves
 *   it in the container);
 * - without IPAM, a 0.1.0/0.2.0 config fails before anything is moved (upstream moves the device,
 *   then fails to print the address-less result, leaving it in the container);
 * - a DPDK result with IPAM carries no `interface` index (upstream points it at a missing entry 0);
 * - bus IDs containing `/` and kernel paths that `..` takes out of /sys/devices/ are refused;
 * - a missing or non-netns CNI_NETNS on ADD/CHECK is code 8, a config without selector code 7
 *   (upstream 999 for both);
 * - STATUS and GC exist for 1.1.0 configs (Go 1.1.1 has neither; HEAD has STATUS).
 *
 * Limitation: sysfs does not follow network namespaces; `/sys` is read only to turn a kernel path,
 * PCI address or auxiliary device into a netdev name, which is then looked up over netlink.
 */
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { t } from "../../shared/cni/decode.ts";
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { annotateError } from "../../shared/error/annotate.ts";
import { delegate, delegateAdd } from "../../shared/cni/invoke.ts";
import { loadNetConf, netConfFields, prevResultFrom } from "../../shared/cni/netconf.ts";
import { writeAllSync } from "../../shared/cni/stdio.ts";
import type { CmdArgs, Interface, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS, versionGte } from "../../shared/cni/version.ts";
import { findResultInterface, validateExpectedInterfaceIPs, validateExpectedRoutes, validateLinkKind } from "../../shared/iface/check.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { Handle, type Link } from "../../shared/netlink/index.ts";
import { IFF_UP } from "../../shared/netlink/constants/if-link.ts";
import { NetNS } from "../../shared/netns/index.ts";
import { loadHostDeviceConfig, type HostDeviceConfig } from "./config.ts";
import { moveLinkIn, moveLinkOut } from "./move.ts";
import { assertMovable } from "./safety.ts";
import { findHostDevice } from "./select.ts";
import { HOST_SYSFS, type Sysfs } from "./sysfs.ts";

/** Where the plugin runs: the sysfs it reads (a fake tree in tests). */
export interface HostDeviceEnvironment {
  sysfs: Sysfs;
}

function interfaceOf(link: Link, sandbox: string): Interface {
  return { name: link.name, ...(link.mac !== undefined ? { mac: link.mac } : {}), sandbox };
}

/** What ADD moved: the container link, and how to put the host back if a later step fails. */
interface Attached {
  link: Link;
  hostName: string;
  hostWasUp: boolean;
}

/** Moves the selected host device into the container. */
function attach(conf: HostDeviceConfig, args: CmdArgs, containerNs: NetNS, sysfs: Sysfs): Attached {
  using hostNs = NetNS.current();
  using hostNl = Handle.open(hostNs);
  let hostDev: Link;
  try {
    hostDev = findHostDevice(hostNl, conf, sysfs);
  } catch (err) {
    throw annotateError("failed to find host device", err);
  }
  assertMovable(hostNl, hostDev, conf.allowUnsafeDevice);
  using containerNl = Handle.open(containerNs);
  try {
    const link = moveLinkIn({ hostNl, hostNs, containerNl, containerNs, hostDev, ifName: args.ifName });
    return { link, hostName: hostDev.name, hostWasUp: (hostDev.flags & IFF_UP) !== 0 };
  } catch (err) {
    // Upstream's text has no separator here: "failed to move link <cause>".
    throw new InternalError(`failed to move link ${messageOf(err)}`, { cause: err });
  }
}

/** Returns CNI_IFNAME to the host; errors only when a device of ours could not be returned. */
function detach(args: CmdArgs, containerNs: NetNS): void {
  using hostNs = NetNS.current();
  using containerNl = Handle.open(containerNs);
  const outcome = moveLinkOut({ hostNs, containerNl, containerNs, ifName: args.ifName });
  if (outcome.status === "not-ours") {
    writeAllSync(2, `host-device: ${JSON.stringify(args.ifName)} in the container has no alias (not moved in by host-device); left in place\n`);
  }
}

/** Best-effort rollback of a failed ADD: the device back in the host, UP again if it was. */
function detachQuietly(args: CmdArgs, containerNs: NetNS, attached: Attached | undefined): void {
  if (attached === undefined) return;
  try {
    detach(args, containerNs);
    if (attached.hostWasUp) {
      using hostNl = Handle.open();
      hostNl.linkSetUp(hostNl.linkByName(attached.hostName).index);
    }
  } catch {
    // the runtime's DEL retries
  }
}

async function ipamDelQuietly(conf: HostDeviceConfig, args: CmdArgs): Promise<void> {
  try {
    await delegate(conf.ipamType, args, "DEL");
  } catch {
    // best effort, as upstream
  }
}

function makeAdd(env: HostDeviceEnvironment) {
  return async function add(args: CmdArgs): Promise<Result> {
    const conf = loadHostDeviceConfig(args, env.sysfs);
    using containerNs = openContainerNetns(args.netns);
    // A result without addresses cannot be printed in the 0.1.0/0.2.0 shape: say so before moving
    // anything (upstream moves the device first and then fails while printing).
    if (conf.ipamType === "" && !versionGte(args.cniVersion, "0.3.0")) throw new InternalError("cannot convert: no valid IP addresses");

    const attached = conf.dpdkMode ? undefined : attach(conf, args, containerNs, env.sysfs);
    const interfaces: Interface[] = attached === undefined ? [] : [interfaceOf(attached.link, args.netns)];
    // A DPDK device has no interface entry (upstream prints an empty result).
    if (conf.ipamType === "") return interfaces.length > 0 ? { interfaces } : {};

    let result: Result;
    try {
      result = await delegateAdd(conf.ipamType, args);
    } catch (err) {
      detachQuietly(args, containerNs, attached);
      throw err;
    }
    try {
      const ips = result.ips ?? [];
      if (ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
      // All addresses belong to the moved device (index 0); a DPDK device has no entry to point at.
      for (const ipc of ips) {
        if (conf.dpdkMode) delete ipc.interface;
        else ipc.interface = 0;
      }
      if (interfaces.length > 0) result.interfaces = interfaces;
      else delete result.interfaces;
      if (!conf.dpdkMode) {
        using nl = Handle.open(containerNs);
        configureIface({ nl, ns: containerNs, ifName: args.ifName, result });
      }
    } catch (err) {
      detachQuietly(args, containerNs, attached);
      await ipamDelQuietly(conf, args);
      throw err;
    }
    if (conf.dns !== undefined) result.dns = conf.dns;
    else delete result.dns;
    return result;
  };
}

function makeDel(env: HostDeviceEnvironment) {
  return async function del(args: CmdArgs): Promise<void> {
    const conf = loadHostDeviceConfig(args, env.sysfs, { lenient: true });
    if (conf.ipamType !== "") await delegate(conf.ipamType, args, "DEL");
    if (conf.dpdkMode) return;
    const ns = openNetnsForDel(args.netns);
    if (ns === undefined) return;
    using containerNs = ns;
    detach(args, containerNs);
  };
}

function makeCheck(env: HostDeviceEnvironment) {
  return async function check(args: CmdArgs): Promise<void> {
    const conf = loadHostDeviceConfig(args, env.sysfs);
    using containerNs = openContainerNetns(args.netns);
    if (conf.ipamType !== "") await delegate(conf.ipamType, args, "CHECK");

    const prev = prevResultFrom(args);
    if (prev === undefined) throw new InternalError("Required prevResult missing");
    if (conf.dpdkMode) return;

    const found = findResultInterface(prev, args.ifName, args.netns);
    const sandbox = found?.iface.sandbox ?? "";
    if (found === undefined || sandbox !== args.netns) {
      throw new InternalError(`Sandbox in prevResult ${sandbox} doesn't match configured netns: ${args.netns}`);
    }
    const iface = found.iface;
    using nl = Handle.open(containerNs);
    if (iface.name === "") throw new InternalError(`Container interface name missing in prevResult: ${iface.name}`);
    validateLinkKind(nl, iface.name, iface.mac !== undefined ? { mac: iface.mac } : {});
    validateExpectedInterfaceIPs(nl, args.ifName, prev.ips ?? []);
    validateExpectedRoutes(nl, prev.routes ?? []);
  };
}

/** STATUS reads only the base config (as upstream: no selector or sysfs checks) and asks IPAM. */
async function status(args: CmdArgs): Promise<void> {
  const base = loadNetConf(t.object("NetConf", netConfFields), args);
  const type = base.ipam?.type ?? "";
  if (type !== "") await delegate(type, args, "STATUS");
}

/** GC: host-device keeps no state of its own. */
function gc(): void {}

/** The plugin with its sysfs view injectable (tests pass a fake tree). */
export function makeHostDevicePlugin(env: HostDeviceEnvironment): PluginSpec {
  return {
    name: "host-device",
    versions: ALL_VERSIONS,
    add: makeAdd(env),
    check: makeCheck(env),
    del: makeDel(env),
    status,
    gc,
  };
}

export const hostDevicePlugin: PluginSpec = makeHostDevicePlugin({ sysfs: HOST_SYSFS });
