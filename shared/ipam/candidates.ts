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
 * The candidates of a range set in upstream's round-robin order. With a `lastReserved` address
 * inside the set, iteration starts right after it and visits it last; otherwise it starts at the
 * first range's rangeStart. Every range's gateway and excluded addresses are skipped (an excluded
 * prefix in one step, so a large one costs nothing). Each address is given once.
 *
 * An iterator object rather than a generator: an allocation may pass thousands of taken
 * addresses, and resuming a generator costs more than the lookup that rejects one; cluster-local
 * keeps one across its asynchronous store calls.
 */
export function iterateCandidates(set: RangeSet, lastReserved: IPAddr | null): IterableIterator<Candidate> {
  return new CandidateIterator(set, lastReserved);
}

/** A run [from, to] of address values within one range. */
interface Run {
  range: IPRange;
  from: bigint;
  to: bigint;
}

class CandidateIterator implements IterableIterator<Candidate> {
  readonly #runs: Run[] = [];
  #run = 0;
  #v: bigint;
  #span = 0;

  constructor(set: RangeSet, lastReserved: IPAddr | null) {
    const lastIdx = lastReserved === null ? -1 : set.findIndex((r) => rangeContains(r, lastReserved));
    if (lastReserved !== null && lastIdx >= 0) {
      const r = set[lastIdx]!;
      this.#runs.push({ range: r, from: lastReserved.value + 1n, to: r.rangeEnd.value });
      for (let k = 1; k < set.length; k++) {
        const other = set[(lastIdx + k) % set.length]!;
        this.#runs.push({ range: other, from: other.rangeStart.value, to: other.rangeEnd.value });
      }
      this.#runs.push({ range: r, from: r.rangeStart.value, to: lastReserved.value });
    } else {
      for (const r of set) this.#runs.push({ range: r, from: r.rangeStart.value, to: r.rangeEnd.value });
    }
    this.#v = this.#runs[0]?.from ?? 0n;
  }

  [Symbol.iterator](): IterableIterator<Candidate> {
    return this;
  }

  next(): IteratorResult<Candidate> {
    for (;;) {
      const run = this.#runs[this.#run];
      if (run === undefined) return { done: true, value: undefined };
      const { range } = run;
      const v = this.#v;
      if (v > run.to) {
        this.#run++;
        this.#span = 0;
        this.#v = this.#runs[this.#run]?.from ?? 0n;
        continue;
      }
      while (this.#span < range.exclude.length && range.exclude[this.#span]!.last < v) this.#span++;
      const ex = range.exclude[this.#span];
      if (ex !== undefined && ex.first <= v) {
        this.#v = ex.last + 1n;
        continue;
      }
      this.#v = v + 1n;
      const family = range.subnet.ip.family;
      if (range.gateway !== undefined && range.gateway.family === family && range.gateway.value === v) continue;
      return { done: false, value: { ip: makeIP(family, v), range } };
    }
  }
}
