/**
 * vlan: gives the container an 802.1Q VLAN link on a host interface (upstream
 * plugins/main/vlan/vlan.go at HEAD, upstream-matrix §2.5).
 *
 * ADD: the master (required; in the container's netns with `linkInContainer`) must exist and the MTU
 * must not exceed its; create the VLAN link (id, MTU) with a random temporary name in the container
 * netns, rename it to CNI_IFNAME, IPAM ADD (required), ConfigureIface; `dns` from the config.
 * CHECK: IPAM CHECK, prevResult interface in this sandbox, master present, link is a vlan with the
 * recorded MAC, the configured VLAN id and (when configured) MTU, addresses, routes.
 * DEL: IPAM DEL, delete the link if the netns is still there. STATUS: IPAM STATUS.
 *
 * Deliberate differences from upstream:
 * - DEL only parses the config, so it succeeds when the master is gone or now has a smaller MTU
 *   (upstream DEL fails then and the lease is never released); an empty IPAM type is skipped on DEL;
 * - a missing IPAM type is refused before the link is created (`vlan interface requires an IPAM
 *   configuration`); upstream creates the link, then fails in IPAM and leaves it behind;
 * - an IPAM ADD error is passed through with its own code (upstream wraps it as 999
 *   `failed to execute IPAM delegate: …`); any failure after the link exists deletes it;
 * - the VLAN id range message says 4094 (upstream: "between 0 and 4095 inclusive" while refusing
 *   4095); CHECK names VLAN id and MTU mismatches plainly (upstream reuses tuning's texts);
 * - config value errors are code 7 (upstream 999).
 */
import { delegate, delegateAdd } from "../../shared/cni/invoke.ts";
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InternalError, InvalidConfigError, messageOf } from "../../shared/cni/errors.ts";
import { prevResultFrom } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { findResultInterface, validateExpectedInterfaceIPs, validateExpectedRoutes } from "../../shared/iface/check.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { containerInterface, deleteLinkQuietly, delIpamThenContainerLink, renameContainerLink } from "../../shared/iface/container-link.ts";
import { randomVethName } from "../../shared/iface/link-names.ts";
import { Handle, type Link } from "../../shared/netlink/index.ts";
import { loadVlanConf, lookupVlanMaster, parseVlanConf } from "./config.ts";

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadVlanConf(args);
  if (conf.ipamType === "") throw new InvalidConfigError("vlan interface requires an IPAM configuration");
  using ns = openContainerNetns(args.netns);
  using containerNl = Handle.open(ns);
  using hostNl = Handle.open();
  const masterNl = conf.linkInContainer ? containerNl : hostNl;
  const master = lookupVlanMaster(conf, masterNl);

  const tmpName = randomVethName();
  try {
    masterNl.linkAddVlan({
      name: tmpName,
      parentIndex: master.index,
      vlanId: conf.vlanId,
      ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
      ...(conf.linkInContainer ? {} : { netnsFd: ns.fd }),
    });
  } catch (err) {
    throw new InternalError(`failed to create vlan: ${messageOf(err)}`, { cause: err });
  }
  const link = renameContainerLink(containerNl, tmpName, args.ifName, "vlan");

  let ipam: Result;
  try {
    ipam = await delegateAdd(conf.ipamType, args);
  } catch (err) {
    deleteLinkQuietly(containerNl, link.index);
    throw err;
  }
  try {
    const ips = ipam.ips ?? [];
    if (ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
    const result: Result = {
      interfaces: [containerInterface(link, args.netns)],
      ips: ips.map((ip) => ({ ...ip, interface: 0 })),
      ...(ipam.routes ? { routes: ipam.routes } : {}),
    };
    configureIface({ nl: containerNl, ns, ifName: args.ifName, result });
    if (conf.dns !== undefined) result.dns = conf.dns;
    return result;
  } catch (err) {
    deleteLinkQuietly(containerNl, link.index);
    try {
      await delegate(conf.ipamType, args, "DEL");
    } catch {
      // best effort
    }
    throw err;
  }
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadVlanConf(args);
  using ns = openContainerNetns(args.netns);
  await delegate(conf.ipamType, args, "CHECK");
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InternalError("vlan: Required prevResult missing");
  const found = findResultInterface(prev, args.ifName, args.netns);
  if (found === undefined) throw new InternalError(`Sandbox in prevResult  doesn't match configured netns: ${args.netns}`);

  using containerNl = Handle.open(ns);
  using hostNl = Handle.open();
  lookupVlanMaster({ ...conf, mtu: 0 }, conf.linkInContainer ? containerNl : hostNl);

  const iface = found.iface;
  if (iface.name === "") throw new InternalError(`Container interface name missing in prevResult: ${iface.name}`);
  let link: Link;
  try {
    link = containerNl.linkByName(iface.name);
  } catch (err) {
    throw new InternalError(`Error: Container Interface name in prevResult: ${iface.name} not found`, { cause: err });
  }
  if (link.kind !== "vlan") throw new InternalError(`Error: Container interface ${link.name} not of type vlan`);
  if (iface.mac !== undefined && iface.mac !== "" && iface.mac.toLowerCase() !== (link.mac ?? "")) {
    throw new InternalError(`Interface ${iface.name} Mac ${iface.mac} doesn't match container Mac: ${link.mac ?? ""}`);
  }
  if (link.vlanId !== conf.vlanId) {
    throw new InternalError(`Error: container interface ${iface.name} has VLAN ID ${link.vlanId ?? "none"}, configured ${conf.vlanId}`);
  }
  if (conf.mtu !== 0 && conf.mtu !== link.mtu) {
    throw new InternalError(`Error: container interface ${iface.name} has MTU ${link.mtu}, configured ${conf.mtu}`);
  }
  validateExpectedInterfaceIPs(containerNl, args.ifName, prev.ips ?? []);
  validateExpectedRoutes(containerNl, prev.routes ?? []);
}

async function del(args: CmdArgs): Promise<void> {
  const { ipamType } = parseVlanConf(args);
  await delIpamThenContainerLink(args, ipamType);
}

async function status(args: CmdArgs): Promise<void> {
  const { ipamType } = parseVlanConf(args);
  await delegate(ipamType, args, "STATUS");
}

export const vlanPlugin: PluginSpec = {
  name: "vlan",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status,
};
