/**
 * Allocation of one address from one range set against host-local's store: a requested address
 * if one was asked for, else round robin from the address after the range set's
 * `last_reserved_ip` (the candidates and their checks: shared/ipam/candidates.ts). Each call holds
 * the store lock for its whole duration.
 */
import { formatIP, type IPAddr } from "../../../shared/ip/addr.ts";
import {
  allocatedIn,
  AllocationError,
  exhaustedError,
  iterateCandidates,
  requestedRange,
  requestedTakenError,
  type AllocatedIP,
} from "../../../shared/ipam/candidates.ts";
import { rangeSetContains, type RangeSet } from "../../../shared/ipam/range-set.ts";
import type { Store } from "../store/store.ts";

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
    const r = requestedRange(this.#set, ip);
    if (!this.#store.reserve(id, ifname, ip, this.#rangeID)) throw requestedTakenError(this.#set, ip);
    return allocatedIn(r, ip);
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
      if (this.#store.reserve(id, ifname, c.ip, this.#rangeID)) return allocatedIn(c.range, c.ip);
    }
    throw exhaustedError(this.#set);
  }
}
