/**
 * Which address of a range set an allocator may hand out (upstream `backend/allocator/allocator.go`),
 * whatever store records the reservation (host-local's files, cluster-local's etcd keys): a requested
 * address only if it is inside the set, not a gateway and not excluded; otherwise the candidates in
 * round-robin order from the address after the set's last reservation, skipping each range's
 * gateway and excluded addresses and wrapping from the last range to the first.
 */
import { InternalError } from "../cni/errors.ts";
import { formatIP, ipEqual, makeIP, type IPAddr } from "../ip/addr.ts";
import type { CIDR } from "../ip/cidr.ts";
import { excludedSpan, formatExcludedSpan, formatRange, rangeContains, type IPRange } from "./range.ts";
import { formatRangeSet, rangeFor, type RangeSet } from "./range-set.ts";

/** One allocated address: `address` carries the range's prefix length. */
export interface AllocatedIP {
  readonly address: CIDR;
  /** Absent for a point-to-point subnet without a configured gateway. */
  readonly gateway: IPAddr | undefined;
}

/** An allocation failure (code 999, as upstream). */
export class AllocationError extends InternalError {
  override name = "AllocationError";
}

/** A candidate address and the range it belongs to. */
export interface Candidate {
  readonly ip: IPAddr;
  readonly range: IPRange;
}

/** The allocation of `ip` from range `r`. */
export function allocatedIn(r: IPRange, ip: IPAddr): AllocatedIP {
  return { address: { ip, prefixLen: r.subnet.prefixLen }, gateway: r.gateway };
}

/**
 * The range a requested address is allocated from; an AllocationError with upstream's text when it
 * is outside the set, the range's gateway, or excluded (whether it is free is the store's business).
 */
export function requestedRange(set: RangeSet, ip: IPAddr): IPRange {
  const r = rangeFor(set, ip);
  if (r === undefined) throw new AllocationError(`${formatIP(ip)} not in range set ${formatRangeSet(set)}`);
  if (r.gateway !== undefined && ipEqual(ip, r.gateway)) throw new AllocationError(`requested ip ${formatIP(ip)} is subnet's gateway`);
  const excluded = excludedSpan(r, ip);
  if (excluded !== undefined) {
    throw new AllocationError(`requested ip ${formatIP(ip)} is excluded from range ${formatRange(r)} by exclude ${formatExcludedSpan(r, excluded)}`);
  }
  return r;
}

/** Upstream's message when a requested address is reserved already. */
export function requestedTakenError(set: RangeSet, ip: IPAddr): AllocationError {
  return new AllocationError(`requested IP address ${formatIP(ip)} is not available in range set ${formatRangeSet(set)}`);
}

/** Upstream's message when every candidate of a set is taken. */
export function exhaustedError(set: RangeSet): AllocationError {
  return new AllocationError(`no IP addresses available in range set: ${formatRangeSet(set)}`);
}

/**
 * Yields the candidates of a range set in upstream's round-robin order. With a `lastReserved`
 * address inside the set, iteration starts right after it and visits it last; otherwise it starts
 * at the first range's rangeStart. Every range's gateway and excluded addresses are skipped (an
 * excluded prefix in one step, so a large one costs nothing). Each address is yielded once.
 */
export function* iterateCandidates(set: RangeSet, lastReserved: IPAddr | null): Generator<Candidate> {
  const lastIdx = lastReserved === null ? -1 : set.findIndex((r) => rangeContains(r, lastReserved));
  // Runs [from, to] of address values, each within one range, in visiting order.
  const runs: { range: IPRange; from: bigint; to: bigint }[] = [];
  if (lastReserved !== null && lastIdx >= 0) {
    const r = set[lastIdx]!;
    runs.push({ range: r, from: lastReserved.value + 1n, to: r.rangeEnd.value });
    for (let k = 1; k < set.length; k++) {
      const other = set[(lastIdx + k) % set.length]!;
      runs.push({ range: other, from: other.rangeStart.value, to: other.rangeEnd.value });
    }
    runs.push({ range: r, from: r.rangeStart.value, to: lastReserved.value });
  } else {
    for (const r of set) runs.push({ range: r, from: r.rangeStart.value, to: r.rangeEnd.value });
  }
  for (const { range, from, to } of runs) {
    const family = range.subnet.ip.family;
    const gateway = range.gateway?.family === family ? range.gateway.value : -1n;
    let span = 0;
    for (let v = from; v <= to; v++) {
      while (span < range.exclude.length && range.exclude[span]!.last < v) span++;
      const ex = range.exclude[span];
      if (ex !== undefined && ex.first <= v) {
        v = ex.last; // the loop's v++ steps past the span
        continue;
      }
      if (v !== gateway) yield { ip: makeIP(family, v), range };
    }
  }
}
