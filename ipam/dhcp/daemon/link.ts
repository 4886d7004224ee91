/**
 * The container interface as the daemon sees it: looked up, raised, inspected, set down at
 * expiry, given the MTU of option 26. Each call opens the netns, works through one netlink handle
 * and closes it again, so the daemon never pins a container's netns.
 */
import { messageOf } from "../../../shared/cni/errors.ts";
import { goQuote } from "../../../shared/cni/go-quote.ts";
import { Handle } from "../../../shared/netlink/handle.ts";
import { IFF_UP, IF_OPER_UNKNOWN, IF_OPER_UP } from "../../../shared/netlink/constants/if-link.ts";
import { NetNS } from "../../../shared/netns/netns.ts";

/** RT_SCOPE_LINK from <linux/rtnetlink.h>. */
const RT_SCOPE_LINK = 253;
/** IFA_F_* from <linux/if_addr.h>. */
const IFA_F_DADFAILED = 0x08;
const IFA_F_TENTATIVE = 0x40;

export class LinkGoneError extends Error {
  override name = "LinkGoneError";
}

export interface LinkState {
  index: number;
  mac: string;
  /** IPv4 addresses on the interface. */
  addresses: string[];
  /** Operational (IF_OPER_UP, or UNKNOWN for drivers without operstate). */
  ready: boolean;
  /** An IPv6 link-local address usable as a source (DAD done), if any. */
  linkLocal: string | undefined;
  /** An IPv6 link-local address exists but is still tentative. */
  linkLocalTentative: boolean;
}

/** Looks the interface up in the netns at `nsPath`; sets it up when `up`. LinkGoneError when the netns or link is gone. */
export function inspectLink(nsPath: string, ifName: string, up: boolean): LinkState {
  let ns: NetNS;
  try {
    ns = NetNS.open(nsPath);
  } catch (err) {
    // Upstream's text: `failed to Statfs "<path>": no such file or directory` (pkg/ns GetNS).
    throw new LinkGoneError(messageOf(err), { cause: err });
  }
  try {
    using nl = Handle.open(ns);
    let link;
    try {
      link = nl.linkByName(ifName);
    } catch (err) {
      throw new LinkGoneError(`error looking up ${goQuote(ifName)}: ${messageOf(err)}`, { cause: err });
    }
    if (up && (link.flags & IFF_UP) === 0) nl.linkSetUp(link.index);
    const addresses = nl.addrList({ index: link.index, family: 4 }).map((a) => a.address);
    const v6 = nl.addrList({ index: link.index, family: 6 }).filter((a) => a.scope === RT_SCOPE_LINK && (a.flags & IFA_F_DADFAILED) === 0);
    const usable = v6.find((a) => (a.flags & IFA_F_TENTATIVE) === 0);
    const ready = (link.flags & IFF_UP) !== 0 && (link.operState === undefined || link.operState === IF_OPER_UP || link.operState === IF_OPER_UNKNOWN);
    return {
      index: link.index,
      mac: link.mac ?? "00:00:00:00:00:00",
      addresses,
      ready,
      linkLocal: usable?.address,
      linkLocalTentative: usable === undefined && v6.length > 0,
    };
  } finally {
    ns.close();
  }
}

/** Sets the interface down (lease expired); failures are ignored (it may be gone). */
export function linkDown(nsPath: string, ifName: string): void {
  try {
    const ns = NetNS.open(nsPath);
    try {
      using nl = Handle.open(ns);
      nl.linkSetDown(nl.linkByName(ifName).index);
    } finally {
      ns.close();
    }
  } catch {
    // gone already
  }
}

/** Sets the interface's MTU (`ip link set <if> mtu <n>`) when it differs. */
export function setLinkMtu(nsPath: string, ifName: string, mtu: number): void {
  const ns = NetNS.open(nsPath);
  try {
    using nl = Handle.open(ns);
    const link = nl.linkByName(ifName);
    if (link.mtu !== mtu) nl.linkSetMTU(link.index, mtu);
  } finally {
    ns.close();
  }
}

/** How long a new lease waits for a just-raised link to become operational before its first packet. */
const LINK_READY_WAIT_MS = 2000;
/** How long a DHCPv6 lease waits for the link-local address to finish DAD (≈ 1 s by default). */
const LINK_LOCAL_WAIT_MS = 5000;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Raises the link and waits (≤ 2 s) until it is operational; its state. */
export async function raiseLink(nsPath: string, ifName: string): Promise<LinkState> {
  let link = inspectLink(nsPath, ifName, true);
  // A link raised just now (macvlan: by us) drops what is sent until the kernel's link watch
  // activates it (up to ~1 s): wait for that instead of losing the first packet to a full -timeout.
  for (const end = Date.now() + LINK_READY_WAIT_MS; !link.ready && Date.now() < end; ) {
    await sleep(10);
    link = inspectLink(nsPath, ifName, false);
  }
  return link;
}

/** Waits (≤ 5 s) for a usable IPv6 link-local address, the source of every DHCPv6 message. */
export async function awaitLinkLocal(nsPath: string, ifName: string, link: LinkState): Promise<LinkState> {
  let state = link;
  for (const end = Date.now() + LINK_LOCAL_WAIT_MS; state.linkLocal === undefined && Date.now() < end; ) {
    await sleep(50);
    state = inspectLink(nsPath, ifName, false);
  }
  if (state.linkLocal === undefined) {
    const why = state.linkLocalTentative ? "its link-local address is still tentative (DAD)" : "it has no IPv6 link-local address (IPv6 disabled?)";
    throw new Error(`cannot send DHCPv6 on ${ifName}: ${why}`);
  }
  return state;
}
