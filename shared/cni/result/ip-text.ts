/**
 * IP and CIDR text as it appears in results: validated and printed the way Go's `net.IP` and
 * `types.IPNet` round-trip it (`3ffe:ffff:0:01ff::1/64` → `3ffe:ffff:0:1ff::1/64`, host bits kept).
 * Errors carry Go's `net.ParseError` wording.
 */
import { formatIP, parseIP, type IPAddr } from "../../ip/addr.ts";
import { parseCIDRDetailed } from "../../ip/cidr.ts";

export interface CanonicalCIDR {
  /** The CIDR as Go prints it. */
  text: string;
  /** True for an IPv4 address (including an IPv4-mapped IPv6 spelling, as Go's `To4`). */
  v4: boolean;
  /** The address (host bits kept). */
  ip: IPAddr;
  /** The prefix length Go effectively uses (and prints) for this address family. */
  prefixLen: number;
}

/**
 * Parses a CIDR (Go `net.ParseCIDR`) and prints it back as Go's `IPNet.String()` does. For an
 * IPv4-mapped address written with a 128-bit mask Go prints the IPv4 address with the low 32 bits of
 * the mask (`::ffff:1.2.3.4/120` → `1.2.3.4/24`) [observed with the 1.1.1 binaries].
 */
export function canonicalCIDR(s: string): CanonicalCIDR {
  const c = parseCIDRDetailed(s);
  if (c === null) throw new Error(`invalid CIDR address: ${s}`);
  const v4 = c.ip.family === 4;
  const prefixLen = v4 && c.maskWidth === 128 ? Math.max(0, c.prefixLen - 96) : c.prefixLen;
  return { text: `${formatIP(c.ip)}/${prefixLen}`, v4, ip: c.ip, prefixLen };
}

/** Parses an IP (Go `net.ParseIP`) and prints it as Go's `IP.String()` does. */
export function canonicalIP(s: string): string {
  const ip = parseIP(s);
  if (ip === null) throw new Error(`invalid IP address: ${s}`);
  return formatIP(ip);
}
