/**
 * One address range of host-local (`ipam.ranges[i][j]`): a subnet with an inclusive
 * [rangeStart, rangeEnd] window and a gateway. Mirrors upstream `backend/allocator/range.go`:
 * defaults and validation messages are upstream's, so operators' greps keep working.
 *
 * Deliberate deviations (DIFFERENCES.md):
 * - upstream accepts an explicit IPv4 `rangeStart` equal to the broadcast address (it then hands
 *   out the broadcast and walks out of the subnet); that is rejected here;
 * - point-to-point subnets (IPv4 /31 and /32, RFC 3021; IPv6 /127 and /128, RFC 6164), which
 *   upstream refuses as "too small to allocate from" (#908): every address of the subnet is
 *   allocatable and there is no default gateway (a configured one is still honoured and skipped);
 * - `exclude`: addresses and prefixes of the subnet that are never handed out.
 */
import { compareIP, formatIP, makeIP, nextIP, parseIP, prevIP, type IPAddr } from "../ip/addr.ts";
import {
  containsIP,
  formatCIDR,
  isNetworkAddress,
  lastAddress,
  networkAddress,
  parseCIDRDetailed,
  type CIDR,
  type ParsedCIDR,
} from "../ip/cidr.ts";

/** An inclusive run of excluded addresses, as integer values of the range's family. */
export interface ExcludedSpan {
  readonly first: bigint;
  readonly last: bigint;
}

/** A validated range with every default filled in. `subnet.ip` is the network address. */
export interface IPRange {
  readonly subnet: CIDR;
  readonly rangeStart: IPAddr;
  readonly rangeEnd: IPAddr;
  /** Absent for a point-to-point subnet without a configured gateway. */
  readonly gateway: IPAddr | undefined;
  /** Excluded addresses: sorted, disjoint, not adjacent, within the subnet. */
  readonly exclude: readonly ExcludedSpan[];
}

/** A range as written in the config (empty IP strings already mapped to "absent"). */
export interface RangeInput {
  subnet?: ParsedCIDR | undefined;
  rangeStart?: IPAddr | undefined;
  rangeEnd?: IPAddr | undefined;
  gateway?: IPAddr | undefined;
  /** `exclude` entries as written: an IP or a CIDR each. */
  exclude?: readonly string[] | undefined;
}

/** A range validation failure; the message is upstream's text. */
export class RangeConfigError extends Error {
  override name = "RangeConfigError";
}

/** Go's `IPNet.String()` for a subnet whose mask may be 128 bits wide over an IPv4 address. */
function formatSubnet(subnet: ParsedCIDR): string {
  if (subnet.ip.family === 4 && subnet.maskWidth === 128) {
    return formatCIDR({ ip: subnet.ip, prefixLen: Math.max(0, subnet.prefixLen - 96) });
  }
  return formatCIDR(subnet);
}

/** Upstream `Range.Contains` during canonicalisation: same family, in the subnet, within the bounds known so far. */
function withinBounds(subnet: CIDR, ip: IPAddr, start?: IPAddr, end?: IPAddr): boolean {
  if (!containsIP(subnet.ip, subnet.prefixLen, ip)) return false;
  if (start !== undefined && ip.family === start.family && compareIP(ip, start) < 0) return false;
  // Upstream compares across families by integer value; an IPv6 end is always "after" an IPv4 ip.
  if (end !== undefined && (end.family === ip.family ? compareIP(ip, end) > 0 : end.family < ip.family)) return false;
  return true;
}

/** True for a subnet whose every address is a host address: IPv4 /31 and /32, IPv6 /127 and /128. */
export function isPointToPoint(subnet: CIDR): boolean {
  return subnet.prefixLen >= (subnet.ip.family === 4 ? 31 : 127);
}

/** Parses and validates the `exclude` entries of a range over `subnet` (sorted, merged). */
function parseExclude(subnet: CIDR, entries: readonly string[]): ExcludedSpan[] {
  const spans: ExcludedSpan[] = [];
  const where = `of subnet ${formatCIDR(subnet)}`;
  for (const entry of entries) {
    let block: CIDR;
    if (entry.includes("/")) {
      const c = parseCIDRDetailed(entry);
      if (c === null || c.maskWidth !== (c.ip.family === 4 ? 32 : 128)) {
        throw new RangeConfigError(`invalid exclude entry ${JSON.stringify(entry)}: not an IP address or CIDR`);
      }
      block = { ip: c.ip, prefixLen: c.prefixLen };
      if (!isNetworkAddress(block)) {
        const net = networkAddress(block.ip, block.prefixLen);
        throw new RangeConfigError(`invalid exclude entry ${entry}: host bits set (the network address is ${formatIP(net)})`);
      }
    } else {
      const ip = parseIP(entry);
      if (ip === null) throw new RangeConfigError(`invalid exclude entry ${JSON.stringify(entry)}: not an IP address or CIDR`);
      block = { ip, prefixLen: ip.family === 4 ? 32 : 128 };
    }
    const last = lastAddress(block.ip, block.prefixLen);
    if (
      block.ip.family !== subnet.ip.family ||
      block.prefixLen < subnet.prefixLen ||
      !containsIP(subnet.ip, subnet.prefixLen, block.ip)
    ) {
      throw new RangeConfigError(`invalid exclude entry ${entry}: not inside ${where}`);
    }
    spans.push({ first: block.ip.value, last: last.value });
  }
  spans.sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  const merged: ExcludedSpan[] = [];
  for (const sp of spans) {
    const prev = merged[merged.length - 1];
    if (prev !== undefined && sp.first <= prev.last + 1n) {
      if (sp.last > prev.last) merged[merged.length - 1] = { first: prev.first, last: sp.last };
    } else {
      merged.push(sp);
    }
  }
  return merged;
}

/** Validates a range and fills in defaults (upstream `Range.Canonicalize`). Throws RangeConfigError. */
export function canonicalizeRange(input: RangeInput): IPRange {
  const parsed = input.subnet;
  if (parsed === undefined) throw new RangeConfigError("IP <nil> not v4 nor v6");
  const width = parsed.ip.family === 4 ? 32 : 128;
  if (parsed.maskWidth !== width) throw new RangeConfigError("IPNet IP and Mask version mismatch");
  const subnet: CIDR = { ip: parsed.ip, prefixLen: parsed.prefixLen };
  if (!isNetworkAddress(subnet)) {
    const net = networkAddress(subnet.ip, subnet.prefixLen);
    throw new RangeConfigError(
      `Network has host bits set. For a subnet mask of length ${subnet.prefixLen} the network address is ${formatIP(net)}`,
    );
  }
  const p2p = isPointToPoint(subnet);
  // Otherwise the prefix is at most /30 (/126), so network+1 and broadcast-1 always exist.
  const first = p2p ? subnet.ip : nextIP(subnet.ip)!;
  const gateway = input.gateway ?? (p2p ? undefined : first);

  let rangeStart = first;
  if (input.rangeStart !== undefined) {
    if (!withinBounds(subnet, input.rangeStart, input.rangeStart, input.rangeEnd)) {
      throw new RangeConfigError(`RangeStart ${formatIP(input.rangeStart)} not in network ${formatCIDR(subnet)}`);
    }
    rangeStart = input.rangeStart;
  }

  const last = lastAddress(subnet.ip, subnet.prefixLen);
  let rangeEnd = subnet.ip.family === 4 && !p2p ? prevIP(last)! : last;
  if (input.rangeEnd !== undefined) {
    if (!withinBounds(subnet, input.rangeEnd, rangeStart)) {
      throw new RangeConfigError(`RangeEnd ${formatIP(input.rangeEnd)} not in network ${formatCIDR(subnet)}`);
    }
    rangeEnd = input.rangeEnd;
  }
  if (compareIP(rangeStart, rangeEnd) > 0) {
    throw new RangeConfigError(`RangeStart ${formatIP(rangeStart)} is after RangeEnd ${formatIP(rangeEnd)}`);
  }
  return { subnet, rangeStart, rangeEnd, gateway, exclude: parseExclude(subnet, input.exclude ?? []) };
}

/** The excluded span holding `ip`, if any. */
export function excludedSpan(r: IPRange, ip: IPAddr): ExcludedSpan | undefined {
  if (ip.family !== r.subnet.ip.family) return undefined;
  return r.exclude.find((sp) => ip.value >= sp.first && ip.value <= sp.last);
}

/** An excluded span as text: its address, or `first-last`. */
export function formatExcludedSpan(r: IPRange, sp: ExcludedSpan): string {
  const f = r.subnet.ip.family;
  return sp.first === sp.last ? formatIP(makeIP(f, sp.first)) : `${formatIP(makeIP(f, sp.first))}-${formatIP(makeIP(f, sp.last))}`;
}

/** How many addresses of [rangeStart, rangeEnd] are not excluded. */
export function allocatableCount(r: IPRange): bigint {
  let n = r.rangeEnd.value - r.rangeStart.value + 1n;
  for (const sp of r.exclude) {
    const lo = sp.first > r.rangeStart.value ? sp.first : r.rangeStart.value;
    const hi = sp.last < r.rangeEnd.value ? sp.last : r.rangeEnd.value;
    if (lo <= hi) n -= hi - lo + 1n;
  }
  return n;
}

/** True when `ip` lies in the subnet and within [rangeStart, rangeEnd] (upstream `Range.Contains`). */
export function rangeContains(r: IPRange, ip: IPAddr): boolean {
  return (
    ip.family === r.subnet.ip.family &&
    containsIP(r.subnet.ip, r.subnet.prefixLen, ip) &&
    compareIP(ip, r.rangeStart) >= 0 &&
    compareIP(ip, r.rangeEnd) <= 0
  );
}

/** True when the two ranges share an address (same family, either bound of one inside the other). */
export function rangesOverlap(a: IPRange, b: IPRange): boolean {
  if (a.rangeStart.family !== b.rangeStart.family) return false;
  return (
    rangeContains(a, b.rangeStart) ||
    rangeContains(a, b.rangeEnd) ||
    rangeContains(b, a.rangeStart) ||
    rangeContains(b, a.rangeEnd)
  );
}

/** `start-end`, as upstream prints a range in messages. */
export function formatRange(r: IPRange): string {
  return `${formatIP(r.rangeStart)}-${formatIP(r.rangeEnd)}`;
}
