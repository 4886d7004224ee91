/**
 * The IPAM result a plugin must print for each spec version, built from version-neutral parts
 * (0.1/0.2 `ip4`/`ip6`, 0.3/0.4 `ips[].version`, 1.x without `version`).
 * Used for exact comparison of parsed results (key order is checked separately where it matters).
 */
import { resultFamily } from "./versions.ts";

export interface NeutralIp {
  address: string;
  gateway?: string;
}

export interface NeutralRoute {
  dst: string;
  gw?: string;
}

export interface NeutralResult {
  ips: NeutralIp[];
  routes?: NeutralRoute[];
  dns?: Record<string, unknown>;
}

const isV6 = (cidr: string): boolean => cidr.includes(":");

/** The exact JSON object an IPAM ADD prints for `version` (`dns` always present, `{}` when empty, as Go 1.1.1). */
export function ipamResultFor(version: string, r: NeutralResult): Record<string, unknown> {
  const dns = r.dns ?? {};
  const family = resultFamily(version);
  if (family === "0.2") {
    const out: Record<string, unknown> = { cniVersion: version };
    for (const [key, v6] of [["ip4", false], ["ip6", true]] as const) {
      const ip = r.ips.find((i) => isV6(i.address) === v6);
      if (!ip) continue;
      const entry: Record<string, unknown> = { ip: ip.address };
      if (ip.gateway) entry.gateway = ip.gateway;
      const routes = (r.routes ?? []).filter((rt) => isV6(rt.dst) === v6);
      if (routes.length > 0) entry.routes = routes;
      out[key] = entry;
    }
    out.dns = dns;
    return out;
  }
  const out: Record<string, unknown> = { cniVersion: version };
  if (r.ips.length > 0) {
    out.ips = r.ips.map((ip) => ({
      ...(family === "0.4" ? { version: isV6(ip.address) ? "6" : "4" } : {}),
      address: ip.address,
      ...(ip.gateway ? { gateway: ip.gateway } : {}),
    }));
  }
  if (r.routes && r.routes.length > 0) out.routes = r.routes;
  out.dns = dns;
  return out;
}
