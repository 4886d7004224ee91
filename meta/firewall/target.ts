/**
 * What the firewall plugin acts on, taken from prevResult: the container's addresses as host
 * prefixes (upstream `ipString`: `<ip>/32`, `<ip>/128`) and, for an ingress policy, the bridge
 * (prevResult.interfaces[0], as upstream — the bridge plugin puts its bridge there).
 */
import { InternalError } from "../../shared/cni/errors.ts";
import { formatIP, type IPFamily } from "../../shared/ip/addr.ts";
import { parseCIDR } from "../../shared/ip/cidr.ts";
import type { Result } from "../../shared/cni/types.ts";
import { validBridgeName, type IngressPolicy } from "./config.ts";

export interface HostAddress {
  family: IPFamily;
  /** Address without prefix: `10.1.2.3`, `fd00::3`. */
  ip: string;
  /** `10.1.2.3/32`, `fd00::3/128`. */
  host: string;
}

/** The prevResult's addresses as host prefixes (unparsable entries are refused). */
export function hostAddresses(result: Result | undefined): HostAddress[] {
  const out: HostAddress[] = [];
  for (const ipc of result?.ips ?? []) {
    const c = parseCIDR(ipc.address);
    if (c === null) throw new InternalError(`invalid address ${JSON.stringify(ipc.address)} in prevResult`);
    const ip = formatIP(c.ip);
    out.push({ family: c.ip.family, ip, host: `${ip}/${c.ip.family === 6 ? 128 : 32}` });
  }
  return out;
}

/** Upstream findProtos: the families of prevResult's addresses, or both when it has none. */
export function policyFamilies(addrs: readonly HostAddress[]): IPFamily[] {
  const fams = new Set(addrs.map((a) => a.family));
  return fams.size === 0 ? [4, 6] : ([4, 6] as const).filter((f) => fams.has(f));
}

/** Upstream's bridge-name checks for same-bridge / isolated (messages as upstream). */
export function bridgeNameFor(policy: IngressPolicy, result: Result): string {
  const first = result.interfaces?.[0];
  if (first === undefined) {
    throw new InternalError(`interface needs to be set for ingress policy ${JSON.stringify(policy)}, make sure to chain "firewall" plugin with "bridge"`);
  }
  if (first.name === "") throw new InternalError("got empty bridge name");
  if (!validBridgeName(first.name)) throw new InternalError(`invalid bridge name ${JSON.stringify(first.name)} in prevResult`);
  return first.name;
}
