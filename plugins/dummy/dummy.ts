/**
 * dummy: gives the container a dummy link carrying IPAM addresses (upstream
 * plugins/main/dummy/dummy.go at HEAD, upstream-matrix §2.16). Not in the Debian 1.1.1 binaries.
 *
 * ADD: IPAM is required (`dummy interface requires an IPAM configuration`); create the dummy in the
 * container netns (random temporary name, renamed to CNI_IFNAME), IPAM ADD, ConfigureIface. The
 * result's `dns` is IPAM's (the config's `dns` is not used, as upstream). Failures delete the link
 * and release the lease.
 * CHECK: IPAM required, IPAM CHECK, prevResult interface in this sandbox, link is a dummy with the
 * recorded MAC and UP, addresses (routes are not checked, as upstream).
 * DEL: IPAM DEL, delete the link if the netns is still there. STATUS: IPAM STATUS.
 *
 * Deliberate differences from upstream:
 * - the link is created under a temporary name and renamed (upstream creates it under CNI_IFNAME
 *   directly); observable only as a clearer error when CNI_IFNAME already exists in the container;
 * - DEL with an empty IPAM type skips IPAM instead of failing with `no plugin name provided`.
 */
import { delegate, delegateAdd } from "../../shared/cni/invoke.ts";
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InternalError, InvalidConfigError, messageOf } from "../../shared/cni/errors.ts";
import { annotateError } from "../../shared/error/annotate.ts";
import { ipamTypeOf, loadNetConf, netConfFields, prevResultFrom } from "../../shared/cni/netconf.ts";
import { t } from "../../shared/cni/decode.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { findResultInterface, validateExpectedInterfaceIPs } from "../../shared/iface/check.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { containerInterface, deleteLinkQuietly, delIpamThenContainerLink, renameContainerLink } from "../../shared/iface/container-link.ts";
import { randomVethName } from "../../shared/iface/link-names.ts";
import { IFF_UP } from "../../shared/netlink/constants/if-link.ts";
import { Handle, type Link } from "../../shared/netlink/index.ts";

const dummySchema = t.object("NetConf", { ...netConfFields });

/** Parses the config (`failed to load netconf: …`) and returns the IPAM type. */
function loadDummyConf(args: CmdArgs): { ipamType: string } {
  loadNetConf(dummySchema, args);
  return { ipamType: ipamTypeOf(args) };
}

function requireIpam(ipamType: string): void {
  if (ipamType === "") throw new InvalidConfigError("dummy interface requires an IPAM configuration");
}

async function add(args: CmdArgs): Promise<Result> {
  const { ipamType } = loadDummyConf(args);
  requireIpam(ipamType);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  const tmpName = randomVethName();
  try {
    nl.linkAddDummy({ name: tmpName });
  } catch (err) {
    throw new InternalError(`failed to create dummy: ${messageOf(err)}`, { cause: err });
  }
  const link = renameContainerLink(nl, tmpName, args.ifName, "dummy");

  let ipam: Result;
  try {
    ipam = await delegateAdd(ipamType, args);
  } catch (err) {
    deleteLinkQuietly(nl, link.index);
    throw err;
  }
  try {
    const ips = ipam.ips ?? [];
    if (ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
    const result: Result = {
      ...ipam,
      interfaces: [containerInterface(link, args.netns)],
      ips: ips.map((ip) => ({ ...ip, interface: 0 })),
    };
    configureIface({ nl, ns, ifName: args.ifName, result });
    return result;
  } catch (err) {
    deleteLinkQuietly(nl, link.index);
    try {
      await delegate(ipamType, args, "DEL");
    } catch {
      // best effort
    }
    throw err;
  }
}

async function check(args: CmdArgs): Promise<void> {
  const { ipamType } = loadDummyConf(args);
  requireIpam(ipamType);
  using ns = openContainerNetns(args.netns);
  await delegate(ipamType, args, "CHECK");
  let prev: Result | undefined;
  try {
    prev = prevResultFrom(args);
  } catch (err) {
    throw annotateError("failed to parse prevResult", err);
  }
  if (prev === undefined) throw new InternalError("dummy: Required prevResult missing");
  const found = findResultInterface(prev, args.ifName, args.netns);
  if (found === undefined) throw new InternalError(`Sandbox in prevResult  doesn't match configured netns: ${args.netns}`);
  const iface = found.iface;
  using nl = Handle.open(ns);
  if (iface.name === "") throw new InternalError(`Container interface name missing in prevResult: ${iface.name}`);
  let link: Link;
  try {
    link = nl.linkByName(iface.name);
  } catch (err) {
    throw new InternalError(`Container Interface name in prevResult: ${iface.name} not found`, { cause: err });
  }
  if (link.kind !== "dummy") throw new InternalError(`Error: Container interface ${link.name} not of type dummy`);
  if (iface.mac !== undefined && iface.mac !== "" && iface.mac.toLowerCase() !== (link.mac ?? "")) {
    throw new InternalError(`Interface ${iface.name} Mac ${iface.mac} doesn't match container Mac: ${link.mac ?? ""}`);
  }
  if ((link.flags & IFF_UP) === 0) throw new InternalError(`Interface ${iface.name} is down`);
  validateExpectedInterfaceIPs(nl, args.ifName, prev.ips ?? []);
}

async function del(args: CmdArgs): Promise<void> {
  const { ipamType } = loadDummyConf(args);
  await delIpamThenContainerLink(args, ipamType);
}

async function status(args: CmdArgs): Promise<void> {
  const { ipamType } = loadDummyConf(args);
  await delegate(ipamType, args, "STATUS");
}

export const dummyPlugin: PluginSpec = {
  name: "dummy",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status,
};
