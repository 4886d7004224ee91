/**
 * Routes (RTM_NEWROUTE/RTM_DELROUTE/RTM_GETROUTE).
 *
 * Defaults follow iproute2, so a RouteSpec means what the equivalent `ip route` command means:
 * table main, protocol boot, type unicast; scope link for a unicast route without gateway, else
 * universe. For deletion, protocol/type are left unspecified and scope is "nowhere" (match any),
 * as `ip route del` sends. Pass `scope: RT_SCOPE_UNIVERSE` to get upstream Go netlink's default
 * for gateway-less routes. Tables ≥ 256 go into RTA_TABLE. Host bits of `dst` are cleared.
 *
 * Attribute order (as iproute2 for `dst via gw src s metric p table t dev d mtu m advmss a`):
 * DST, GATEWAY, PREFSRC, PRIORITY, TABLE, OIF, METRICS{MTU, ADVMSS}. An IPv6 default route is
 * sent without RTA_DST (iproute2 sends a zero RTA_DST; the kernel treats both alike).
 */

import { AF_INET, AF_INET6, AF_UNSPEC } from "../sys/constants.ts";
import { attrMap, buildMessage, parseAttrs, readI32, readU16, readU32, readU8 } from "./codec.ts";
import { NLM_F_ACK, NLM_F_APPEND, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST } from "./constants/netlink.ts";
import {
  RTA_DST,
  RTA_GATEWAY,
  RTA_IIF,
  RTA_METRICS,
  RTA_MULTIPATH,
  RTA_OIF,
  RTA_PREFSRC,
  RTA_PRIORITY,
  RTA_TABLE,
  RTAX_ADVMSS,
  RTAX_MTU,
  RTM_DELROUTE,
  RTM_F_CLONED,
  RTM_GETROUTE,
  RTM_NEWROUTE,
  RTMSG_SIZE,
  RTN_ANYCAST,
  RTN_BROADCAST,
  RTN_LOCAL,
  RTN_MULTICAST,
  RTN_NAT,
  RTN_UNICAST,
  RTN_UNSPEC,
  RTNEXTHOP_SIZE,
  RTNH_F_ONLINK,
  RTPROT_BOOT,
  RTPROT_UNSPEC,
  RT_SCOPE_HOST,
  RT_SCOPE_LINK,
  RT_SCOPE_NOWHERE,
  RT_SCOPE_UNIVERSE,
  RT_TABLE_MAIN,
  RT_TABLE_UNSPEC,
} from "./constants/rtnetlink.ts";
import { bytesToIp, familyOf, ipToBytes } from "./_addr-bytes.ts";
import type { NetlinkSocket } from "./socket.ts";

/** A destination prefix; `undefined` in a route means the default route. */
export interface RoutePrefix {
  address: string;
  prefixLen: number;
}

export interface RouteSpec {
  family?: 4 | 6;
  /** undefined = default route (0.0.0.0/0 or ::/0). */
  dst?: RoutePrefix;
  gw?: string;
  oif?: number;
  /** Default RT_TABLE_MAIN. */
  table?: number;
  /** RT_SCOPE_*; default per iproute2 (see module doc). */
  scope?: number;
  /** Metric (RTA_PRIORITY). */
  priority?: number;
  /** RTPROT_*; default boot (add) / unspecified (delete). */
  protocol?: number;
  /** RTN_*; default unicast (add) / unspecified (delete). */
  type?: number;
  /** Preferred source (RTA_PREFSRC). */
  src?: string;
  mtu?: number;
  advmss?: number;
  /** RTNH_F_ONLINK: the gateway is on-link even if no prefix covers it (`ip route ... onlink`). */
  onlink?: boolean;
}

/** One nexthop of a multipath route. */
export interface RouteNexthop {
  gw?: string;
  oif: number;
  flags: number;
  /** rtnh_hops + 1, as `ip route` prints it. */
  weight: number;
}

/** A route as the kernel reports it. */
export interface RouteEntry {
  family: 4 | 6;
  dst?: RoutePrefix;
  gw?: string;
  oif?: number;
  iif?: number;
  table: number;
  scope: number;
  protocol: number;
  type: number;
  /** rtm_flags (RTNH_F_*, RTM_F_*). */
  flags: number;
  priority?: number;
  /** RTA_PREFSRC */
  src?: string;
  mtu?: number;
  advmss?: number;
  multipath?: RouteNexthop[];
}

export interface RouteFilter {
  family?: 4 | 6;
  /** Default: main table only (as `ip route` and upstream's RouteList). 0 (RT_TABLE_UNSPEC) = all tables. */
  table?: number;
  /** Only routes leaving through this ifindex (including multipath nexthops). */
  oif?: number;
}

/** Clears the host bits of `bytes` beyond `prefixLen`. */
function maskPrefix(bytes: Uint8Array, prefixLen: number): Uint8Array {
  const out = bytes.slice();
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, prefixLen - i * 8));
    out[i] = (out[i] ?? 0) & ((0xff00 >> keep) & 0xff);
  }
  return out;
}

function routeFamily(r: RouteSpec): 4 | 6 {
  if (r.family !== undefined) return r.family;
  if (r.dst !== undefined) return familyOf(r.dst.address);
  if (r.gw !== undefined) return familyOf(r.gw);
  if (r.src !== undefined) return familyOf(r.src);
  return 4;
}

function defaultScope(type: number, hasGw: boolean): number {
  if (type === RTN_LOCAL || type === RTN_NAT) return RT_SCOPE_HOST;
  if (type === RTN_BROADCAST || type === RTN_MULTICAST || type === RTN_ANYCAST) return RT_SCOPE_LINK;
  if (type === RTN_UNICAST || type === RTN_UNSPEC) return hasGw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
  return RT_SCOPE_UNIVERSE;
}

/** Builds RTM_NEWROUTE (with the given NLM_F_* create flags) or RTM_DELROUTE for `r`. */
export function buildRouteRequest(cmd: typeof RTM_NEWROUTE | typeof RTM_DELROUTE, nlFlags: number, r: RouteSpec): Uint8Array {
  const family = routeFamily(r);
  const isDel = cmd === RTM_DELROUTE;
  const table = r.table ?? RT_TABLE_MAIN;
  const type = r.type ?? (isDel ? RTN_UNSPEC : RTN_UNICAST);
  const scope = r.scope ?? (isDel ? RT_SCOPE_NOWHERE : defaultScope(type, r.gw !== undefined));
  const protocol = r.protocol ?? (isDel ? RTPROT_UNSPEC : RTPROT_BOOT);
  const max = family === 4 ? 32 : 128;
  const dstLen = r.dst?.prefixLen ?? 0;
  if (!Number.isInteger(dstLen) || dstLen < 0 || dstLen > max) throw new RangeError(`invalid prefix length ${dstLen} for IPv${family}`);
  const dst = r.dst === undefined ? undefined : maskPrefix(ipToBytes(r.dst.address, family), dstLen);
  const hasMetrics = r.mtu !== undefined || r.advmss !== undefined;
  return buildMessage(cmd, nlFlags, (w) => {
    // struct rtmsg
    w.u8(family === 4 ? AF_INET : AF_INET6).u8(dstLen).u8(0).u8(0);
    w.u8(table < 256 ? table : RT_TABLE_UNSPEC).u8(protocol).u8(scope).u8(type);
    w.u32(r.onlink === true ? RTNH_F_ONLINK : 0);
    // A /0 destination is the default route: no RTA_DST.
    if (dst !== undefined && dstLen > 0) w.attr(RTA_DST, dst);
    if (r.gw !== undefined) w.attr(RTA_GATEWAY, ipToBytes(r.gw, family));
    if (r.src !== undefined) w.attr(RTA_PREFSRC, ipToBytes(r.src, family));
    if (r.priority !== undefined) w.attrU32(RTA_PRIORITY, r.priority);
    if (table >= 256) w.attrU32(RTA_TABLE, table);
    if (r.oif !== undefined) w.attrU32(RTA_OIF, r.oif);
    if (hasMetrics) {
      w.nest(RTA_METRICS, () => {
        if (r.mtu !== undefined) w.attrU32(RTAX_MTU, r.mtu);
        if (r.advmss !== undefined) w.attrU32(RTAX_ADVMSS, r.advmss);
      });
    }
  });
}

const NEW = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;

/** RTM_GETROUTE dump, optionally of one family. */
export function buildRouteDumpRequest(family?: 4 | 6): Uint8Array {
  return buildMessage(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, (w) => {
    w.u8(family === undefined ? AF_UNSPEC : family === 4 ? AF_INET : AF_INET6).u8(0).u8(0).u8(0);
    w.u8(0).u8(0).u8(0).u8(0).u32(0);
  });
}

function parseMultipath(b: Uint8Array): RouteNexthop[] {
  const out: RouteNexthop[] = [];
  let off = 0;
  while (off + RTNEXTHOP_SIZE <= b.byteLength) {
    const len = readU16(b, off);
    if (len < RTNEXTHOP_SIZE || off + len > b.byteLength) break;
    const nh: RouteNexthop = { flags: readU8(b, off + 2), weight: readU8(b, off + 3) + 1, oif: readI32(b, off + 4) };
    const attrs = parseAttrs(b.subarray(off + RTNEXTHOP_SIZE, off + len));
    for (const a of attrs) if (a.type === RTA_GATEWAY) nh.gw = bytesToIp(a.data);
    out.push(nh);
    off += (len + 3) & ~3;
  }
  return out;
}

/** Decodes one RTM_NEWROUTE payload; undefined for families other than IPv4/IPv6. */
export function parseRoute(payload: Uint8Array): RouteEntry | undefined {
  const af = readU8(payload, 0);
  if (af !== AF_INET && af !== AF_INET6) return undefined;
  const a = attrMap(payload, RTMSG_SIZE);
  const tableAttr = a.get(RTA_TABLE);
  const r: RouteEntry = {
    family: af === AF_INET ? 4 : 6,
    table: tableAttr === undefined ? readU8(payload, 4) : readU32(tableAttr),
    protocol: readU8(payload, 5),
    scope: readU8(payload, 6),
    type: readU8(payload, 7),
    flags: readU32(payload, 8),
  };
  const dstLen = readU8(payload, 1);
  const dst = a.get(RTA_DST);
  if (dst !== undefined) r.dst = { address: bytesToIp(dst), prefixLen: dstLen };
  const gw = a.get(RTA_GATEWAY);
  if (gw !== undefined) r.gw = bytesToIp(gw);
  const oif = a.get(RTA_OIF);
  if (oif !== undefined) r.oif = readU32(oif);
  const iif = a.get(RTA_IIF);
  if (iif !== undefined) r.iif = readU32(iif);
  const prio = a.get(RTA_PRIORITY);
  if (prio !== undefined) r.priority = readU32(prio);
  const src = a.get(RTA_PREFSRC);
  if (src !== undefined) r.src = bytesToIp(src);
  const metrics = a.get(RTA_METRICS);
  if (metrics !== undefined) {
    const m = attrMap(metrics);
    const mtu = m.get(RTAX_MTU);
    if (mtu !== undefined) r.mtu = readU32(mtu);
    const advmss = m.get(RTAX_ADVMSS);
    if (advmss !== undefined) r.advmss = readU32(advmss);
  }
  const mp = a.get(RTA_MULTIPATH);
  if (mp !== undefined) r.multipath = parseMultipath(mp);
  return r;
}

/**
 * The spec of a listed route, moved to `table` (default: where it is): re-adding it there copies
 * the route as Go's `r := route; r.Table = T; netlink.RouteReplace(&r)` does (destination,
 * gateway, device, source hint, metric, mtu/advmss, scope, protocol, type, onlink); passing it to
 * routeDel deletes exactly that route. Multipath routes are not covered (their nexthops are not
 * copied).
 */
export function routeSpecOf(e: RouteEntry, table: number = e.table): RouteSpec {
  return {
    family: e.family,
    ...(e.dst !== undefined ? { dst: e.dst } : {}),
    ...(e.gw !== undefined ? { gw: e.gw } : {}),
    ...(e.oif !== undefined ? { oif: e.oif } : {}),
    ...(e.src !== undefined ? { src: e.src } : {}),
    ...(e.priority !== undefined ? { priority: e.priority } : {}),
    ...(e.mtu !== undefined ? { mtu: e.mtu } : {}),
    ...(e.advmss !== undefined ? { advmss: e.advmss } : {}),
    ...((e.flags & RTNH_F_ONLINK) !== 0 ? { onlink: true } : {}),
    table,
    scope: e.scope,
    protocol: e.protocol,
    type: e.type,
  };
}

/** Equivalent to `ip route show [table T]` (main table unless `filter.table` says otherwise). */
export function routeList(sock: NetlinkSocket, filter: RouteFilter = {}): RouteEntry[] {
  const table = filter.table ?? RT_TABLE_MAIN;
  const out: RouteEntry[] = [];
  for (const m of sock.request(buildRouteDumpRequest(filter.family), "dump")) {
    if (m.type !== RTM_NEWROUTE) continue;
    const r = parseRoute(m.payload);
    if (r === undefined || (r.flags & RTM_F_CLONED) !== 0) continue;
    if (filter.family !== undefined && r.family !== filter.family) continue;
    if (table !== RT_TABLE_UNSPEC && r.table !== table) continue;
    if (filter.oif !== undefined && r.oif !== filter.oif && !(r.multipath ?? []).some((n) => n.oif === filter.oif)) continue;
    out.push(r);
  }
  return out;
}

function describe(r: RouteSpec): string {
  const dst = r.dst === undefined ? "default" : `${r.dst.address}/${r.dst.prefixLen}`;
  return [dst, r.gw === undefined ? "" : `via ${r.gw}`, r.oif === undefined ? "" : `oif ${r.oif}`, r.table === undefined ? "" : `table ${r.table}`]
    .filter((s) => s !== "")
    .join(" ");
}

/** RTM_NEWROUTE with NLM_F_CREATE|NLM_F_EXCL (`ip route add`). */
export function buildRouteAddRequest(r: RouteSpec): Uint8Array {
  return buildRouteRequest(RTM_NEWROUTE, NEW | NLM_F_EXCL, r);
}
/** RTM_NEWROUTE with NLM_F_CREATE|NLM_F_APPEND (`ip route append`). */
export function buildRouteAppendRequest(r: RouteSpec): Uint8Array {
  return buildRouteRequest(RTM_NEWROUTE, NEW | NLM_F_APPEND, r);
}
/** RTM_NEWROUTE with NLM_F_CREATE|NLM_F_REPLACE (`ip route replace`). */
export function buildRouteReplaceRequest(r: RouteSpec): Uint8Array {
  return buildRouteRequest(RTM_NEWROUTE, NEW | NLM_F_REPLACE, r);
}
/** RTM_DELROUTE (`ip route del`). */
export function buildRouteDelRequest(r: RouteSpec): Uint8Array {
  return buildRouteRequest(RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK, r);
}

/** Equivalent to `ip route add ...` (EEXIST when an identical route exists). */
export function routeAdd(sock: NetlinkSocket, r: RouteSpec): void {
  sock.request(buildRouteAddRequest(r), describe(r));
}
/** Equivalent to `ip route append ...` (adds another route/nexthop for the same prefix, ECMP). */
export function routeAppend(sock: NetlinkSocket, r: RouteSpec): void {
  sock.request(buildRouteAppendRequest(r), describe(r));
}
/** Equivalent to `ip route replace ...`. */
export function routeReplace(sock: NetlinkSocket, r: RouteSpec): void {
  sock.request(buildRouteReplaceRequest(r), describe(r));
}
/** Equivalent to `ip route del ...` (ESRCH when no route matches). */
export function routeDel(sock: NetlinkSocket, r: RouteSpec): void {
  sock.request(buildRouteDelRequest(r), describe(r));
}
