/**
 * CHECK of a container interface (upstream's `cmdCheck` of ptp, macvlan, ipvlan, vlan, dummy, tap and
 * host-device, with `ip.ValidateExpectedInterfaceIPs`, `ip.ValidateExpectedRoute` and the plugins'
 * `validateCniContainerInterface`): the prevResult compared with the kernel state seen through a
 * Handle in the container netns. {@link checkContainerLink} is the one skeleton; each plugin adds
 * what only it knows (master, mode, VLAN id, ...). Messages are upstream's, in each plugin's wording.
 */
import { InternalError, messageOf } from "../cni/errors.ts";
import { prevResultFrom } from "../cni/result/prevresult.ts";
import type { CmdArgs, IPConfig, Interface, Result, Route } from "../cni/types.ts";
import type { Handle } from "../netlink/handle.ts";
import type { Link } from "../netlink/link.ts";
import type { RouteEntry } from "../netlink/route.ts";
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

/**
 * How one upstream plugin words its CHECK messages (each carries its own copy of the code, and the
 * copies drifted): the texts are upstream's "Required prevResult missing", "Container Interface name
 * in prevResult: X not found", ... with these variations.
 */
export interface CheckWording {
  /** Before "Required prevResult missing" (upstream ptp, vlan, dummy: `"<type>: "`). */
  prevResultPrefix?: string;
  /** Before the link's "… not found" and "… Mac … doesn't match" messages (upstream ptp, vlan). */
  linkPrefix?: string;
  /** Every message starts lower-case (upstream macvlan). */
  lowerCase?: boolean;
}

function worded(w: CheckWording, text: string): string {
  return w.lowerCase === true ? text.charAt(0).toLowerCase() + text.slice(1) : text;
}

/** The parsed prevResult; `Required prevResult missing` when there is none. */
export function requirePrevResult(args: CmdArgs, w: CheckWording = {}): Result {
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InternalError(worded(w, `${w.prevResultPrefix ?? ""}Required prevResult missing`));
  return prev;
}

/** The prevResult's interface named CNI_IFNAME whose sandbox is CNI_NETNS. */
export function containerInterfaceOf(prev: Result, args: CmdArgs, w: CheckWording = {}): Interface {
  const iface = (prev.interfaces ?? []).find((i) => i.name === args.ifName && (i.sandbox ?? "") === args.netns);
  // Upstream prints the sandbox of the entry it did not find: always empty.
  if (iface === undefined) throw new InternalError(worded(w, `Sandbox in prevResult  doesn't match configured netns: ${args.netns}`));
  if (iface.name === "") throw new InternalError(worded(w, `Container interface name missing in prevResult: ${iface.name}`));
  return iface;
}

/** What the container link must be. */
export interface ExpectedLink {
  /** IFLA_INFO_KIND ("veth", "macvlan", …); undefined = any (host-device). */
  kind?: string;
  /** The kind as upstream names it in the error (ptp: "veth/p2p", tap: "tap"); defaults to `kind`. */
  kindLabel?: string;
  wording?: CheckWording;
}

/** The container link of `iface` exists, has the expected kind and the MAC the result recorded. */
export function validateContainerLink(nl: Handle, iface: Interface, expected: ExpectedLink): Link {
  const w = expected.wording ?? {};
  const prefix = w.linkPrefix ?? "";
  let link: Link;
  try {
    link = nl.linkByName(iface.name);
  } catch (err) {
    throw new InternalError(worded(w, `${prefix}Container Interface name in prevResult: ${iface.name} not found`), { cause: err });
  }
  if (expected.kind !== undefined && link.kind !== expected.kind) {
    throw new InternalError(worded(w, `Error: Container interface ${link.name} not of type ${expected.kindLabel ?? expected.kind}`));
  }
  const mac = iface.mac ?? "";
  if (mac !== "" && mac.toLowerCase() !== (link.mac ?? "").toLowerCase()) {
    throw new InternalError(worded(w, `${prefix}Interface ${iface.name} Mac ${mac} doesn't match container Mac: ${link.mac ?? ""}`));
  }
  return link;
}

/** One plugin's CHECK: the shared steps plus what only it knows. */
export interface ContainerLinkCheck extends ExpectedLink {
  /** `ipam.type`; "" = no IPAM CHECK. */
  ipamType: string;
  /** The master must still exist (macvlan, ipvlan, vlan); runs before the link is looked at. */
  master?(): void;
  /** What else the link must be: mode, VLAN id, MTU, up (macvlan, ipvlan, vlan, dummy). */
  validate?(link: Link, iface: Interface): void;
}

/**
 * CHECK of the container interface, in upstream's order: IPAM CHECK, prevResult, its interface in
 * this sandbox, the master, the link (kind, MAC, `validate`), the addresses, the routes. Returns
 * the prevResult (ptp and bridge also check their masquerade rules against it).
 */
export async function checkContainerLink(args: CmdArgs, nl: Handle, spec: ContainerLinkCheck): Promise<Result> {
  const w = spec.wording ?? {};
  if (spec.ipamType !== "") await args.delegate.run(spec.ipamType, "CHECK");
  const prev = requirePrevResult(args, w);
  const iface = containerInterfaceOf(prev, args, w);
  spec.master?.();
  const link = validateContainerLink(nl, iface, spec);
  spec.validate?.(link, iface);
  validateExpectedInterfaceIPs(nl, args.ifName, prev.ips ?? []);
  validateExpectedRoutes(nl, prev.routes ?? []);
  return prev;
}
