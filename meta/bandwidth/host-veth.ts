/**
 * Finding the host end of the container's veth (upstream getHostInterface): CNI_IFNAME in the
 * container must be a veth; its peer's ifindex must exist in the host and be a prevResult
 * interface without sandbox. Same error texts as upstream.
 */
import { InternalError } from "../../shared/cni/errors.ts";
import { annotate } from "../../shared/error/annotate.ts";
import type { Interface } from "../../shared/cni/types.ts";
import type { Handle, Link } from "../../shared/netlink/index.ts";

/** The container link's veth peer index (upstream ip.GetVethPeerIfindex). */
function vethPeerIndex(containerNl: Handle, ifName: string): number {
  const link = annotate(`could not look up ${JSON.stringify(ifName)}`, () => containerNl.linkByName(ifName));
  if (link.kind !== "veth") throw new Error(`interface ${JSON.stringify(ifName)} was not a veth interface`);
  if (link.parentIndex === undefined || link.parentIndex <= 0) throw new Error(`no peer ifindex reported for ${JSON.stringify(ifName)}`);
  return link.parentIndex;
}

/** The host veth of CNI_IFNAME, checked against the prevResult's interfaces. */
export function findHostVeth(interfaces: readonly Interface[], containerNl: Handle, hostNl: Handle, ifName: string): Link {
  if (interfaces.length === 0) throw new InternalError("no interfaces provided");
  const peerIndex = annotate(`container interface ${ifName} has no veth peer`, () => vethPeerIndex(containerNl, ifName));
  let link: Link;
  try {
    link = hostNl.linkByIndex(peerIndex);
  } catch (err) {
    throw new InternalError(`veth peer with index ${peerIndex} is not in host ns`, { cause: err });
  }
  if (!interfaces.some((i) => (i.sandbox ?? "") === "" && i.name === link.name)) {
    throw new InternalError("no veth peer of container interface found in host ns");
  }
  return link;
}
