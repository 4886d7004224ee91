/**
 * One address range of host-local (`ipam.ranges[i][j]`): a subnet with an inclusive
 * [rangeStart, rangeEnd] window and a gateway. Mirrors upstream `backend/allocator/range.go`:
 * defaults and validation messages are upstream's, so operators' greps keep working.
 *
 * Deliberate deviation: upstream accepts an explicit IPv4 `rangeStart` equal to the broadcast
 * address (it then hands out the broadcast and walks out of the subnet); that is rejected here.
 */
import { compareIP, formatIP, nextIP, prevIP, type IPAddr } from "../../../shared/ip/addr.ts";
import {
  containsIP,
  formatCIDR,
  isNetworkAddress,
  lastAddress,
  networkAddress,
  type CIDR,
  type ParsedCIDR,
} from "../../../shared/ip/cidr.ts";

/** A validated range with every default filled in. `subnet.ip` is the network address. */
export interface IPRange {
  readonly subnet: CIDR;
  readonly rangeStart: IPAddr;
  readonly rangeEnd: IPAddr;
  readonly gateway: IPAddr;
}

/** A range as written in the config (empty IP strings already mapped to "absent"). */
export interface RangeInput {
  subnet?: ParsedCIDR | undefined;
  rangeStart?: IPAddr | undefined;
  rangeEnd?: IPAddr | undefined;
  gateway?: IPAddr | undefined;
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

/** Validates a range and fills in defaults (upstream `Range.Canonicalize`). Throws RangeConfigError. */
export function canonicalizeRange(input: RangeInput): IPRange {
  const parsed = input.subnet;
  if (parsed === undefined) throw new RangeConfigError("IP <nil> not v4 nor v6");
  if (parsed.prefixLen > parsed.maskWidth - 2) {
    throw new RangeConfigError(`Network ${formatSubnet(parsed)} too small to allocate from`);
  }
  const width = parsed.ip.family === 4 ? 32 : 128;
  if (parsed.maskWidth !== width) throw new RangeConfigError("IPNet IP and Mask version mismatch");
  const subnet: CIDR = { ip: parsed.ip, prefixLen: parsed.prefixLen };
  if (!isNetworkAddress(subnet)) {
    const net = networkAddress(subnet.ip, subnet.prefixLen);
    throw new RangeConfigError(
      `Network has host bits set. For a subnet mask of length ${subnet.prefixLen} the network address is ${formatIP(net)}`,
    );
  }
  // The prefix is at most /30 (/126), so network+1 and broadcast-1 always exist.
  const first = nextIP(subnet.ip)!;
  const gateway = input.gateway ?? first;

  let rangeStart = first;
  if (input.rangeStart !== undefined) {
    if (!withinBounds(subnet, input.rangeStart, input.rangeStart, input.rangeEnd)) {
      throw new RangeConfigError(`RangeStart ${formatIP(input.rangeStart)} not in network ${formatCIDR(subnet)}`);
    }
    rangeStart = input.rangeStart;
  }

  const last = lastAddress(subnet.ip, subnet.prefixLen);
  let rangeEnd = subnet.ip.family === 4 ? prevIP(last)! : last;
  if (input.rangeEnd !== undefined) {
    if (!withinBounds(subnet, input.rangeEnd, rangeStart)) {
      throw new RangeConfigError(`RangeEnd ${formatIP(input.rangeEnd)} not in network ${formatCIDR(subnet)}`);
    }
    rangeEnd = input.rangeEnd;
  }
  if (compareIP(rangeStart, rangeEnd) > 0) {
    throw new RangeConfigError(`RangeStart ${formatIP(rangeStart)} is after RangeEnd ${formatIP(rangeEnd)}`);
  }
  return { subnet, rangeStart, rangeEnd, gateway };
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
