/**
 * Finding the host end of the container's veth (upstream getHostInterface): CNI_IFNAME in the
 * container must be a veth; its peer's ifindex must exist in the host and be a prevResult
 * interface without sandbox. Same error texts as upstream.
 */
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import type { Interface } from "../../shared/cni/types.ts";
import type { Handle, Link } from "../../shared/netlink/index.ts";

/** The container link's veth peer index (upstream ip.GetVethPeerIfindex). */
function vethPeerIndex(containerNl: Handle, ifName: string): number {
  let link: Link;
  try {
    link = containerNl.linkByName(ifName);
  } catch (err) {
    throw new Error(`could not look up ${JSON.stringify(ifName)}: ${messageOf(err)}`, { cause: err });
  }
  if (link.kind !== "veth") throw new Error(`interface ${JSON.stringify(ifName)} was not a veth interface`);
  if (link.parentIndex === undefined || link.parentIndex <= 0) throw new Error(`no peer ifindex reported for ${JSON.stringify(ifName)}`);
  return link.parentIndex;
}

/** The host veth of CNI_IFNAME, checked against the prevResult's interfaces. */
export function findHostVeth(interfaces: readonly Interface[], containerNl: Handle, hostNl: Handle, ifName: string): Link {
  if (interfaces.length === 0) throw new InternalError("no interfaces provided");
  let peerIndex: number;
  try {
    peerIndex = vethPeerIndex(containerNl, ifName);
  } catch (err) {
    throw new InternalError(`container interface ${ifName} has no veth peer: ${messageOf(err)}`, { cause: err });
  }
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
