/**
 * The container side of a portmap call: the prevResult it must be chained after, and the
 * container addresses (one per IP family) its ports are forwarded to.
 */
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import { prevResultFrom } from "../../shared/cni/result/prevresult.ts";
import type { CmdArgs, Result } from "../../shared/cni/types.ts";
import { parseCIDR, type CIDR } from "../../shared/ip/cidr.ts";

/** The container's addresses portmap forwards to, as `ip/prefix` with host bits (like prevResult). */
export interface ContainerIPs {
  v4: CIDR | undefined;
  v6: CIDR | undefined;
}

/**
 * Upstream parseConfig's IP choice: the first IPv4 and the first IPv6 address whose interface index
 * is absent, out of range, or names CNI_IFNAME with a sandbox (host-side interfaces are skipped).
 */
export function containerIPs(prev: Result, ifName: string): ContainerIPs {
  const out: { v4: CIDR | undefined; v6: CIDR | undefined } = { v4: undefined, v6: undefined };
  const ifaces = prev.interfaces ?? [];
  for (const ip of prev.ips ?? []) {
    const c = parseCIDR(ip.address);
    if (c === null) continue;
    const key = c.ip.family === 4 ? "v4" : "v6";
    if (out[key] !== undefined) continue;
    const idx = ip.interface;
    if (idx !== undefined && idx >= 0 && idx < ifaces.length) {
      const iface = ifaces[idx]!;
      if (iface.name !== ifName || (iface.sandbox ?? "") === "") continue;
    }
    out[key] = c;
  }
  return out;
}

/** The config's prevResult, or the upstream error when it is missing. */
export function requirePrevResult(args: CmdArgs, message: string): Result {
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InvalidConfigError(message);
  return prev;
}
