/**
 * The IFB of one attachment, in the netns of the shaped device (site.ts): found, named, created and
 * deleted through that netns's Handle. Names and alias: ifb-name.ts.
 */
import type { CmdArgs } from "../../shared/cni/types.ts";
import { annotate } from "../../shared/error/annotate.ts";
import { isNotFound } from "../../shared/netlink/errors.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import { derivedIfbName, ifbAlias, ifbBelongsTo, upstreamIfbName } from "./ifb-name.ts";

/** The IFB of (containerID, ifName) if it exists: the upstream name when it belongs to us, else the derived one. */
export function findIfb(nl: Handle, network: string, args: CmdArgs): Link | undefined {
  const up = nl.linkFind(upstreamIfbName(network, args.containerID));
  if (up !== undefined && ifbBelongsTo(up.alias, args.containerID, args.ifName)) return up;
  return nl.linkFind(derivedIfbName(network, args.containerID, args.ifName));
}

/** `ip link del dev X` for an IFB; one that is already gone is fine. */
export function deleteIfb(nl: Handle, index: number): void {
  try {
    nl.linkDel(index);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Picks the IFB name for ADD, deleting a leftover of this same attachment. */
function ifbNameForAdd(nl: Handle, network: string, args: CmdArgs): string {
  const upstream = upstreamIfbName(network, args.containerID);
  const up = nl.linkFind(upstream);
  if (up === undefined) return upstream;
  if (ifbBelongsTo(up.alias, args.containerID, args.ifName)) {
    deleteIfb(nl, up.index); // leftover of a failed DEL
    return upstream;
  }
  const derived = derivedIfbName(network, args.containerID, args.ifName);
  const old = nl.linkFind(derived);
  if (old !== undefined) deleteIfb(nl, old.index);
  return derived;
}

/** Creates the IFB (upstream CreateIfb): MTU and txqueuelen of the shaped device, our alias, up. */
export function createIfb(nl: Handle, network: string, dev: Link, args: CmdArgs): Link {
  const name = ifbNameForAdd(nl, network, args);
  return annotate("adding link", () => {
    nl.linkAddIfb({ name, mtu: dev.mtu, ...(dev.txqlen !== undefined ? { txqlen: dev.txqlen } : {}) });
    const ifb = nl.linkByName(name);
    nl.linkSetAlias(ifb.index, ifbAlias(args.containerID, args.ifName));
    nl.linkSetUp(ifb.index);
    return nl.linkByName(name);
  });
}
