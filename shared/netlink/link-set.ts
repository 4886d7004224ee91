/**
 * Changing and deleting links. Builders are pure and byte-checked against iproute2
 * (`ip link set dev X ...` sends RTM_NEWLINK with NLM_F_REQUEST|NLM_F_ACK and the ifindex;
 * flag changes use ifi_flags/ifi_change, everything else one attribute).
 */

import { AF_BRIDGE } from "../sys/constants.ts";
import { buildMessage, type NlWriter } from "./codec.ts";
import {
  IFF_ALLMULTI,
  IFF_PROMISC,
  IFF_UP,
  IFLA_ADDRESS,
  IFLA_BR_VLAN_DEFAULT_PVID,
  IFLA_BR_VLAN_FILTERING,
  IFLA_BRPORT_ISOLATED,
  IFLA_BRPORT_MODE,
  IFLA_IFALIAS,
  IFLA_IFNAME,
  IFLA_INFO_DATA,
  IFLA_INFO_KIND,
  IFLA_LINKINFO,
  IFLA_MASTER,
  IFLA_MTU,
  IFLA_NET_NS_FD,
  IFLA_PROTINFO,
  IFLA_TXQLEN,
} from "./constants/if-link.ts";
import { NLA_F_NESTED, NLM_F_ACK, NLM_F_REQUEST } from "./constants/netlink.ts";
import { RTM_DELLINK, RTM_NEWLINK, RTM_SETLINK } from "./constants/rtnetlink.ts";
import { writeIfinfomsg } from "./link.ts";
import { macToBytes } from "./_addr-bytes.ts";
import type { NetlinkSocket } from "./socket.ts";

const SET_FLAGS = NLM_F_REQUEST | NLM_F_ACK;

/** `ip link del dev X` (by index). */
export function buildLinkDelRequest(index: number): Uint8Array {
  return buildMessage(RTM_DELLINK, SET_FLAGS, (w) => writeIfinfomsg(w, { index }));
}

/** Sets or clears one IFF_* flag (`ip link set dev X up|down|promisc on|allmulticast on`). */
export function buildLinkSetFlagRequest(index: number, flag: number, on: boolean): Uint8Array {
  return buildMessage(RTM_NEWLINK, SET_FLAGS, (w) => writeIfinfomsg(w, { index, flags: on ? flag : 0, change: flag }));
}

/** `ip link set dev X <attr>`: ifinfomsg with the index, then what `fill` writes. */
export function buildLinkSetAttrRequest(index: number, fill: (w: NlWriter) => void): Uint8Array {
  return buildMessage(RTM_NEWLINK, SET_FLAGS, (w) => {
    writeIfinfomsg(w, { index });
    fill(w);
  });
}

/**
 * Bridge-port option (`bridge link set dev X hairpin on|isolated on`): RTM_SETLINK for AF_BRIDGE
 * with a nested IFLA_PROTINFO, as iproute2's `bridge` tool sends it.
 */
export function buildBridgePortSetRequest(index: number, attr: number, on: boolean): Uint8Array {
  return buildMessage(RTM_SETLINK, SET_FLAGS, (w) => {
    writeIfinfomsg(w, { family: AF_BRIDGE, index });
    w.nest(IFLA_PROTINFO, () => w.attrU8(attr, on ? 1 : 0), NLA_F_NESTED);
  });
}

/** Bridge options that can be changed on a live bridge. */
export interface BridgeChange {
  vlanFiltering?: boolean;
  /** 0 disables the default PVID for new ports. */
  vlanDefaultPvid?: number;
}

/**
 * `ip link set dev BR type bridge [vlan_filtering 0|1] [vlan_default_pvid N]`: RTM_NEWLINK with
 * the ifindex and IFLA_LINKINFO { IFLA_INFO_KIND "bridge", IFLA_INFO_DATA { IFLA_BR_* } }.
 */
export function buildLinkSetBridgeRequest(index: number, change: BridgeChange): Uint8Array {
  const pvid = change.vlanDefaultPvid;
  if (pvid !== undefined && (!Number.isInteger(pvid) || pvid < 0 || pvid > 4094)) throw new RangeError(`invalid vlan_default_pvid ${pvid}`);
  return buildLinkSetAttrRequest(index, (w) => {
    w.nest(IFLA_LINKINFO, () => {
      w.attrText(IFLA_INFO_KIND, "bridge");
      w.nest(IFLA_INFO_DATA, () => {
        if (change.vlanFiltering !== undefined) w.attrU8(IFLA_BR_VLAN_FILTERING, change.vlanFiltering ? 1 : 0);
        if (pvid !== undefined) w.attrU16(IFLA_BR_VLAN_DEFAULT_PVID, pvid);
      });
    });
  });
}

/** Request builders for every link change, one per `ip link set` option (pure; golden-tested). */
export const linkSetRequests = {
  up: (index: number) => buildLinkSetFlagRequest(index, IFF_UP, true),
  down: (index: number) => buildLinkSetFlagRequest(index, IFF_UP, false),
  promisc: (index: number, on: boolean) => buildLinkSetFlagRequest(index, IFF_PROMISC, on),
  allmulti: (index: number, on: boolean) => buildLinkSetFlagRequest(index, IFF_ALLMULTI, on),
  mtu: (index: number, mtu: number) => buildLinkSetAttrRequest(index, (w) => w.attrU32(IFLA_MTU, mtu)),
  mac: (index: number, mac: string) => {
    const bytes = macToBytes(mac);
    return buildLinkSetAttrRequest(index, (w) => w.attr(IFLA_ADDRESS, bytes));
  },
  master: (index: number, masterIndex: number) => buildLinkSetAttrRequest(index, (w) => w.attrU32(IFLA_MASTER, masterIndex)),
  noMaster: (index: number) => buildLinkSetAttrRequest(index, (w) => w.attrU32(IFLA_MASTER, 0)),
  netnsFd: (index: number, fd: number) => buildLinkSetAttrRequest(index, (w) => w.attrU32(IFLA_NET_NS_FD, fd)),
  name: (index: number, name: string) => buildLinkSetAttrRequest(index, (w) => w.attrString(IFLA_IFNAME, name)),
  alias: (index: number, alias: string) => buildLinkSetAttrRequest(index, (w) => w.attrText(IFLA_IFALIAS, alias)),
  txqlen: (index: number, txqlen: number) => buildLinkSetAttrRequest(index, (w) => w.attrU32(IFLA_TXQLEN, txqlen)),
  hairpin: (index: number, on: boolean) => buildBridgePortSetRequest(index, IFLA_BRPORT_MODE, on),
  isolated: (index: number, on: boolean) => buildBridgePortSetRequest(index, IFLA_BRPORT_ISOLATED, on),
  bridge: buildLinkSetBridgeRequest,
} as const;

function run(sock: NetlinkSocket, msg: Uint8Array, index: number): void {
  sock.request(msg, `index=${index}`);
}

/** Equivalent to `ip link del dev X`. */
export function linkDel(sock: NetlinkSocket, index: number): void {
  run(sock, buildLinkDelRequest(index), index);
}
/** Equivalent to `ip link set dev X up`. */
export function linkSetUp(sock: NetlinkSocket, index: number): void {
  run(sock, linkSetRequests.up(index), index);
}
/** Equivalent to `ip link set dev X down`. */
export function linkSetDown(sock: NetlinkSocket, index: number): void {
  run(sock, linkSetRequests.down(index), index);
}
/** Equivalent to `ip link set dev X promisc on|off`. */
export function linkSetPromisc(sock: NetlinkSocket, index: number, on: boolean): void {
  run(sock, linkSetRequests.promisc(index, on), index);
}
/** Equivalent to `ip link set dev X allmulticast on|off`. */
export function linkSetAllmulti(sock: NetlinkSocket, index: number, on: boolean): void {
  run(sock, linkSetRequests.allmulti(index, on), index);
}
/** Equivalent to `ip link set dev X mtu M`. */
export function linkSetMTU(sock: NetlinkSocket, index: number, mtu: number): void {
  run(sock, linkSetRequests.mtu(index, mtu), index);
}
/** Equivalent to `ip link set dev X address MAC`. */
export function linkSetMAC(sock: NetlinkSocket, index: number, mac: string): void {
  run(sock, linkSetRequests.mac(index, mac), index);
}
/** Equivalent to `ip link set dev X master M`. */
export function linkSetMaster(sock: NetlinkSocket, index: number, masterIndex: number): void {
  run(sock, linkSetRequests.master(index, masterIndex), index);
}
/** Equivalent to `ip link set dev X nomaster`. */
export function linkSetNoMaster(sock: NetlinkSocket, index: number): void {
  run(sock, linkSetRequests.noMaster(index), index);
}
/** Equivalent to `ip link set dev X netns FD`: moves the link into the netns behind `fd`. */
export function linkSetNetnsFd(sock: NetlinkSocket, index: number, fd: number): void {
  run(sock, linkSetRequests.netnsFd(index, fd), index);
}
/** Equivalent to `ip link set dev X name N`. */
export function linkSetName(sock: NetlinkSocket, index: number, name: string): void {
  run(sock, linkSetRequests.name(index, name), index);
}
/** Equivalent to `ip link set dev X alias A` (sent without NUL, like iproute2). */
export function linkSetAlias(sock: NetlinkSocket, index: number, alias: string): void {
  run(sock, linkSetRequests.alias(index, alias), index);
}
/** Equivalent to `ip link set dev X txqueuelen N`. */
export function linkSetTxqlen(sock: NetlinkSocket, index: number, txqlen: number): void {
  run(sock, linkSetRequests.txqlen(index, txqlen), index);
}
/** Equivalent to `bridge link set dev X hairpin on|off` (X must be a bridge port). */
export function linkSetHairpin(sock: NetlinkSocket, index: number, on: boolean): void {
  run(sock, linkSetRequests.hairpin(index, on), index);
}
/** Equivalent to `bridge link set dev X isolated on|off` (X must be a bridge port). */
export function linkSetIsolated(sock: NetlinkSocket, index: number, on: boolean): void {
  run(sock, linkSetRequests.isolated(index, on), index);
}
/** Equivalent to `ip link set dev BR type bridge [vlan_filtering 0|1] [vlan_default_pvid N]`. */
export function linkSetBridge(sock: NetlinkSocket, index: number, change: BridgeChange): void {
  run(sock, linkSetRequests.bridge(index, change), index);
}
