/**
 * Prefix math and CIDR text with Go `net.ParseCIDR` / `IPNet.String()` semantics. A CIDR keeps its
 * host bits (`10.1.2.3/24` stays `10.1.2.3/24`), as CNI's `types.IPNet` does; use
 * {@link networkAddress} for the masked form.
 *
 * Pure: no I/O, no node:net.
 */
import { bitLength, formatIP, maxValue, parseIP, type IPAddr, type IPFamily } from "./addr.ts";

/** An address with a prefix length (host bits kept). */
export interface CIDR {
  readonly ip: IPAddr;
  readonly prefixLen: number;
}

/**
 * What Go's ParseCIDR really produces: for an IPv4-mapped address written in IPv6 form
 * (`::ffff:10.0.0.0/120`) the mask is 128 bits wide while the address is IPv4 — the case Go
 * code reports as "IPNet IP and Mask version mismatch".
 */
export interface ParsedCIDR extends CIDR {
  /** Width of the mask as written: 32 or 128. Differs from the address family's width only for mapped forms. */
  readonly maskWidth: 32 | 128;
}

/** Go `dtoi`: leading decimal digits (leading zeros allowed), all of `s`. */
function parsePrefixLen(s: string): number | null {
  if (!/^[0-9]+$/.test(s) || s.length > 8) return null;
  return Number.parseInt(s, 10);
}

/** Parses `ip/prefix` exactly as Go's `net.ParseCIDR`, reporting the mask width too. */
export function parseCIDRDetailed(s: string): ParsedCIDR | null {
  const slash = s.indexOf("/");
  if (slash < 0) return null;
  const addrText = s.slice(0, slash);
  const ip = parseIP(addrText);
  if (ip === null) return null;
  // An IPv4 address written in IPv6 syntax takes a 128-bit mask in Go.
  const maskWidth: 32 | 128 = addrText.includes(":") ? 128 : 32;
  const prefixLen = parsePrefixLen(s.slice(slash + 1));
  if (prefixLen === null || prefixLen > maskWidth) return null;
  return { ip, prefixLen, maskWidth };
}

/**
 * Parses `ip/prefix` (Go `net.ParseCIDR`), keeping host bits. Returns null when invalid, and for
 * an IPv4-mapped address with a 128-bit mask (see {@link parseCIDRDetailed}).
 */
export function parseCIDR(s: string): CIDR | null {
  const c = parseCIDRDetailed(s);
  if (c === null || c.maskWidth !== bitLength(c.ip.family)) return null;
  return { ip: c.ip, prefixLen: c.prefixLen };
}

/** `ip/prefix` as Go prints an IPNet (host bits kept). */
export function formatCIDR(c: CIDR): string {
  return `${formatIP(c.ip)}/${c.prefixLen}`;
}

/** The netmask of a prefix as an integer of the family's width. */
export function maskBits(prefixLen: number, family: IPFamily): bigint {
  const width = bitLength(family);
  if (!Number.isInteger(prefixLen) || prefixLen < 0 || prefixLen > width) {
    throw new RangeError(`invalid prefix length ${prefixLen} for IPv${family}`);
  }
  return maxValue(family) ^ ((1n << BigInt(width - prefixLen)) - 1n);
}

/** The first address of the prefix (host bits cleared). */
export function networkAddress(ip: IPAddr, prefixLen: number): IPAddr {
  return { family: ip.family, value: ip.value & maskBits(prefixLen, ip.family) };
}

/** The last address of the prefix (all host bits set; the IPv4 broadcast). */
export function lastAddress(ip: IPAddr, prefixLen: number): IPAddr {
  const mask = maskBits(prefixLen, ip.family);
  return { family: ip.family, value: (ip.value & mask) | (maxValue(ip.family) ^ mask) };
}

/** True when `ip` lies in `netIp/prefixLen` (same family; host bits of `netIp` ignored). */
export function containsIP(netIp: IPAddr, prefixLen: number, ip: IPAddr): boolean {
  if (netIp.family !== ip.family) return false;
  const mask = maskBits(prefixLen, ip.family);
  return (netIp.value & mask) === (ip.value & mask);
}

/** Number of addresses in the prefix. */
export function prefixSize(prefixLen: number, family: IPFamily): bigint {
  return 1n << BigInt(bitLength(family) - prefixLen);
}

/** True when the CIDR's address has no host bits set. */
export function isNetworkAddress(c: CIDR): boolean {
  return networkAddress(c.ip, c.prefixLen).value === c.ip.value;
}

/**
 * The prefix length of a netmask given as bytes (Go `net.IPMask.Size`'s ones), or undefined when
 * the ones are not contiguous. Any byte length is accepted; callers check 4/16 where it matters.
 */
export function maskToPrefix(mask: Uint8Array): number | undefined {
  let bits = 0;
  let seenZero = false;
  for (const byte of mask) {
    for (let i = 7; i >= 0; i--) {
      if ((byte >> i) & 1) {
        if (seenZero) return undefined;
        bits++;
      } else seenZero = true;
    }
  }
  return bits;
}
