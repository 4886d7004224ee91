/**
 * The CNI result of a DHCP lease (upstream HEAD lease.go/options.go): one IPv4 address
 * `yiaddr/<option 1>` with the first router as gateway, and routes from option 121 (classless,
 * RFC 3442) when present and well-formed, else option 33 (classful destinations) followed by a default route via
 * the router. A 0.0.0.0 gateway in option 121 is a link-scope route without gw. Beyond upstream:
 * `dns` from options 6 (nameservers), 15 (domain) and 119 (search list).
 */
import type { DNS, Result, Route } from "../../shared/cni/types.ts";
import { maskToPrefix } from "../../shared/ip/cidr.ts";
import { RT_SCOPE_LINK } from "../../shared/netlink/constants/rtnetlink.ts";
import { decodeDomainList } from "./domain-list.ts";
import {
  OPT_CLASSLESS_ROUTE,
  OPT_DNS_SERVERS,
  OPT_DOMAIN_NAME,
  OPT_DOMAIN_SEARCH,
  OPT_INTERFACE_MTU,
  OPT_ROUTER,
  OPT_STATIC_ROUTE,
  OPT_SUBNET_MASK,
  ipv4At,
  optionIPs,
  type DhcpMessage,
} from "./packet.ts";

export class LeaseResultError extends Error {
  override name = "LeaseResultError";
}

/** The classful prefix of a destination (A /8, B /16, C /24; D/E: /32, see module doc of dhcp.ts). */
export function classfulPrefix(firstOctet: number): number {
  if (firstOctet < 128) return 8;
  if (firstOctet < 192) return 16;
  if (firstOctet < 224) return 24;
  return 32;
}

/** Option 121 (RFC 3442): width, significant octets of the destination, router. */
export function parseClasslessRoutes(v: Uint8Array): Route[] {
  const routes: Route[] = [];
  let p = 0;
  while (p < v.byteLength) {
    const width = v[p++] ?? 0;
    if (width > 32) throw new LeaseResultError(`option 121: invalid prefix length ${width}`);
    const octets = Math.ceil(width / 8);
    if (p + octets + 4 > v.byteLength) throw new LeaseResultError("option 121: truncated route");
    const dst = new Uint8Array(4);
    dst.set(v.subarray(p, p + octets));
    p += octets;
    const gw = ipv4At(v, p);
    p += 4;
    const route: Route = { dst: `${ipv4At(dst, 0)}/${width}` };
    if (gw === "0.0.0.0") route.scope = RT_SCOPE_LINK;
    else route.gw = gw;
    routes.push(route);
  }
  return routes;
}

/**
 * The routes of option 121, or undefined when it is absent, empty or malformed: upstream's client
 * library ignores a malformed option 121 (dhcpv4 `ClasslessStaticRoute` returns nil), so the lease
 * falls back to option 33 and the router instead of failing.
 */
function classlessRoutesOf(ack: DhcpMessage): Route[] | undefined {
  const v = ack.options.get(OPT_CLASSLESS_ROUTE);
  if (v === undefined || v.byteLength === 0) return undefined;
  try {
    return parseClasslessRoutes(v);
  } catch (err) {
    if (err instanceof LeaseResultError) return undefined;
    throw err;
  }
}

/** Option 33: (destination, router) pairs; destinations get their classful mask. */
export function parseStaticRoutes(v: Uint8Array): Route[] {
  const routes: Route[] = [];
  for (let p = 0; p + 8 <= v.byteLength; p += 8) {
    routes.push({ dst: `${ipv4At(v, p)}/${classfulPrefix(v[p] ?? 0)}`, gw: ipv4At(v, p + 4) });
  }
  return routes;
}

/** Builds the CNI result of an ACK; `priority` ≠ 0 becomes every route's metric. */
export function resultFromAck(ack: DhcpMessage, priority: number): Result {
  const mask = ack.options.get(OPT_SUBNET_MASK);
  if (mask === undefined || mask.byteLength !== 4) throw new LeaseResultError("DHCP option Subnet Mask not found in DHCPACK");
  const prefix = maskToPrefix(mask);
  if (prefix === undefined) throw new LeaseResultError(`DHCP option Subnet Mask ${ipv4At(mask, 0)} is not a contiguous mask`);
  const router = optionIPs(ack, OPT_ROUTER)[0];
  const result: Result = { ips: [{ address: `${ack.yiaddr}/${prefix}`, ...(router ? { gateway: router } : {}) }] };
  const classless = classlessRoutesOf(ack);
  let routes: Route[];
  if (classless !== undefined) routes = classless;
  else {
    const staticRoutes = ack.options.get(OPT_STATIC_ROUTE);
    routes = staticRoutes === undefined ? [] : parseStaticRoutes(staticRoutes);
    if (router !== undefined) routes.push({ dst: "0.0.0.0/0", gw: router });
  }
  if (priority !== 0) for (const r of routes) r.priority = priority;
  if (routes.length > 0) result.routes = routes;
  const dns = dnsFromAck(ack);
  if (dns !== undefined) result.dns = dns;
  return result;
}

/** `dns` from options 6, 15 and 119; undefined when the server sent none. A malformed 119 is skipped. */
export function dnsFromAck(ack: DhcpMessage): DNS | undefined {
  const dns: DNS = {};
  const servers = optionIPs(ack, OPT_DNS_SERVERS);
  if (servers.length > 0) dns.nameservers = servers;
  const domain = ack.options.get(OPT_DOMAIN_NAME);
  // Some servers NUL-terminate option 15.
  const domainText = domain === undefined ? "" : new TextDecoder().decode(domain).replace(/\0+$/, "");
  if (domainText !== "") dns.domain = domainText;
  const search = ack.options.get(OPT_DOMAIN_SEARCH);
  if (search !== undefined) {
    try {
      const names = decodeDomainList(search);
      if (names.length > 0) dns.search = names;
    } catch {
      // ignore a malformed search list rather than the lease
    }
  }
  return Object.keys(dns).length > 0 ? dns : undefined;
}

/** Option 26 (interface MTU) when present and usable (RFC 2132 §5.1: at least 68). */
export function mtuFromAck(ack: DhcpMessage): number | undefined {
  const v = ack.options.get(OPT_INTERFACE_MTU);
  if (v === undefined || v.byteLength !== 2) return undefined;
  const mtu = ((v[0] ?? 0) << 8) | (v[1] ?? 0);
  return mtu >= 68 ? mtu : undefined;
}
