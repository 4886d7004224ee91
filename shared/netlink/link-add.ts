/**
 * Creating links (RTM_NEWLINK with NLM_F_CREATE|NLM_F_EXCL). Each `build*` is pure and byte-checked
 * against iproute2 (test/fixtures/netlink/iproute2-requests.json); attribute order follows iproute2
 * for options given in the order `mtu, address, txqueuelen, netns`: [MTU] [ADDRESS] [TXQLEN]
 * [NET_NS_FD] [LINK] IFNAME LINKINFO{KIND, DATA}. Kinds are sent without a NUL terminator, as
 * iproute2 does. Callers use the Handle methods.
 *
 * The add functions return nothing; look the link up by name afterwards (a link created with
 * `netnsFd` lives in that namespace, so it must be looked up through a Handle there).
 */

import { buildMessage, type NlWriter } from "./codec.ts";
import {
  IFLA_ADDRESS,
  IFLA_BR_VLAN_DEFAULT_PVID,
  IFLA_BR_VLAN_FILTERING,
  IFLA_IFNAME,
  IFLA_INFO_DATA,
  IFLA_INFO_KIND,
  IFLA_IPVLAN_FLAGS,
  IFLA_IPVLAN_MODE,
  IFLA_LINK,
  IFLA_LINKINFO,
  IFLA_MACVLAN_BC_QUEUE_LEN,
  IFLA_MACVLAN_MODE,
  IFLA_MTU,
  IFLA_NET_NS_FD,
  IFLA_TXQLEN,
  IFLA_VLAN_ID,
  IFLA_VRF_TABLE,
  IPVLAN_F_PRIVATE,
  IPVLAN_F_VEPA,
  IPVLAN_MODE_L2,
  IPVLAN_MODE_L3,
  IPVLAN_MODE_L3S,
  MACVLAN_MODE_BRIDGE,
  MACVLAN_MODE_PASSTHRU,
  MACVLAN_MODE_PRIVATE,
  MACVLAN_MODE_SOURCE,
  MACVLAN_MODE_VEPA,
  VETH_INFO_PEER,
} from "./constants/if-link.ts";
import { NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST } from "./constants/netlink.ts";
import { RTM_NEWLINK } from "./constants/rtnetlink.ts";
import { writeIfinfomsg } from "./link.ts";
import { macToBytes } from "./_addr-bytes.ts";
import type { NetlinkSocket } from "./socket.ts";

/** Options every created link accepts. */
export interface LinkCommonOptions {
  name: string;
  mtu?: number;
  /** MAC address, "aa:bb:cc:dd:ee:ff". */
  mac?: string;
  txqlen?: number;
  /** Create the link directly in the netns behind this fd (IFLA_NET_NS_FD). */
  netnsFd?: number;
}

export interface VethOptions {
  name: string;
  peerName: string;
  /** Put the peer into the netns behind this fd; the first end stays in the handle's netns. */
  peerNetnsFd?: number;
  mtu?: number;
  /** Peer MTU; defaults to `mtu` (the kernel would otherwise give the peer 1500). */
  peerMtu?: number;
  mac?: string;
  peerMac?: string;
  txqlen?: number;
  peerTxqlen?: number;
}

export interface BridgeOptions {
  name: string;
  mtu?: number;
  mac?: string;
  txqlen?: number;
  vlanFiltering?: boolean;
  vlanDefaultPvid?: number;
}

export type MacvlanMode = "private" | "vepa" | "bridge" | "passthru" | "source";
export interface MacvlanOptions extends LinkCommonOptions {
  parentIndex: number;
  /** MACVLAN_MODE_* value or its name. */
  mode: number | MacvlanMode;
  /** Broadcast/multicast queue length (`bcqueuelen N`, IFLA_MACVLAN_BC_QUEUE_LEN, kernel ≥ 5.11). */
  bcQueueLen?: number;
}

export type IpvlanMode = "l2" | "l3" | "l3s";
export type IpvlanFlag = "bridge" | "private" | "vepa";
export interface IpvlanOptions extends LinkCommonOptions {
  parentIndex: number;
  /** IPVLAN_MODE_* value or its name. */
  mode: number | IpvlanMode;
  /** IPVLAN_F_* value or its name ("bridge" = 0, the default). */
  flags?: number | IpvlanFlag;
}

export interface VlanOptions extends LinkCommonOptions {
  parentIndex: number;
  vlanId: number;
}

export interface VrfOptions extends LinkCommonOptions {
  /** The routing table the VRF uses (1..2^32-1). */
  table: number;
}

export type DummyOptions = LinkCommonOptions;
export type IfbOptions = LinkCommonOptions;

/** MACVLAN_MODE_* by name. */
export const MACVLAN_MODE_BY_NAME: Readonly<Record<MacvlanMode, number>> = {
  private: MACVLAN_MODE_PRIVATE,
  vepa: MACVLAN_MODE_VEPA,
  bridge: MACVLAN_MODE_BRIDGE,
  passthru: MACVLAN_MODE_PASSTHRU,
  source: MACVLAN_MODE_SOURCE,
};
const IPVLAN_MODES: Readonly<Record<IpvlanMode, number>> = { l2: IPVLAN_MODE_L2, l3: IPVLAN_MODE_L3, l3s: IPVLAN_MODE_L3S };
const IPVLAN_FLAGS: Readonly<Record<IpvlanFlag, number>> = { bridge: 0, private: IPVLAN_F_PRIVATE, vepa: IPVLAN_F_VEPA };

const CREATE_FLAGS = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;

/** [MTU] [ADDRESS] [TXQLEN] [NET_NS_FD] [LINK] IFNAME — iproute2's order. */
function writeCommon(w: NlWriter, o: LinkCommonOptions & { parentIndex?: number }): void {
  if (o.mtu !== undefined) w.attrU32(IFLA_MTU, o.mtu);
  if (o.mac !== undefined) w.attr(IFLA_ADDRESS, macToBytes(o.mac));
  if (o.txqlen !== undefined) w.attrU32(IFLA_TXQLEN, o.txqlen);
  if (o.netnsFd !== undefined) w.attrU32(IFLA_NET_NS_FD, o.netnsFd);
  if (o.parentIndex !== undefined) w.attrU32(IFLA_LINK, o.parentIndex);
  w.attrString(IFLA_IFNAME, o.name);
}

function writeLinkInfo(w: NlWriter, kind: string, data?: (w: NlWriter) => void): void {
  w.nest(IFLA_LINKINFO, () => {
    w.attrText(IFLA_INFO_KIND, kind);
    if (data !== undefined) w.nest(IFLA_INFO_DATA, data);
  });
}

function buildCreate(o: LinkCommonOptions & { parentIndex?: number }, kind: string, data?: (w: NlWriter) => void): Uint8Array {
  return buildMessage(RTM_NEWLINK, CREATE_FLAGS, (w) => {
    writeIfinfomsg(w);
    writeCommon(w, o);
    writeLinkInfo(w, kind, data);
  });
}

/** `ip link add name N [mtu M] [address A] [txqueuelen Q] type veth peer name P [mtu M] [address A] [txqueuelen Q] [netns FD]` */
export function buildVethAddRequest(o: VethOptions): Uint8Array {
  const peerMtu = o.peerMtu ?? o.mtu;
  const common = { name: o.name, ...pick(o, "mtu", "mac", "txqlen") };
  return buildCreate(common, "veth", (w) => {
    w.nest(VETH_INFO_PEER, () => {
      writeIfinfomsg(w);
      writeCommon(w, {
        name: o.peerName,
        ...(peerMtu === undefined ? {} : { mtu: peerMtu }),
        ...(o.peerMac === undefined ? {} : { mac: o.peerMac }),
        ...(o.peerTxqlen === undefined ? {} : { txqlen: o.peerTxqlen }),
        ...(o.peerNetnsFd === undefined ? {} : { netnsFd: o.peerNetnsFd }),
      });
    });
  });
}

/** `ip link add name N [mtu M] [address A] type bridge [vlan_filtering 0|1] [vlan_default_pvid V]` */
export function buildBridgeAddRequest(o: BridgeOptions): Uint8Array {
  const hasData = o.vlanFiltering !== undefined || o.vlanDefaultPvid !== undefined;
  return buildCreate(
    { name: o.name, ...pick(o, "mtu", "mac", "txqlen") },
    "bridge",
    hasData
      ? (w) => {
          if (o.vlanFiltering !== undefined) w.attrU8(IFLA_BR_VLAN_FILTERING, o.vlanFiltering ? 1 : 0);
          if (o.vlanDefaultPvid !== undefined) w.attrU16(IFLA_BR_VLAN_DEFAULT_PVID, o.vlanDefaultPvid);
        }
      : undefined,
  );
}

/** `ip link add link PARENT name N [mtu M] [address A] [netns FD] type macvlan mode MODE [bcqueuelen Q]` */
export function buildMacvlanAddRequest(o: MacvlanOptions): Uint8Array {
  const mode = typeof o.mode === "number" ? o.mode : MACVLAN_MODE_BY_NAME[o.mode];
  if (mode === undefined) throw new TypeError(`unknown macvlan mode ${JSON.stringify(o.mode)}`);
  return buildCreate(o, "macvlan", (w) => {
    if (o.bcQueueLen !== undefined) w.attrU32(IFLA_MACVLAN_BC_QUEUE_LEN, o.bcQueueLen);
    w.attrU32(IFLA_MACVLAN_MODE, mode);
  });
}

/** `ip link add link PARENT name N [mtu M] [netns FD] type ipvlan mode MODE [FLAG]` */
export function buildIpvlanAddRequest(o: IpvlanOptions): Uint8Array {
  const mode = typeof o.mode === "number" ? o.mode : IPVLAN_MODES[o.mode];
  const flags = o.flags === undefined ? 0 : typeof o.flags === "number" ? o.flags : IPVLAN_FLAGS[o.flags];
  if (mode === undefined) throw new TypeError(`unknown ipvlan mode ${JSON.stringify(o.mode)}`);
  if (flags === undefined) throw new TypeError(`unknown ipvlan flag ${JSON.stringify(o.flags)}`);
  return buildCreate(o, "ipvlan", (w) => {
    w.attrU16(IFLA_IPVLAN_MODE, mode);
    w.attrU16(IFLA_IPVLAN_FLAGS, flags);
  });
}

/** `ip link add link PARENT name N [mtu M] [netns FD] type vlan id ID` */
export function buildVlanAddRequest(o: VlanOptions): Uint8Array {
  if (!Number.isInteger(o.vlanId) || o.vlanId < 0 || o.vlanId > 4094) throw new RangeError(`invalid VLAN id ${o.vlanId}`);
  return buildCreate(o, "vlan", (w) => w.attrU16(IFLA_VLAN_ID, o.vlanId));
}

/** `ip link add name N type vrf table T` */
export function buildVrfAddRequest(o: VrfOptions): Uint8Array {
  if (!Number.isInteger(o.table) || o.table < 1 || o.table > 0xffffffff) throw new RangeError(`invalid VRF table ${o.table}`);
  return buildCreate(o, "vrf", (w) => w.attrU32(IFLA_VRF_TABLE, o.table));
}

/** `ip link add name N [mtu M] type dummy` */
export function buildDummyAddRequest(o: DummyOptions): Uint8Array {
  return buildCreate(o, "dummy");
}

/** `ip link add name N [mtu M] [txqueuelen Q] type ifb` */
export function buildIfbAddRequest(o: IfbOptions): Uint8Array {
  return buildCreate(o, "ifb");
}

function pick<T extends object, K extends keyof T>(o: T, ...keys: K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

function send(sock: NetlinkSocket, msg: Uint8Array, name: string): void {
  sock.request(msg, `name=${JSON.stringify(name)}`);
}

/** Equivalent to `ip link add name N type veth peer name P [netns FD]`. */
export function linkAddVeth(sock: NetlinkSocket, o: VethOptions): void {
  send(sock, buildVethAddRequest(o), o.name);
}
/** Equivalent to `ip link add name N type bridge`. */
export function linkAddBridge(sock: NetlinkSocket, o: BridgeOptions): void {
  send(sock, buildBridgeAddRequest(o), o.name);
}
/** Equivalent to `ip link add link P name N type macvlan mode M [bcqueuelen Q]`. */
export function linkAddMacvlan(sock: NetlinkSocket, o: MacvlanOptions): void {
  send(sock, buildMacvlanAddRequest(o), o.name);
}
/** Equivalent to `ip link add link P name N type ipvlan mode M`. */
export function linkAddIpvlan(sock: NetlinkSocket, o: IpvlanOptions): void {
  send(sock, buildIpvlanAddRequest(o), o.name);
}
/** Equivalent to `ip link add link P name N type vlan id I`. */
export function linkAddVlan(sock: NetlinkSocket, o: VlanOptions): void {
  send(sock, buildVlanAddRequest(o), o.name);
}
/** Equivalent to `ip link add name N type vrf table T` (the device starts down). */
export function linkAddVrf(sock: NetlinkSocket, o: VrfOptions): void {
  send(sock, buildVrfAddRequest(o), o.name);
}
/** Equivalent to `ip link add name N type dummy`. */
export function linkAddDummy(sock: NetlinkSocket, o: DummyOptions): void {
  send(sock, buildDummyAddRequest(o), o.name);
}
/** Equivalent to `ip link add name N type ifb`. */
export function linkAddIfb(sock: NetlinkSocket, o: IfbOptions): void {
  send(sock, buildIfbAddRequest(o), o.name);
}
