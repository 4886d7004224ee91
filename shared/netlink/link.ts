/**
 * Links: the `Link` record decoded from RTM_NEWLINK, and lookups (by name, by index, list).
 * Creation is in link-add.ts, attribute changes in link-set.ts. Each function takes the
 * {@link NetlinkSocket} of a Handle; callers use the Handle methods.
 */

import { AF_UNSPEC } from "../sys/constants.ts";
import { ENODEV } from "../sys/errno.ts";
import { attrMap, buildMessage, readString, readU16, readU32, readU8, readI32, type NlMessage, type NlWriter } from "./codec.ts";
import {
  IFLA_ADDRESS,
  IFLA_BR_VLAN_DEFAULT_PVID,
  IFLA_BR_VLAN_FILTERING,
  IFLA_EXT_MASK,
  IFLA_IFALIAS,
  IFLA_IFNAME,
  IFLA_INFO_DATA,
  IFLA_INFO_KIND,
  IFLA_INFO_SLAVE_KIND,
  IFLA_IPVLAN_FLAGS,
  IFLA_IPVLAN_MODE,
  IFLA_LINK,
  IFLA_LINK_NETNSID,
  IFLA_LINKINFO,
  IFLA_MACVLAN_MODE,
  IFLA_MASTER,
  IFLA_MAX_MTU,
  IFLA_MIN_MTU,
  IFLA_MTU,
  IFLA_OPERSTATE,
  IFLA_PROMISCUITY,
  IFLA_TXQLEN,
  IFLA_VLAN_ID,
  IFLA_VRF_TABLE,
  IFLA_ALLMULTI,
} from "./constants/if-link.ts";
import { NLM_F_DUMP, NLM_F_REQUEST } from "./constants/netlink.ts";
import { IFINFOMSG_SIZE, RTEXT_FILTER_SKIP_STATS, RTM_GETLINK, RTM_NEWLINK } from "./constants/rtnetlink.ts";
import { LinkNotFoundError, NetlinkError } from "./errors.ts";
import { bytesToMac } from "./_addr-bytes.ts";
import type { NetlinkSocket } from "./socket.ts";

/** A network interface as the kernel reports it (RTM_NEWLINK). */
export interface Link {
  index: number;
  name: string;
  /** IFLA_INFO_KIND ("veth", "bridge", "macvlan", ...); absent for plain devices such as lo/eth0. */
  kind?: string;
  /** IFLA_INFO_SLAVE_KIND ("bridge" for a bridge port). */
  slaveKind?: string;
  /** ifi_flags (IFF_UP, IFF_PROMISC, ...). */
  flags: number;
  /** ARPHRD_* device type (ifi_type). */
  hwType: number;
  mtu: number;
  minMtu?: number;
  maxMtu?: number;
  /** IFLA_ADDRESS as lower-case colon hex. */
  mac?: string;
  /** IFLA_MASTER (bridge or bond this link is enslaved to). */
  masterIndex?: number;
  /** IFLA_OPERSTATE (IF_OPER_*). */
  operState?: number;
  txqlen?: number;
  alias?: string;
  /** IFLA_LINK: the parent (macvlan/vlan) or the veth peer's index, in the netns of netnsId if set. */
  parentIndex?: number;
  /** IFLA_LINK_NETNSID: the peer/parent lives in the namespace with this nsid. */
  netnsId?: number;
  promiscuity?: number;
  allmulti?: number;
  /** macvlan IFLA_MACVLAN_MODE (MACVLAN_MODE_*). */
  macvlanMode?: number;
  /** ipvlan IFLA_IPVLAN_MODE (IPVLAN_MODE_*). */
  ipvlanMode?: number;
  /** ipvlan IFLA_IPVLAN_FLAGS (IPVLAN_F_*). */
  ipvlanFlags?: number;
  /** 802.1Q IFLA_VLAN_ID. */
  vlanId?: number;
  /** bridge IFLA_BR_VLAN_FILTERING. */
  vlanFiltering?: boolean;
  /** bridge IFLA_BR_VLAN_DEFAULT_PVID. */
  vlanDefaultPvid?: number;
  /** vrf IFLA_VRF_TABLE: the VRF's routing table. */
  vrfTable?: number;
}

/** Writes a struct ifinfomsg (16 bytes). */
export function writeIfinfomsg(
  w: NlWriter,
  m: { family?: number; type?: number; index?: number; flags?: number; change?: number } = {},
): void {
  w.u8(m.family ?? AF_UNSPEC).u8(0).u16(m.type ?? 0).i32(m.index ?? 0).u32(m.flags ?? 0).u32(m.change ?? 0);
}

/** Decodes the kind-specific IFLA_INFO_DATA into `link`. */
function parseInfoData(link: Link, kind: string, data: Uint8Array): void {
  const d = attrMap(data);
  const u8 = (t: number) => (d.has(t) ? readU8(d.get(t) as Uint8Array) : undefined);
  const u16 = (t: number) => (d.has(t) ? readU16(d.get(t) as Uint8Array) : undefined);
  const u32 = (t: number) => (d.has(t) ? readU32(d.get(t) as Uint8Array) : undefined);
  let v: number | undefined;
  switch (kind) {
    case "macvlan":
    case "macvtap":
      if ((v = u32(IFLA_MACVLAN_MODE)) !== undefined) link.macvlanMode = v;
      break;
    case "ipvlan":
    case "ipvtap":
      if ((v = u16(IFLA_IPVLAN_MODE)) !== undefined) link.ipvlanMode = v;
      if ((v = u16(IFLA_IPVLAN_FLAGS)) !== undefined) link.ipvlanFlags = v;
      break;
    case "vlan":
      if ((v = u16(IFLA_VLAN_ID)) !== undefined) link.vlanId = v;
      break;
    case "bridge":
      if ((v = u8(IFLA_BR_VLAN_FILTERING)) !== undefined) link.vlanFiltering = v !== 0;
      if ((v = u16(IFLA_BR_VLAN_DEFAULT_PVID)) !== undefined) link.vlanDefaultPvid = v;
      break;
    case "vrf":
      if ((v = u32(IFLA_VRF_TABLE)) !== undefined) link.vrfTable = v;
      break;
  }
}

/** Decodes one RTM_NEWLINK message payload (ifinfomsg + attributes). */
export function parseLink(payload: Uint8Array): Link {
  const a = attrMap(payload, IFINFOMSG_SIZE);
  const u32 = (t: number) => (a.has(t) ? readU32(a.get(t) as Uint8Array) : undefined);
  const name = a.get(IFLA_IFNAME);
  const link: Link = {
    index: readI32(payload, 4),
    name: name === undefined ? "" : readString(name),
    flags: readU32(payload, 8),
    hwType: readU16(payload, 2),
    mtu: u32(IFLA_MTU) ?? 0,
  };
  let v: number | undefined;
  const mac = a.get(IFLA_ADDRESS);
  if (mac !== undefined && mac.byteLength > 0) link.mac = bytesToMac(mac);
  if ((v = u32(IFLA_MASTER)) !== undefined && v !== 0) link.masterIndex = v;
  if (a.has(IFLA_OPERSTATE)) link.operState = readU8(a.get(IFLA_OPERSTATE) as Uint8Array);
  if ((v = u32(IFLA_TXQLEN)) !== undefined) link.txqlen = v;
  const alias = a.get(IFLA_IFALIAS);
  if (alias !== undefined && alias.byteLength > 0) link.alias = readString(alias);
  if ((v = u32(IFLA_LINK)) !== undefined) link.parentIndex = v;
  if (a.has(IFLA_LINK_NETNSID)) link.netnsId = readI32(a.get(IFLA_LINK_NETNSID) as Uint8Array);
  if ((v = u32(IFLA_MIN_MTU)) !== undefined) link.minMtu = v;
  if ((v = u32(IFLA_MAX_MTU)) !== undefined) link.maxMtu = v;
  if ((v = u32(IFLA_PROMISCUITY)) !== undefined) link.promiscuity = v;
  if ((v = u32(IFLA_ALLMULTI)) !== undefined) link.allmulti = v;
  const info = a.get(IFLA_LINKINFO);
  if (info !== undefined) {
    const i = attrMap(info);
    const kind = i.get(IFLA_INFO_KIND);
    if (kind !== undefined) link.kind = readString(kind);
    const slave = i.get(IFLA_INFO_SLAVE_KIND);
    if (slave !== undefined) link.slaveKind = readString(slave);
    const data = i.get(IFLA_INFO_DATA);
    if (link.kind !== undefined && data !== undefined) parseInfoData(link, link.kind, data);
  }
  return link;
}

function linksOf(messages: NlMessage[]): Link[] {
  return messages.filter((m) => m.type === RTM_NEWLINK).map((m) => parseLink(m.payload));
}

/** RTM_GETLINK for one link, by name (index 0 + IFLA_IFNAME) or by index. */
export function buildLinkGetRequest(lookup: { name: string } | { index: number }): Uint8Array {
  return buildMessage(RTM_GETLINK, NLM_F_REQUEST, (w) => {
    writeIfinfomsg(w, { index: "index" in lookup ? lookup.index : 0 });
    w.attrU32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
    if ("name" in lookup) w.attrString(IFLA_IFNAME, lookup.name);
  });
}

/** RTM_GETLINK dump of all links. */
export function buildLinkDumpRequest(): Uint8Array {
  return buildMessage(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, (w) => {
    writeIfinfomsg(w);
    w.attrU32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  });
}

function getOne(sock: NetlinkSocket, lookup: { name: string } | { index: number }): Link {
  let links: Link[];
  try {
    links = linksOf(sock.request(buildLinkGetRequest(lookup), "name" in lookup ? `name=${JSON.stringify(lookup.name)}` : `index=${lookup.index}`));
  } catch (err) {
    if (err instanceof NetlinkError && err.errno === ENODEV) throw new LinkNotFoundError(lookup, { cause: err });
    throw err;
  }
  const link = links[0];
  if (link === undefined) throw new LinkNotFoundError(lookup);
  return link;
}

/** Equivalent to `ip link show dev <name>`; throws LinkNotFoundError. */
export function linkByName(sock: NetlinkSocket, name: string): Link {
  return getOne(sock, { name });
}

/** Equivalent to `ip link show dev <name>`, or undefined when there is no such link; any other error throws. */
export function linkFind(sock: NetlinkSocket, name: string): Link | undefined {
  try {
    return getOne(sock, { name });
  } catch (err) {
    if (err instanceof LinkNotFoundError) return undefined;
    throw err;
  }
}

/** Looks a link up by ifindex; throws LinkNotFoundError. */
export function linkByIndex(sock: NetlinkSocket, index: number): Link {
  return getOne(sock, { index });
}

/** Equivalent to `ip link show`. */
export function linkList(sock: NetlinkSocket): Link[] {
  return linksOf(sock.request(buildLinkDumpRequest(), "dump"));
}
