/**
 * tap: gives the container a TAP device (for VMs in pods), upstream plugins/main/tap/tap.go at HEAD,
 * upstream-matrix §2.16. Not in the Debian 1.1.1 binaries.
 *
 * ADD: create a persistent TAP in the container netns through /dev/net/tun (random temporary name;
 * `multiQueue`, `owner`, `group`; vnet_hdr when both owner and group are set, as upstream's netlink
 * path), set MTU and MAC, rename to CNI_IFNAME, enslave to `bridge` (a bridge inside the container)
 * if set, bring it up. L3 (ipam.type set): IPAM ADD, arp_notify, ConfigureIface. `dns` from config.
 * CHECK: IPAM CHECK (L3), prevResult interface in this sandbox, the link exists, addresses, routes.
 * DEL: IPAM DEL (L3), delete the link if the netns is still there. STATUS: IPAM STATUS when L3.
 *
 * Deliberate differences from upstream:
 * - no `ip tuntap` subprocess: every tap is created with ioctls (upstream shells out to `ip` when
 *   owner or group is missing, so those taps have vnet_hdr off — kept — and no owner);
 * - `selinuxContext` is refused (code 2): labelling the device needs the exec label of a helper
 *   process, which this implementation does not spawn;
 * - an L2 ADD with cniVersion 0.1.0/0.2.0 is refused before the device is created;
 * - CHECK also verifies that the tap still exists; any ADD failure deletes the device and releases
 *   the lease (upstream's rename-failure path deletes nothing: it only acts when the lookup fails).
 */
import { delegate, delegateAdd } from "../../shared/cni/invoke.ts";
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InternalError, messageOf, UnsupportedFieldError } from "../../shared/cni/errors.ts";
import { prevResultFrom } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { findResultInterface, validateExpectedInterfaceIPs, validateExpectedRoutes } from "../../shared/iface/check.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { containerInterface, deleteLinkQuietly, delIpamThenContainerLink, enableNeighbourNotify, refuseL2ForOldVersions, renameContainerLink } from "../../shared/iface/container-link.ts";
import { randomVethName } from "../../shared/iface/link-names.ts";
import { Handle, type Link } from "../../shared/netlink/index.ts";
import { tapAdd } from "../../shared/netlink/tuntap.ts";
import type { NetNS } from "../../shared/netns/index.ts";
import { loadTapConf, type TapConf } from "./config.ts";

function createTap(conf: TapConf, ns: NetNS, nl: Handle, ifName: string): Link {
  const tmpName = randomVethName();
  try {
    tapAdd(ns, {
      name: tmpName,
      multiQueue: conf.multiQueue,
      vnetHdr: conf.owner !== undefined && conf.group !== undefined,
      ...(conf.owner !== undefined ? { owner: conf.owner } : {}),
      ...(conf.group !== undefined ? { group: conf.group } : {}),
    });
  } catch (err) {
    throw new InternalError(`failed to create tap: ${messageOf(err)}`, { cause: err });
  }
  let link = nl.linkByName(tmpName);
  try {
    if (conf.mtu > 0) nl.linkSetMTU(link.index, conf.mtu);
    if (conf.mac !== undefined) nl.linkSetMAC(link.index, conf.mac);
  } catch (err) {
    deleteLinkQuietly(nl, link.index);
    throw new InternalError(`failed to configure tap ${JSON.stringify(tmpName)}: ${messageOf(err)}`, { cause: err });
  }
  link = renameContainerLink(nl, tmpName, ifName, "tap");
  try {
    if (conf.bridge !== "") {
      let bridge: Link;
      try {
        bridge = nl.linkByName(conf.bridge);
      } catch (err) {
        throw new InternalError(`failed to get bridge ${conf.bridge}: ${messageOf(err)}`, { cause: err });
      }
      try {
        nl.linkSetMaster(link.index, bridge.index);
      } catch (err) {
        throw new InternalError(`failed to set tap ${ifName} as a port of bridge ${conf.bridge}: ${messageOf(err)}`, { cause: err });
      }
    }
    try {
      nl.linkSetUp(link.index);
    } catch (err) {
      throw new InternalError(`failed to set tap interface up: ${messageOf(err)}`, { cause: err });
    }
    return nl.linkByIndex(link.index);
  } catch (err) {
    deleteLinkQuietly(nl, link.index);
    throw err;
  }
}

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadTapConf(args);
  if (conf.selinuxContext !== "") throw new UnsupportedFieldError("selinuxContext is not supported by this implementation of tap");
  const isLayer3 = conf.ipamType !== "";
  refuseL2ForOldVersions(isLayer3, args.cniVersion);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  const link = createTap(conf, ns, nl, args.ifName);
  const result: Result = { interfaces: [containerInterface(link, args.netns)] };
  if (isLayer3) {
    let ipam: Result;
    try {
      ipam = await delegateAdd(conf.ipamType, args);
    } catch (err) {
      deleteLinkQuietly(nl, link.index);
      throw err;
    }
    try {
      const ips = ipam.ips ?? [];
      if (ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
      result.ips = ips.map((ip) => ({ ...ip, interface: 0 }));
      if (ipam.routes !== undefined) result.routes = ipam.routes;
      enableNeighbourNotify(ns, args.ifName, { ndisc: false });
      configureIface({ nl, ns, ifName: args.ifName, result });
    } catch (err) {
      deleteLinkQuietly(nl, link.index);
      try {
        await delegate(conf.ipamType, args, "DEL");
      } catch {
        // best effort
      }
      throw err;
    }
  }
  if (conf.dns !== undefined) result.dns = conf.dns;
  return result;
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadTapConf(args);
  using ns = openContainerNetns(args.netns);
  if (conf.ipamType !== "") await delegate(conf.ipamType, args, "CHECK");
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InternalError("Required prevResult missing");
  const found = findResultInterface(prev, args.ifName, args.netns);
  if (found === undefined) throw new InternalError(`Sandbox in prevResult  doesn't match configured netns: ${args.netns}`);
  using nl = Handle.open(ns);
  let link: Link;
  try {
    link = nl.linkByName(args.ifName);
  } catch (err) {
    throw new InternalError(`Container Interface name in prevResult: ${args.ifName} not found`, { cause: err });
  }
  if (link.kind !== "tun") throw new InternalError(`Error: Container interface ${link.name} not of type tap`);
  validateExpectedInterfaceIPs(nl, args.ifName, prev.ips ?? []);
  validateExpectedRoutes(nl, prev.routes ?? []);
}

async function del(args: CmdArgs): Promise<void> {
  await delIpamThenContainerLink(args, loadTapConf(args).ipamType);
}

async function status(args: CmdArgs): Promise<void> {
  const conf = loadTapConf(args);
  if (conf.ipamType !== "") await delegate(conf.ipamType, args, "STATUS");
}

export const tapPlugin: PluginSpec = {
  name: "tap",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status,
};
