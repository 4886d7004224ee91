/**
 * Go `%v` renderings of CNI values, for error messages that must read like upstream's
 * (`{10.0.0.0 ffffff00}` for a net.IPNet, `<nil>` for a missing IP). Pure.
 */
import type { IPConfig, Route } from "../cni/types.ts";
import { formatIP } from "../ip/addr.ts";
import { maskBits, networkAddress, parseCIDR } from "../ip/cidr.ts";

function maskHex(prefixLen: number, family: 4 | 6): string {
  const width = family === 4 ? 8 : 32;
  return maskBits(prefixLen, family).toString(16).padStart(width, "0");
}

/** Go `%v` of a net.IPNet value: `{IP MASK}`; `%+v` when `named` (`{IP:… Mask:…}`). */
export function goIPNet(cidr: string, named = false, masked = false): string {
  const c = parseCIDR(cidr);
  if (c === null) return `{${cidr}}`;
  const ip = formatIP(masked ? networkAddress(c.ip, c.prefixLen) : c.ip);
  const mask = maskHex(c.prefixLen, c.ip.family);
  return named ? `{IP:${ip} Mask:${mask}}` : `{${ip} ${mask}}`;
}

/** Go `%v` of a net.IP that may be nil. */
export function goIP(ip: string | undefined): string {
  return ip === undefined || ip === "" ? "<nil>" : ip;
}

/** Upstream `IPConfig.String()` (`%+v`), with the interface index printed as a number. */
export function goIPConfig(ipc: IPConfig): string {
  const iface = ipc.interface === undefined ? "<nil>" : String(ipc.interface);
  return `{Interface:${iface} Address:${goIPNet(ipc.address, true)} Gateway:${goIP(ipc.gateway)}}`;
}

/** Upstream `Route.String()` (`%+v` of the struct). */
export function goRoute(r: Route): string {
  const opt = (n: number | undefined) => (n === undefined ? "<nil>" : String(n));
  return (
    `{Dst:${goIPNet(r.dst, true, false)} GW:${goIP(r.gw)} MTU:${r.mtu ?? 0} AdvMSS:${r.advmss ?? 0} ` +
    `Priority:${r.priority ?? 0} Table:${opt(r.table)} Scope:${opt(r.scope)}}`
  );
}

/** netlink.Scope's String(). */
export function goScope(scope: number): string {
  switch (scope) {
    case 0:
      return "universe";
    case 200:
      return "site";
    case 253:
      return "link";
    case 254:
      return "host";
    case 255:
      return "nowhere";
    default:
      return "unknown";
  }
}
