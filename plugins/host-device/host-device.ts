/**
 * host-device: moves an existing host network device into the container and back (upstream
 * plugins/main/host-device/host-device.go at HEAD).
 *
 * ADD: select the host link (`device` > `hwaddr` > `kernelpath` > `pciBusID` > auxiliary device from
 * `runtimeConfig.deviceID`), refusing unsafe ones (safety.ts); a PCI function bound to a userspace
 * (DPDK) driver stays in the host and only IPAM runs. Otherwise the link goes through a temporary
 * namespace where it is renamed to CNI_IFNAME with its host name kept in the link alias, then into
 * the container, UP (move.ts). With IPAM the addresses and routes are configured on it. A failure
 * rolls back through the DEL steps it reached (the device goes back, UP again if it was).
 * CHECK: IPAM CHECK, then the prevResult's interface (name, MAC), addresses and routes.
 * DEL: IPAM DEL, then the device goes back to the host under its alias name (left DOWN) — both
 * attempted, failures reported together. STATUS and GC delegate to IPAM.
 *
 * Deliberate differences from upstream: DIFFERENCES.md.
 *
 * Limitation: sysfs does not follow network namespaces; `/sys` is read only to turn a kernel path,
 * PCI address or auxiliary device into a netdev name, which is then looked up over netlink.
 */
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { t } from "../../shared/cni/decode.ts";
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { delegateToIpam, ipamStep, IPAM_STEP } from "../../shared/cni/ipam-delegation.ts";
import { loadNetConf, netConfFields } from "../../shared/cni/netconf.ts";
import type { CmdArgs, Interface, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { annotate } from "../../shared/error/annotate.ts";
import { checkContainerLink, requirePrevResult } from "../../shared/iface/check.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { containerInterface, refuseL2ForOldVersions } from "../../shared/iface/container-link.ts";
import { v11InterfaceFields } from "../../shared/iface/interface-fields.ts";
import { IFF_UP } from "../../shared/netlink/constants/if-link.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import { NetNS } from "../../shared/netns/netns.ts";
import { teardown, Undo, type TeardownStep } from "../../shared/undo/teardown.ts";
import { loadHostDeviceConfig, type HostDeviceConfig } from "./config.ts";
import { moveLinkIn, moveLinkOut } from "./move.ts";
import { assertMovable } from "./safety.ts";
import { findHostDevice } from "./select.ts";
import { HOST_SYSFS, netdevPciAddress, type Sysfs } from "./sysfs.ts";

/** Where the plugin runs: the sysfs it reads (a fake tree in tests). */
export interface HostDeviceEnvironment {
  sysfs: Sysfs;
}

/** What ADD moved, for its rollback: the device goes back to the host, UP again if it was. */
interface Moved {
  containerNs: NetNS;
  hostWasUp: boolean;
}

/**
 * Moves the selected host device into the container; `pciID` is its PCI address, read from sysfs
 * while the device is still in the host (sysfs shows the host's devices).
 */
async function attach(
  conf: HostDeviceConfig,
  args: CmdArgs,
  containerNs: NetNS,
  sysfs: Sysfs,
): Promise<{ link: Link; hostWasUp: boolean; pciID: string | undefined }> {
  using hostNs = NetNS.current();
  using hostNl = Handle.open(hostNs);
  const hostDev = annotate("failed to find host device", () => findHostDevice(hostNl, conf, sysfs));
  assertMovable(hostNl, hostDev, conf.allowUnsafeDevice);
  const pciID = netdevPciAddress(sysfs, hostDev.name);
  using containerNl = Handle.open(containerNs);
  try {
    const link = await moveLinkIn({ hostNl, hostNs, containerNl, containerNs, hostDev, ifName: args.ifName, warn: args.stderr });
    return { link, hostWasUp: (hostDev.flags & IFF_UP) !== 0, pciID };
  } catch (err) {
    // Upstream's text has no separator here: "failed to move link <cause>".
    throw new InternalError(`failed to move link ${messageOf(err)}`, { cause: err });
  }
}

/** Moves CNI_IFNAME from `containerNs` back to the host (UP again when `upAgain`). */
async function moveBack(args: CmdArgs, containerNs: NetNS, upAgain: boolean): Promise<void> {
  using hostNs = NetNS.current();
  using containerNl = Handle.open(containerNs);
  const outcome = await moveLinkOut({ hostNs, containerNl, containerNs, ifName: args.ifName, warn: args.stderr });
  if (outcome.status === "not-ours") {
    args.stderr(`host-device: ${JSON.stringify(args.ifName)} in the container has no alias (not moved in by host-device); left in place\n`);
  }
  if (outcome.status === "moved" && upAgain) {
    using hostNl = Handle.open(hostNs);
    hostNl.linkSetUp(hostNl.linkByName(outcome.hostName).index);
  }
}

/** The device back to the host: the one ADD `moved` (rollback), else CNI_IFNAME in CNI_NETNS (DEL). */
async function returnDevice(args: CmdArgs, moved?: Moved): Promise<void> {
  if (moved !== undefined) return moveBack(args, moved.containerNs, moved.hostWasUp);
  const ns = openNetnsForDel(args.netns);
  if (ns === undefined) return;
  using owned = ns;
  await moveBack(args, owned, false);
}

const DEVICE_STEP = "device";

/** What host-device undoes, in DEL's order: the IPAM lease, then the device back to the host. */
function teardownSteps(conf: HostDeviceConfig, args: CmdArgs, moved?: Moved): TeardownStep[] {
  return [ipamStep(conf.ipamType, args), { name: DEVICE_STEP, run: () => (conf.dpdkMode ? undefined : returnDevice(args, moved)) }];
}

function makeAdd(env: HostDeviceEnvironment) {
  return async function add(args: CmdArgs): Promise<Result> {
    const conf = loadHostDeviceConfig(args, { sysfs: env.sysfs });
    using containerNs = openContainerNetns(args.netns);
    // A result without addresses cannot be printed in the 0.1.0/0.2.0 shape: say so before moving
    // anything (upstream moves the device first and then fails while printing).
    refuseL2ForOldVersions(conf.ipamType !== "", args.cniVersion);

    const moved: Moved = { containerNs, hostWasUp: false };
    const undo = new Undo(teardownSteps(conf, args, moved), args.stderr);
    try {
      const interfaces: Interface[] = [];
      if (!conf.dpdkMode) {
        const attached = await attach(conf, args, containerNs, env.sysfs);
        moved.hostWasUp = attached.hostWasUp;
        undo.reached(DEVICE_STEP);
        interfaces.push({ ...containerInterface(attached.link, args.netns), ...v11InterfaceFields(args.cniVersion, { pciID: attached.pciID }) });
      }
      // A DPDK device has no interface entry (upstream prints an empty result).
      if (conf.ipamType === "") return interfaces.length > 0 ? { interfaces } : {};

      const result = await args.delegate.add(conf.ipamType);
      undo.reached(IPAM_STEP);
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
        configureIface({ nl, ns: containerNs, ifName: args.ifName, result, warn: args.stderr });
      }
      if (conf.dns !== undefined) result.dns = conf.dns;
      else delete result.dns;
      return result;
    } catch (err) {
      return await undo.rollback(err);
    }
  };
}

function makeDel(env: HostDeviceEnvironment) {
  return async function del(args: CmdArgs): Promise<void> {
    await teardown(teardownSteps(loadHostDeviceConfig(args, { sysfs: env.sysfs, forDel: true }), args));
  };
}

function makeCheck(env: HostDeviceEnvironment) {
  return async function check(args: CmdArgs): Promise<void> {
    const conf = loadHostDeviceConfig(args, { sysfs: env.sysfs });
    using containerNs = openContainerNetns(args.netns);
    if (conf.dpdkMode) {
      // The device stays in the host: IPAM and the prevResult are all there is to check.
      if (conf.ipamType !== "") await args.delegate.run(conf.ipamType, "CHECK");
      requirePrevResult(args);
      return;
    }
    using nl = Handle.open(containerNs);
    await checkContainerLink(args, nl, { ipamType: conf.ipamType });
  };
}

/** The `ipam.type` of the base config (as upstream's STATUS: no selector or sysfs checks). */
function baseIpamType(args: CmdArgs): string {
  return loadNetConf(t.object("NetConf", netConfFields), args).ipam?.type ?? "";
}

/** STATUS: IPAM's (the device is looked for only by ADD). */
async function status(args: CmdArgs): Promise<void> {
  await delegateToIpam(baseIpamType(args), args, "STATUS");
}

/** GC: IPAM's; host-device keeps no state of its own. */
async function gc(args: CmdArgs): Promise<void> {
  await delegateToIpam(baseIpamType(args), args, "GC");
}

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
