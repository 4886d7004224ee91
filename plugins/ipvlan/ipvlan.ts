/**
 * ipvlan: gives the container an ipvlan link on a host interface (upstream
 * plugins/main/ipvlan/ipvlan.go at HEAD, upstream-matrix §2.4).
 *
 * ADD: resolve the master (configured; when chained, the prevResult's single interface; else the
 * default-route interface — in the container's netns with `linkInContainer`), create the ipvlan
 * (mode l2/l3/l3s, MTU) with a random temporary name in the container netns and rename it to
 * CNI_IFNAME. Addresses come from the prevResult when `ipam.type` is empty and it has IPs, else from
 * IPAM ADD. arp_notify/ndisc_notify, ConfigureIface; `dns` from the config.
 * CHECK: IPAM CHECK (if set), prevResult interface in this sandbox, master present, link is an
 * ipvlan in the configured mode with the recorded MAC, addresses, routes.
 * DEL: IPAM DEL (if set), delete the link if the netns is still there. STATUS: IPAM STATUS if set.
 *
 * Deliberate differences from upstream:
 * - DEL only parses the config: it needs neither the master nor a default route (upstream looks the
 *   default route up and fails with `no default route interface found` when there is none);
 * - CHECK without a configured master checks the default-route master (not chained) or skips the
 *   master check (chained) instead of failing with `failed to lookup master ""`;
 * - an empty IPAM type without usable prevResult IPs, a negative MTU or one above the master's is
 *   refused before the link is created; any later failure deletes the link and releases the lease
 *   (upstream leaves the link behind);
 * - config value errors are code 7 (upstream 999).
 */
import { delegate, delegateAdd } from "../../shared/cni/invoke.ts";
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InternalError, InvalidConfigError, messageOf } from "../../shared/cni/errors.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { findResultInterface, validateExpectedInterfaceIPs, validateExpectedRoutes } from "../../shared/iface/check.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { containerInterface, deleteLinkQuietly, delIpamThenContainerLink, enableNeighbourNotify, renameContainerLink } from "../../shared/iface/container-link.ts";
import { defaultRouteInterface } from "../../shared/iface/default-route.ts";
import { randomVethName } from "../../shared/iface/link-names.ts";
import { IPVLAN_MODE_L2, IPVLAN_MODE_L3, IPVLAN_MODE_L3S } from "../../shared/netlink/constants/if-link.ts";
import { Handle, type Link } from "../../shared/netlink/index.ts";
import { ipvlanMasterName, loadIpvlanConf, lookupIpvlanMaster, parseIpvlanConf } from "./config.ts";

const MODE_VALUES = { l2: IPVLAN_MODE_L2, l3: IPVLAN_MODE_L3, l3s: IPVLAN_MODE_L3S } as const;

function modeName(value: number | undefined): string {
  for (const [name, v] of Object.entries(MODE_VALUES)) if (v === value) return name;
  return `unknown(${value ?? "none"})`;
}

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadIpvlanConf(args);
  const prevIps = conf.ipamType === "" ? (conf.prevResult?.ips ?? []) : [];
  const chained = prevIps.length > 0;
  if (!chained && conf.ipamType === "") throw new InvalidConfigError("no plugin name provided");

  using ns = openContainerNetns(args.netns);
  using containerNl = Handle.open(ns);
  using hostNl = Handle.open();
  const masterNl = conf.linkInContainer ? containerNl : hostNl;
  const master = lookupIpvlanMaster(ipvlanMasterName(conf, masterNl), conf.mtu, masterNl);

  const tmpName = randomVethName();
  try {
    masterNl.linkAddIpvlan({
      name: tmpName,
      parentIndex: master.index,
      mode: conf.mode,
      ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
      ...(conf.linkInContainer ? {} : { netnsFd: ns.fd }),
    });
  } catch (err) {
    throw new InternalError(`failed to create ipvlan: ${messageOf(err)}`, { cause: err });
  }
  const link = renameContainerLink(containerNl, tmpName, args.ifName, "ipvlan");

  let result: Result;
  try {
    if (chained) {
      result = { ips: prevIps.map((ip) => ({ ...ip })), ...(conf.prevResult?.routes ? { routes: conf.prevResult.routes } : {}) };
    } else {
      result = await delegateAdd(conf.ipamType, args);
    }
  } catch (err) {
    deleteLinkQuietly(containerNl, link.index);
    throw err;
  }
  try {
    const ips = result.ips ?? [];
    if (ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
    const out: Result = {
      interfaces: [containerInterface(link, args.netns)],
      ips: ips.map((ip) => ({ ...ip, interface: 0 })),
      ...(result.routes ? { routes: result.routes } : {}),
    };
    enableNeighbourNotify(ns, args.ifName, { ndisc: true });
    configureIface({ nl: containerNl, ns, ifName: args.ifName, result: out });
    if (conf.dns !== undefined) out.dns = conf.dns;
    return out;
  } catch (err) {
    deleteLinkQuietly(containerNl, link.index);
    if (!chained) {
      try {
        await delegate(conf.ipamType, args, "DEL");
      } catch {
        // best effort
      }
    }
    throw err;
  }
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadIpvlanConf(args);
  using ns = openContainerNetns(args.netns);
  if (conf.ipamType !== "") await delegate(conf.ipamType, args, "CHECK");
  const prev = conf.prevResult;
  if (prev === undefined) throw new InternalError("Required prevResult missing");
  const found = findResultInterface(prev, args.ifName, args.netns);
  if (found === undefined) throw new InternalError(`Sandbox in prevResult  doesn't match configured netns: ${args.netns}`);

  using containerNl = Handle.open(ns);
  using hostNl = Handle.open();
  const masterNl = conf.linkInContainer ? containerNl : hostNl;
  if (conf.master !== "") lookupIpvlanMaster(conf.master, 0, masterNl);
  else if (conf.ipamType !== "") lookupIpvlanMaster(defaultRouteInterface(masterNl), 0, masterNl);

  const iface = found.iface;
  if (iface.name === "") throw new InternalError(`Container interface name missing in prevResult: ${iface.name}`);
  let link: Link;
  try {
    link = containerNl.linkByName(iface.name);
  } catch (err) {
    throw new InternalError(`Container Interface name in prevResult: ${iface.name} not found`, { cause: err });
  }
  if (link.kind !== "ipvlan") throw new InternalError(`Error: Container interface ${link.name} not of type ipvlan`);
  if (link.ipvlanMode !== MODE_VALUES[conf.mode]) {
    throw new InternalError(`Container IPVlan mode ${modeName(link.ipvlanMode)} does not match expected value: ${conf.mode}`);
  }
  if (iface.mac !== undefined && iface.mac !== "" && iface.mac.toLowerCase() !== (link.mac ?? "")) {
    throw new InternalError(`Interface ${iface.name} Mac ${iface.mac} doesn't match container Mac: ${link.mac ?? ""}`);
  }
  validateExpectedInterfaceIPs(containerNl, args.ifName, prev.ips ?? []);
  validateExpectedRoutes(containerNl, prev.routes ?? []);
}

async function del(args: CmdArgs): Promise<void> {
  const { ipamType } = parseIpvlanConf(args);
  await delIpamThenContainerLink(args, ipamType);
}

async function status(args: CmdArgs): Promise<void> {
  const { ipamType } = parseIpvlanConf(args);
  if (ipamType !== "") await delegate(ipamType, args, "STATUS");
}

export const ipvlanPlugin: PluginSpec = {
  name: "ipvlan",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status,
};
