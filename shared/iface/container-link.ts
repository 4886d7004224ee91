/**
 * Helpers for plugins that create one link for the container from a host device (macvlan, ipvlan,
 * vlan, dummy, tap; upstream creates each with a random temporary name — "due to kernel bug ... it
 * might collide with the name on the host" — and renames it inside the container).
 */
import { InternalError, messageOf } from "../cni/errors.ts";
import { openNetnsForDel } from "../cni/container-netns.ts";
import { delegate } from "../cni/invoke.ts";
import type { CmdArgs, Interface } from "../cni/types.ts";
import { Handle, isNotFound, type Link } from "../netlink/index.ts";
import { withNetNS, type NetNS } from "../netns/index.ts";
import { sysctlSet } from "../sysctl/index.ts";
import { resultFamily } from "../cni/version.ts";

/**
 * A result without IPs cannot be printed for cniVersion 0.1.0/0.2.0 (`cannot convert: no valid IP
 * addresses`); L2-only plugins refuse such an ADD up front instead of failing after the link exists.
 */
export function refuseL2ForOldVersions(isLayer3: boolean, cniVersion: string): void {
  if (!isLayer3 && resultFamily(cniVersion) === "020") throw new InternalError("cannot convert: no valid IP addresses");
}

/**
 * `ip link set dev TMP name IFNAME` in the container, returning the renamed link. On failure the
 * temporary link is deleted and the error reads `failed to rename <kind> to "<ifName>": <why>`.
 */
export function renameContainerLink(nl: Handle, tmpName: string, ifName: string, kind: string): Link {
  let link: Link;
  try {
    link = nl.linkByName(tmpName);
  } catch (err) {
    throw new InternalError(`failed to find the new ${kind} ${JSON.stringify(tmpName)} in the container: ${messageOf(err)}`, { cause: err });
  }
  if (tmpName !== ifName) {
    try {
      nl.linkSetName(link.index, ifName);
    } catch (err) {
      deleteLinkQuietly(nl, link.index);
      throw new InternalError(`failed to rename ${kind} to ${JSON.stringify(ifName)}: ${messageOf(err)}`, { cause: err });
    }
  }
  try {
    return nl.linkByIndex(link.index);
  } catch (err) {
    throw new InternalError(`failed to refetch ${kind} ${JSON.stringify(ifName)}: ${messageOf(err)}`, { cause: err });
  }
}

/** `ip link del dev X`, ignoring every error (rollback paths). */
export function deleteLinkQuietly(nl: Handle, index: number): void {
  try {
    nl.linkDel(index);
  } catch {
    // already gone, or nothing better to do during a rollback; the runtime's DEL retries
  }
}

/** `ip link del dev NAME` when it exists; false when it was not there. */
export function deleteLinkByName(nl: Handle, name: string): boolean {
  let link: Link;
  try {
    link = nl.linkByName(name);
  } catch (err) {
    if (isNotFound(err)) return false;
    throw new InternalError(`failed to lookup ${JSON.stringify(name)}: ${messageOf(err)}`, { cause: err });
  }
  try {
    nl.linkDel(link.index);
  } catch (err) {
    if (isNotFound(err)) return false;
    throw new InternalError(`failed to delete ${JSON.stringify(name)}: ${messageOf(err)}`, { cause: err });
  }
  return true;
}

/** The result entry for a container link. */
export function containerInterface(link: Link, sandbox: string): Interface {
  return { name: link.name, mac: link.mac ?? "", sandbox };
}

/**
 * `net.ipv4.conf.IF.arp_notify=1` and (optionally) `net.ipv6.conf.IF.ndisc_notify=1` in `ns`, so
 * neighbours learn the new address quickly; errors are ignored, as upstream does.
 */
export function enableNeighbourNotify(ns: NetNS, ifName: string, opts: { ndisc: boolean }): void {
  const keys = [`net/ipv4/conf/${ifName}/arp_notify`];
  if (opts.ndisc) keys.push(`net/ipv6/conf/${ifName}/ndisc_notify`);
  for (const key of keys) {
    try {
      withNetNS(ns, () => sysctlSet(key, "1", { ignoreMissing: true }));
    } catch {
      // best effort
    }
  }
}

/** Looks a link up; undefined when it does not exist. */
export function findLink(nl: Handle, name: string): Link | undefined {
  try {
    return nl.linkByName(name);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * DEL for plugins that own exactly one container link (macvlan, ipvlan, vlan, dummy, tap): IPAM DEL
 * first (when an IPAM type is configured), then delete CNI_IFNAME in the container. A netns that is
 * gone or unset, or a link that is already gone, means there is nothing left to delete.
 */
export async function delIpamThenContainerLink(args: CmdArgs, ipamType: string): Promise<void> {
  if (ipamType !== "") await delegate(ipamType, args, "DEL");
  const ns = openNetnsForDel(args.netns);
  if (ns === undefined) return;
  using owned = ns;
  using nl = Handle.open(owned);
  deleteLinkByName(nl, args.ifName);
}
