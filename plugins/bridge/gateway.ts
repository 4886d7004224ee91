/**
 * Gateways of a bridge network (upstream bridge.go calcGateways / ensureAddr): which gateway each
 * result IP gets, the default routes `isDefaultGateway` adds, and putting the gateway addresses on
 * the bridge (or on `<bridge>.<vlan>`), honouring `forceAddress`.
 */
import { InternalError } from "../../shared/cni/errors.ts";
import type { Result } from "../../shared/cni/types.ts";
import { annotateError } from "../../shared/error/annotate.ts";
import { formatIP, nextIP, parseIP, type IPFamily } from "../../shared/ip/addr.ts";
import { containsIP, networkAddress, parseCIDR, type CIDR } from "../../shared/ip/cidr.ts";
import { isExists } from "../../shared/netlink/errors.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";

/** Gateway addresses (gw/prefix of the IP) to put on the bridge, per family. */
export interface Gateways {
  4: CIDR[];
  6: CIDR[];
}

const DEFAULT_DST: Record<IPFamily, string> = { 4: "0.0.0.0/0", 6: "::/0" };

function familyOfCidr(s: string): IPFamily | undefined {
  return parseCIDR(s)?.ip.family;
}

/**
 * Completes `result` in place: every IP refers to interface 2 (the container veth), gets the
 * first address of its subnet as gateway when it has none and `isGateway`; with `isDefaultGateway`
 * a default route via that gateway is appended per family unless the IPAM result already has a
 * default route with a gateway for it. Returns the gateway addresses for the bridge.
 */
export function calcGateways(result: Result, o: { isGateway: boolean; isDefaultGateway: boolean }): Gateways {
  const gws: Gateways = { 4: [], 6: [] };
  const defaultFound: Record<IPFamily, boolean> = { 4: false, 6: false };
  const routes = (result.routes ??= []);
  for (const ipc of result.ips ?? []) {
    const addr = parseCIDR(ipc.address);
    if (addr === null) throw new InternalError(`Unknown IP object: ${JSON.stringify(ipc)}`);
    const family = addr.ip.family;
    ipc.interface = 2;
    if ((ipc.gateway === undefined || ipc.gateway === "") && o.isGateway) {
      const gw = nextIP(networkAddress(addr.ip, addr.prefixLen));
      if (gw !== null) ipc.gateway = formatIP(gw);
    }
    if (o.isDefaultGateway && !defaultFound[family]) {
      for (const r of routes) {
        if (r.gw !== undefined && r.gw !== "" && familyOfCidr(r.dst) === family && parseCIDR(r.dst)?.prefixLen === 0) {
          defaultFound[family] = true;
          break;
        }
      }
      if (!defaultFound[family]) {
        routes.push({ dst: DEFAULT_DST[family], ...(ipc.gateway ? { gw: ipc.gateway } : {}) });
        defaultFound[family] = true;
      }
    }
    if (o.isGateway && ipc.gateway) {
      const gwIp = parseIP(ipc.gateway);
      if (gwIp !== null) gws[family].push({ ip: gwIp, prefixLen: addr.prefixLen });
    }
  }
  if (routes.length === 0) delete result.routes;
  return gws;
}

function overlaps(a: CIDR, b: CIDR): boolean {
  return containsIP(a.ip, a.prefixLen, b.ip) || containsIP(b.ip, b.prefixLen, a.ip);
}

/**
 * Puts `gw` on `link`: an identical address is fine; any other IPv4 address, or an overlapping IPv6
 * one, is replaced when `forceAddress`, else it is an error naming both. After adding, re-sets the
 * link's own MAC (pins a bridge's MAC, upstream's cni#285 fix).
 */
export function ensureAddr(nl: Handle, link: Link, gw: CIDR, forceAddress: boolean): void {
  const family = gw.ip.family;
  const want = `${formatIP(gw.ip)}/${gw.prefixLen}`;
  for (const a of nl.addrList({ index: link.index, family })) {
    const have = parseCIDR(`${a.address}/${a.prefixLen}`);
    if (have === null) continue;
    if (`${formatIP(have.ip)}/${have.prefixLen}` === want) return;
    if (family === 4 || overlaps(have, gw)) {
      if (!forceAddress) throw new InternalError(`${JSON.stringify(link.name)} already has an IP address different from ${want}`);
      try {
        nl.addrDel(link.index, { address: a.address, prefixLen: a.prefixLen, family });
      } catch (err) {
        throw annotateError(`could not remove IP address from ${JSON.stringify(link.name)}`, err);
      }
    }
  }
  try {
    nl.addrAdd(link.index, { address: formatIP(gw.ip), prefixLen: gw.prefixLen, family });
  } catch (err) {
    if (!isExists(err)) throw annotateError(`could not add IP address to ${JSON.stringify(link.name)}`, err);
  }
  if (link.mac !== undefined && link.mac !== "00:00:00:00:00:00") {
    try {
      nl.linkSetMAC(link.index, link.mac);
    } catch (err) {
      throw annotateError(`could not set bridge's mac`, err);
    }
  }
}
