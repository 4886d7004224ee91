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

/** The exact JSON object an IPAM ADD prints for `version` (HEAD dialect: empty 1.x dns omitted). */
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
  if (family === "0.4" || Object.keys(dns).length > 0) out.dns = dns;
  return out;
}

/** Removes an empty `dns: {}` (the Debian 1.1.1 dialect prints it for 1.x results, HEAD does not). */
export function dropEmptyDns(result: Record<string, any>): Record<string, any> {
  if (String(result.cniVersion).startsWith("1.") && result.dns && Object.keys(result.dns).length === 0) {
    const { dns: _dns, ...rest } = result;
    return rest;
  }
  return result;
}
