/**
 * CHECK helpers (upstream `ip.ValidateExpectedInterfaceIPs`, `ip.ValidateExpectedRoute` and the
 * plugins' `validateCniContainerInterface`), comparing a prevResult with the kernel state seen
 * through a Handle in the container netns. Messages are upstream's.
 */
import { InternalError, messageOf } from "../cni/errors.ts";
import type { IPConfig, Interface, Result, Route } from "../cni/types.ts";
import type { Handle, Link, RouteEntry } from "../netlink/index.ts";
import { formatIP, parseIP } from "../ip/addr.ts";
import { networkAddress, parseCIDR, type CIDR } from "../ip/cidr.ts";
import { goIP, goRoute } from "./go-format.ts";

/** Canonical text of an address (so `fd00::0:1` equals `fd00::1`). */
function canon(ip: string): string {
  const p = parseIP(ip);
  return p === null ? ip : formatIP(p);
}

function sameOptionalIP(a: string | undefined, b: string | undefined): boolean {
  const x = a === undefined || a === "" ? undefined : canon(a);
  const y = b === undefined || b === "" ? undefined : canon(b);
  return x === y;
}

function routeHasDst(r: RouteEntry, net: CIDR): boolean {
  if (net.prefixLen === 0) return r.dst === undefined || r.dst.prefixLen === 0;
  if (r.dst === undefined || r.dst.prefixLen !== net.prefixLen) return false;
  return canon(r.dst.address) === formatIP(networkAddress(net.ip, net.prefixLen));
}

/**
 * Every IP must be on `ifName` (same address and prefix length) and the main table must hold a route
 * to the IP's network.
 */
export function validateExpectedInterfaceIPs(nl: Handle, ifName: string, ips: readonly IPConfig[]): void {
  for (const ipc of ips) {
    const want = parseCIDR(ipc.address);
    if (want === null) throw new InternalError(`Failed to match addr ${ipc.address} on interface ${ifName}`);
    let link: Link;
    try {
      link = nl.linkByName(ifName);
    } catch (err) {
      throw new InternalError(`Cannot find container link ${ifName}`, { cause: err });
    }
    let addrs;
    try {
      addrs = nl.addrList({ index: link.index });
    } catch (err) {
      throw new InternalError("Cannot obtain List of IP Addresses", { cause: err });
    }
    const wantText = formatIP(want.ip);
    const match = addrs.some((a) => a.prefixLen === want.prefixLen && canon(a.address) === wantText);
    if (!match) throw new InternalError(`Failed to match addr ${ipc.address} on interface ${ifName}`);

    let routes: RouteEntry[];
    try {
      routes = nl.routeList({ family: want.ip.family });
    } catch (err) {
      throw new InternalError(`Error ${messageOf(err)} trying to find Gateway ${goIP(ipc.gateway)} for interface ${ifName}`, { cause: err });
    }
    if (!routes.some((r) => routeHasDst(r, want))) {
      throw new InternalError(`Failed to find Gateway ${goIP(ipc.gateway)} for interface ${ifName}`);
    }
  }
}

/**
 * Every route must be in the main table: same destination and gateway (a missing gateway matches
 * only gateway-less routes); a default route matches any default route, whatever its gateway.
 */
export function validateExpectedRoutes(nl: Handle, routes: readonly Route[]): void {
  for (const route of routes) {
    const dst = parseCIDR(route.dst);
    if (dst === null) throw new InternalError(`Invalid static route found ${goRoute(route)}`);
    let table: RouteEntry[];
    try {
      table = nl.routeList({ family: dst.ip.family });
    } catch (err) {
      throw new InternalError(`Expected Route ${goRoute(route)} not route table lookup error ${messageOf(err)}`, { cause: err });
    }
    const isDefault = dst.prefixLen === 0 && dst.ip.value === 0n;
    const found = table.some((r) => {
      if (isDefault) return r.dst === undefined || r.dst.prefixLen === 0;
      // A result route without `gw` was installed via the interface's gateway by configureIface, so
      // any gateway matches (upstream compares it with "no gateway" and fails CHECK for such routes).
      return routeHasDst(r, dst) && (route.gw === undefined || route.gw === "" || sameOptionalIP(r.gw, route.gw));
    });
    if (!found) throw new InternalError(`Expected Route ${goRoute(route)} not found in routing table`);
  }
}

export interface ExpectedLink {
  /** IFLA_INFO_KIND the link must have ("veth", "macvlan", ...). */
  kind?: string;
  /** MAC the link must have (case-insensitive); empty or undefined = not checked. */
  mac?: string;
  /** Prefix of the "not found" and MAC messages (upstream ptp: `"ptp: "`, bridge: `""`). */
  prefix?: string;
  /** Kind as named in the error (upstream ptp: `"veth/p2p"`); defaults to `kind`. */
  kindLabel?: string;
}

/** The container link exists, has the expected kind and MAC (upstream validateCniContainerInterface). */
export function validateLinkKind(nl: Handle, ifName: string, expected: ExpectedLink): Link {
  const prefix = expected.prefix ?? "";
  let link: Link;
  try {
    link = nl.linkByName(ifName);
  } catch (err) {
    throw new InternalError(`${prefix}Container Interface name in prevResult: ${ifName} not found`, { cause: err });
  }
  if (expected.kind !== undefined && link.kind !== expected.kind) {
    throw new InternalError(`Error: Container interface ${link.name} not of type ${expected.kindLabel ?? expected.kind}`);
  }
  if (expected.mac !== undefined && expected.mac !== "" && expected.mac.toLowerCase() !== (link.mac ?? "").toLowerCase()) {
    throw new InternalError(`${prefix}Interface ${ifName} Mac ${expected.mac} doesn't match container Mac: ${link.mac ?? ""}`);
  }
  return link;
}

/** The prevResult interface named `ifName` whose sandbox is `sandbox`, with its index. */
export function findResultInterface(result: Result, ifName: string, sandbox: string): { index: number; iface: Interface } | undefined {
  const list = result.interfaces ?? [];
  for (let index = 0; index < list.length; index++) {
    const iface = list[index];
    if (iface !== undefined && iface.name === ifName && (iface.sandbox ?? "") === sandbox) return { index, iface };
  }
  return undefined;
}
