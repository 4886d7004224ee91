/**
 * Allocation of one address from one range set (upstream `backend/allocator/allocator.go`):
 * a requested address if one was asked for, else round robin from the address after the range
 * set's `last_reserved_ip`, skipping each range's gateway and excluded addresses and wrapping from
 * the last range to the first. Each call holds the store lock for its whole duration.
 */
import { InternalError } from "../../../shared/cni/errors.ts";
import { formatIP, ipEqual, type IPAddr } from "../../../shared/ip/addr.ts";
import type { CIDR } from "../../../shared/ip/cidr.ts";
import type { Store } from "../store/store.ts";
import { excludedSpan, formatExcludedSpan, formatRange, rangeContains, type IPRange } from "./range.ts";
import { formatRangeSet, rangeFor, rangeSetContains, type RangeSet } from "./range-set.ts";

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

/**
 * Offers the candidates of a range set to `accept` in upstream's round-robin order and returns
 * the first one it accepts (undefined when it takes none). With a `lastReserved` address inside
 * the set, iteration starts right after it and visits it last; otherwise it starts at the first
 * range's rangeStart. Every range's gateway and excluded addresses are skipped (an excluded
 * prefix in one step, so a large one costs nothing). Each address is offered once. (A callback,
 * not a generator: an allocation may pass thousands of taken addresses, and resuming a generator
 * costs more than the lookup that rejects one.)
 */
export function firstCandidate(set: RangeSet, lastReserved: IPAddr | null, accept: (c: Candidate) => boolean): Candidate | undefined {
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
      if (v === gateway) continue;
      const c: Candidate = { ip: { family, value: v }, range }; // within the range: a valid address
      if (accept(c)) return c;
    }
  }
  return undefined;
}

export class IPAllocator {
  readonly #set: RangeSet;
  readonly #store: Store;
  readonly #rangeID: string;

  /** `rangeIndex` is the set's position in the config (names `last_reserved_ip.<index>`). */
  constructor(set: RangeSet, store: Store, rangeIndex: number) {
    this.#set = set;
    this.#store = store;
    this.#rangeID = String(rangeIndex);
  }

  /** Allocates `requested` (when given) or the next free address for (id, ifname). */
  get(id: string, ifname: string, requested?: IPAddr): AllocatedIP {
    this.#store.lock(true);
    try {
      return requested === undefined ? this.#next(id, ifname) : this.#requested(id, ifname, requested);
    } finally {
      this.#store.unlock();
    }
  }

  /** Releases everything (id, ifname) holds in this store (upstream releases store-wide). */
  release(id: string, ifname: string): void {
    this.#store.lock();
    try {
      this.#store.releaseByID(id, ifname);
    } finally {
      this.#store.unlock();
    }
  }

  #requested(id: string, ifname: string, ip: IPAddr): AllocatedIP {
    const r = rangeFor(this.#set, ip);
    if (r === undefined) {
      throw new AllocationError(`${formatIP(ip)} not in range set ${formatRangeSet(this.#set)}`);
    }
    if (r.gateway !== undefined && ipEqual(ip, r.gateway)) throw new AllocationError(`requested ip ${formatIP(ip)} is subnet's gateway`);
    const excluded = excludedSpan(r, ip);
    if (excluded !== undefined) {
      throw new AllocationError(`requested ip ${formatIP(ip)} is excluded from range ${formatRange(r)} by exclude ${formatExcludedSpan(r, excluded)}`);
    }
    if (!this.#store.reserve(id, ifname, ip, this.#rangeID)) {
      throw new AllocationError(
        `requested IP address ${formatIP(ip)} is not available in range set ${formatRangeSet(this.#set)}`,
      );
    }
    return { address: { ip, prefixLen: r.subnet.prefixLen }, gateway: r.gateway };
  }

  #next(id: string, ifname: string): AllocatedIP {
    // The spec forbids a second allocation for the same attachment.
    for (const held of this.#store.getByID(id, ifname)) {
      if (rangeSetContains(this.#set, held)) {
        throw new AllocationError(`${formatIP(held)} has been allocated to ${id}, duplicate allocation is not allowed`);
      }
    }
    const last = this.#store.lastReservedIP(this.#rangeID);
    const got = firstCandidate(this.#set, last, (c) => this.#store.reserve(id, ifname, c.ip, this.#rangeID));
    if (got !== undefined) return { address: { ip: got.ip, prefixLen: got.range.subnet.prefixLen }, gateway: got.range.gateway };
    throw new AllocationError(`no IP addresses available in range set: ${formatRangeSet(this.#set)}`);
  }
}
