/**
 * Applying an IPAM result to one interface (upstream pkg/ipam/ipam_linux.go `ConfigureIface`, HEAD):
 * addresses whose `interface` index names `ifName` (IPs without an index are skipped), the IPv6
 * sysctls before the first IPv6 address, link up, IPv6 DAD settle (bounded), then the routes, each
 * falling back to the first gateway of its family, with priority→metric, table and scope, added
 * with "append" so equal destinations form ECMP routes.
 *
 * The netlink work uses `nl` (a socket already inside the container netns); only the /proc/sys
 * writes enter `ns`, each in its own short synchronous window.
 */
import { annotate, annotateError } from "../error/annotate.ts";
import { InternalError, messageOf } from "../cni/errors.ts";
import type { Result } from "../cni/types.ts";
import { Handle } from "../netlink/handle.ts";
import type { Link } from "../netlink/link.ts";
import type { RouteSpec } from "../netlink/route.ts";
import { RT_SCOPE_UNIVERSE } from "../netlink/constants/rtnetlink.ts";
import { withNetNS } from "../netns/enter.ts";
import type { NetNS } from "../netns/netns.ts";
import { sysctlGet, sysctlSet } from "../sysctl/sysctl.ts";
import { formatIP } from "../ip/addr.ts";
import { networkAddress, parseCIDR, type CIDR } from "../ip/cidr.ts";
import { goIP, goIPConfig, goIPNet, goScope } from "./go-format.ts";
import { settleIPv6 } from "./settle.ts";

/** How long ConfigureIface waits for IPv6 DAD (upstream HEAD: 5 s). */
export const IPV6_SETTLE_TIMEOUT_MS = 5000;

export interface ConfigureIfaceOptions {
  /** Handle on the netns that holds `ifName`. */
  nl: Handle;
  /** That netns (for the sysctl writes). */
  ns: NetNS;
  ifName: string;
  result: Result;
  /** Where a warning goes (the invocation's stderr, CmdArgs.stderr). */
  warn(text: string): void;
}

function parseAddress(text: string, what: string): CIDR {
  const c = parseCIDR(text);
  if (c === null) throw new InternalError(`invalid ${what} ${JSON.stringify(text)}`);
  return c;
}

/** `sysctl net.ipv6.conf.{lo,IF}.disable_ipv6=0` and `net.ipv6.conf.IF.keep_addr_on_down=1`, inside `ns`. */
function enableIPv6(ns: NetNS, ifName: string, warn: (text: string) => void): void {
  for (const iface of ["lo", ifName]) {
    const key = `net/ipv6/conf/${iface}/disable_ipv6`;
    let value: string;
    try {
      value = withNetNS(ns, () => sysctlGet(key));
    } catch (err) {
      warn(`ipam_linux: failed to read sysctl ${JSON.stringify(key.replaceAll("/", "."))}: ${messageOf(err)}\n`);
      continue;
    }
    if (value === "0") continue;
    try {
      withNetNS(ns, () => sysctlSet(key, "0"));
    } catch (err) {
      throw annotateError(`failed to enable IPv6 for interface ${JSON.stringify(iface)} (${key.replaceAll("/", ".")}=${value})`, err);
    }
  }
  const keep = `net/ipv6/conf/${ifName}/keep_addr_on_down`;
  try {
    withNetNS(ns, () => sysctlSet(keep, "1", { ignoreMissing: true }));
  } catch (err) {
    throw annotateError(`failed to set ${keep.replaceAll("/", ".")}=1`, err);
  }
}

/** Applies `result`'s addresses and routes to `ifName` and brings it up. */
export function configureIface(o: ConfigureIfaceOptions): void {
  const { nl, ns, ifName, result } = o;
  const interfaces = result.interfaces ?? [];
  if (interfaces.length === 0) throw new InternalError("no interfaces to configure");
  let link: Link;
  try {
    link = nl.linkByName(ifName);
  } catch (err) {
    throw annotateError(`failed to lookup ${JSON.stringify(ifName)}`, err);
  }

  let v4gw: string | undefined;
  let v6gw: string | undefined;
  let ipv6Enabled = false;
  for (const ipc of result.ips ?? []) {
    if (ipc.interface === undefined) continue;
    const idx = ipc.interface;
    if (idx < 0 || idx >= interfaces.length || interfaces[idx]?.name !== ifName) {
      throw new InternalError(`failed to add IP addr ${goIPConfig(ipc)} to ${JSON.stringify(ifName)}: invalid interface index`);
    }
    const addr = parseAddress(ipc.address, "address");
    if (addr.ip.family === 6 && !ipv6Enabled) {
      enableIPv6(ns, ifName, o.warn);
      ipv6Enabled = true;
    }
    try {
      nl.addrAdd(link.index, { address: formatIP(addr.ip), prefixLen: addr.prefixLen, family: addr.ip.family });
    } catch (err) {
      throw annotateError(`failed to add IP addr ${goIPConfig(ipc)} to ${JSON.stringify(ifName)}`, err);
    }
    const gw = ipc.gateway;
    if (gw !== undefined && gw !== "") {
      if (gw.includes(":")) v6gw ??= gw;
      else v4gw ??= gw;
    }
  }

  try {
    nl.linkSetUp(link.index);
  } catch (err) {
    throw annotateError(`failed to set ${JSON.stringify(ifName)} UP`, err);
  }

  if (v6gw !== undefined) {
    try {
      settleIPv6(nl, link.index, IPV6_SETTLE_TIMEOUT_MS);
    } catch (err) {
      throw annotateError(`failed while waiting for addresses to settle`, err);
    }
  }

  for (const r of result.routes ?? []) {
    const dst = parseAddress(r.dst, "route destination");
    const isV4 = dst.ip.family === 4;
    const gw = r.gw !== undefined && r.gw !== "" ? r.gw : isV4 ? v4gw : v6gw;
    const scope = r.scope ?? RT_SCOPE_UNIVERSE;
    const table = r.table ?? 0;
    const spec: RouteSpec = {
      family: dst.ip.family,
      dst: { address: formatIP(networkAddress(dst.ip, dst.prefixLen)), prefixLen: dst.prefixLen },
      oif: link.index,
      scope,
      ...(gw !== undefined ? { gw } : {}),
      ...(r.priority !== undefined && r.priority !== 0 ? { priority: r.priority } : {}),
      ...(r.table !== undefined ? { table: r.table } : {}),
      ...(r.mtu !== undefined && r.mtu > 0 ? { mtu: r.mtu } : {}),
      ...(r.advmss !== undefined && r.advmss > 0 ? { advmss: r.advmss } : {}),
    };
    const route = `'${goIPNet(r.dst)} via ${goIP(gw)} dev ${ifName} metric ${r.priority ?? 0} (Scope: ${goScope(scope)}, Table: ${table})'`;
    annotate(`failed to add route ${route}`, () => nl.routeAppend(spec));
  }
}
