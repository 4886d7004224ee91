/**
 * The routes ptp installs, as pure data (upstream ptp.go setupContainerVeth / setupHostVeth). For
 * an IPAM address `10.1.2.5/24` with gateway `10.1.2.1`:
 * - container: the kernel's connected route `10.1.2.0/24 dev eth0` is replaced by
 *   `10.1.2.1/32 dev eth0 scope link src 10.1.2.5` and `10.1.2.0/24 via 10.1.2.1 dev eth0 src 10.1.2.5`,
 *   so everything in the subnet (other containers) goes through the host;
 * - host: `10.1.2.1/32` on the host veth and `10.1.2.5/32 dev vethX scope host`.
 */
import { formatIP, parseIP, type IPAddr } from "../../shared/ip/addr.ts";
import { networkAddress, parseCIDR } from "../../shared/ip/cidr.ts";
import type { RoutePrefix } from "../../shared/netlink/route.ts";

/** The pieces of one IPAM address that ptp needs. */
export interface PtpAddress {
  family: 4 | 6;
  /** The container address without prefix. */
  ip: string;
  /** The masked network (`10.1.2.0/24`). */
  network: RoutePrefix;
  /** The gateway address. */
  gateway: string;
  /** Full-length prefix of the family: 32 or 128. */
  hostPrefixLen: 32 | 128;
}

/** Splits an IPAM IP entry; undefined gateway or bad text → an error message instead. */
export function ptpAddress(address: string, gateway: string | undefined): PtpAddress | string {
  const c = parseCIDR(address);
  if (c === null) return `invalid IP address ${JSON.stringify(address)}`;
  if (gateway === undefined || gateway === "") return `IPAM result for ${address} has no gateway (ptp needs one per address)`;
  const gw: IPAddr | null = parseIP(gateway);
  if (gw === null || gw.family !== c.ip.family) return `invalid gateway ${JSON.stringify(gateway)} for ${address}`;
  return {
    family: c.ip.family,
    ip: formatIP(c.ip),
    network: { address: formatIP(networkAddress(c.ip, c.prefixLen)), prefixLen: c.prefixLen },
    gateway: formatIP(gw),
    hostPrefixLen: c.ip.family === 4 ? 32 : 128,
  };
}
