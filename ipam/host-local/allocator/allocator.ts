/**
 * Allocation of one address from one range set (upstream `backend/allocator/allocator.go`):
 * a requested address if one was asked for, else round robin from the address after the range
 * set's `last_reserved_ip`, skipping each range's gateway and wrapping from the last range to the
 * first. Each call holds the store lock for its whole duration.
 */
import { InternalError } from "../../../shared/cni/errors.ts";
import { formatIP, ipEqual, nextIP, type IPAddr } from "../../../shared/ip/addr.ts";
import type { CIDR } from "../../../shared/ip/cidr.ts";
import type { Store } from "../store/store.ts";
import { rangeContains, type IPRange } from "./range.ts";
import { formatRangeSet, rangeFor, rangeSetContains, type RangeSet } from "./range-set.ts";

/** One allocated address: `address` carries the range's prefix length. */
export interface AllocatedIP {
  readonly address: CIDR;
  readonly gateway: IPAddr;
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
 * Yields the candidates of a range set in upstream's round-robin order. With a `lastReserved`
 * address inside the set, iteration starts right after it and visits it last; otherwise it starts
 * at the first range's rangeStart. Every range's gateway is skipped. Each address is yielded once.
 */
export function* iterateCandidates(set: RangeSet, lastReserved: IPAddr | null): Generator<Candidate> {
  let idx = 0;
  let cur: IPAddr | null = null;
  let startIP: IPAddr | null;
  const lastIdx = lastReserved === null ? -1 : set.findIndex((r) => rangeContains(r, lastReserved));
  if (lastReserved !== null && lastIdx >= 0) {
    idx = lastIdx;
    cur = lastReserved;
    startIP = null;
  } else {
    startIP = set[0]!.rangeStart;
  }
  for (;;) {
    let r = set[idx]!;
    if (cur === null) {
      cur = r.rangeStart;
      startIP = cur;
      if (!ipEqual(cur, r.gateway)) yield { ip: cur, range: r };
      continue;
    }
    if (ipEqual(cur, r.rangeEnd)) {
      idx = (idx + 1) % set.length;
      r = set[idx]!;
      cur = r.rangeStart;
    } else {
      // rangeStart <= cur < rangeEnd, so the successor exists.
      cur = nextIP(cur)!;
    }
    if (startIP === null) startIP = cur;
    else if (ipEqual(cur, startIP)) return;
    if (ipEqual(cur, r.gateway)) continue;
    yield { ip: cur, range: r };
  }
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
    this.#store.lock();
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
    if (ipEqual(ip, r.gateway)) throw new AllocationError(`requested ip ${formatIP(ip)} is subnet's gateway`);
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
    for (const c of iterateCandidates(this.#set, last)) {
      if (this.#store.reserve(id, ifname, c.ip, this.#rangeID)) {
        return { address: { ip: c.ip, prefixLen: c.range.subnet.prefixLen }, gateway: c.range.gateway };
      }
    }
    throw new AllocationError(`no IP addresses available in range set: ${formatRangeSet(this.#set)}`);
  }
}
