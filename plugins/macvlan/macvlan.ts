/**
 * macvlan: gives the container a macvlan link on a host interface (upstream
 * plugins/main/macvlan/macvlan.go at HEAD, upstream-matrix §2.3).
 *
 * ADD: validate the config, resolve the master (configured, else the default-route interface; in the
 * container's netns when `linkInContainer`), check the MTU against it, create the macvlan with a
 * random temporary name directly in the container netns (mode, MTU, MAC, bcqueuelen), rename it to
 * CNI_IFNAME there. L3 (ipam.type set): IPAM ADD, arp_notify/ndisc_notify, ConfigureIface; L2: up.
 * CHECK: IPAM CHECK (L3), prevResult interface in this sandbox, master present, link is a macvlan
 * in the configured mode with the recorded MAC, addresses and routes.
 * DEL: plain config parse (the master may be gone), IPAM DEL (L3), delete the link if the netns is
 * still there. STATUS: IPAM STATUS when L3. GC: nothing to do.
 *
 * Deliberate differences from upstream:
 * - config value errors (mode, MAC, MTU) are code 7 instead of 999, and are reported before anything
 *   is created; a master that does not exist reads `failed to lookup master "x": Link not found`;
 * - an L2 ADD (no IPAM) with cniVersion 0.1.0/0.2.0 is refused before the link is created (such a
 *   result cannot be printed; upstream fails only after creating the link and leaves it behind);
 * - any failure after the link was created deletes it and releases the IPAM lease (upstream skips
 *   this on some paths because of a shadowed error variable).
 */
import { delegate, delegateAdd } from "../../shared/cni/invoke.ts";
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { prevResultFrom } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { delIpamThenContainerLink, refuseL2ForOldVersions } from "../../shared/iface/container-link.ts";
import { findResultInterface, validateExpectedInterfaceIPs, validateExpectedRoutes } from "../../shared/iface/check.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { containerInterface, deleteLinkQuietly, enableNeighbourNotify, renameContainerLink } from "../../shared/iface/container-link.ts";
import { randomVethName } from "../../shared/iface/link-names.ts";
import { Handle, type Link } from "../../shared/netlink/index.ts";
import { MACVLAN_MODE_BY_NAME } from "../../shared/netlink/link-add.ts";
import { NetNS } from "../../shared/netns/index.ts";
import { loadMacvlanConf, macvlanModeName, parseMacvlanConf, resolveMaster, type MacvlanConf } from "./config.ts";

function createMacvlan(conf: MacvlanConf, master: Link, masterNl: Handle, containerNl: Handle, ns: NetNS, ifName: string): Link {
  const tmpName = randomVethName();
  try {
    masterNl.linkAddMacvlan({
      name: tmpName,
      parentIndex: master.index,
      mode: conf.mode,
      ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
      ...(conf.mac !== undefined ? { mac: conf.mac } : {}),
      ...(conf.bcQueueLen > 0 ? { bcQueueLen: conf.bcQueueLen } : {}),
      ...(conf.linkInContainer ? {} : { netnsFd: ns.fd }),
    });
  } catch (err) {
    throw new InternalError(`failed to create macvlan: ${messageOf(err)}`, { cause: err });
  }
  return renameContainerLink(containerNl, tmpName, ifName, "macvlan");
}

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadMacvlanConf(args);
  const isLayer3 = conf.ipamType !== "";
  refuseL2ForOldVersions(isLayer3, args.cniVersion);
  using ns = openContainerNetns(args.netns);
  using containerNl = Handle.open(ns);
  using hostNl = Handle.open();
  const masterNl = conf.linkInContainer ? containerNl : hostNl;
  const master = resolveMaster(conf, masterNl);

  const link = createMacvlan(conf, master, masterNl, containerNl, ns, args.ifName);
  const result: Result = { interfaces: [containerInterface(link, args.netns)] };
  try {
    if (isLayer3) {
      const ipam = await delegateAdd(conf.ipamType, args);
      try {
        const ips = ipam.ips ?? [];
        if (ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
        result.ips = ips.map((ip) => ({ ...ip, interface: 0 }));
        if (ipam.routes !== undefined) result.routes = ipam.routes;
        enableNeighbourNotify(ns, args.ifName, { ndisc: true });
        configureIface({ nl: containerNl, ns, ifName: args.ifName, result });
      } catch (err) {
        await releaseQuietly(conf.ipamType, args);
        throw err;
      }
    } else {
      try {
        containerNl.linkSetUp(link.index);
      } catch (err) {
        throw new InternalError(`failed to set ${JSON.stringify(args.ifName)} UP: ${messageOf(err)}`, { cause: err });
      }
    }
  } catch (err) {
    deleteLinkQuietly(containerNl, link.index);
    throw err;
  }
  if (conf.dns !== undefined) result.dns = conf.dns;
  return result;
}

async function releaseQuietly(ipamType: string, args: CmdArgs): Promise<void> {
  try {
    await delegate(ipamType, args, "DEL");
  } catch {
    // best effort, as upstream; the runtime's DEL retries
  }
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadMacvlanConf(args);
  using ns = openContainerNetns(args.netns);
  if (conf.ipamType !== "") await delegate(conf.ipamType, args, "CHECK");
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InternalError("required prevResult missing");
  const found = findResultInterface(prev, args.ifName, args.netns);
  if (found === undefined) throw new InternalError(`sandbox in prevResult  doesn't match configured netns: ${args.netns}`);

  using containerNl = Handle.open(ns);
  using hostNl = Handle.open();
  resolveMaster(conf, conf.linkInContainer ? containerNl : hostNl);

  const iface = found.iface;
  if (iface.name === "") throw new InternalError(`container interface name missing in prevResult: ${iface.name}`);
  let link: Link;
  try {
    link = containerNl.linkByName(iface.name);
  } catch (err) {
    throw new InternalError(`container Interface name in prevResult: ${iface.name} not found`, { cause: err });
  }
  if (link.kind !== "macvlan") throw new InternalError(`error: Container interface ${link.name} not of type macvlan`);
  if (link.macvlanMode !== MACVLAN_MODE_BY_NAME[conf.mode]) {
    throw new InternalError(
      `container macvlan mode ${macvlanModeName(link.macvlanMode, MACVLAN_MODE_BY_NAME)} does not match expected value: ${conf.mode}`,
    );
  }
  if (iface.mac !== undefined && iface.mac !== "" && iface.mac.toLowerCase() !== (link.mac ?? "")) {
    throw new InternalError(`interface ${iface.name} Mac ${iface.mac} doesn't match container Mac: ${link.mac ?? ""}`);
  }
  validateExpectedInterfaceIPs(containerNl, args.ifName, prev.ips ?? []);
  validateExpectedRoutes(containerNl, prev.routes ?? []);
}

async function del(args: CmdArgs): Promise<void> {
  const { ipamType } = parseMacvlanConf(args);
  await delIpamThenContainerLink(args, ipamType);
}

async function status(args: CmdArgs): Promise<void> {
  const { ipamType } = parseMacvlanConf(args);
  if (ipamType !== "") await delegate(ipamType, args, "STATUS");
}

export const macvlanPlugin: PluginSpec = {
  name: "macvlan",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status,
};
