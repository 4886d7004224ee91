/**
 * The reservation store host-local allocates against (upstream `backend/store.go`, extended for
 * GC and STATUS). Every method except lock/unlock/close must be called with the lock held.
 */
import type { IPAddr } from "../../../shared/ip/addr.ts";

/** A reservation file as found in the store. */
export interface StoredReservation {
  readonly ip: IPAddr;
  /** Whitespace-trimmed file content; null when the file could not be read. */
  readonly key: string | null;
}

export interface Store {
  /**
   * Takes the store's exclusive lock (blocking). `forAllocation` marks a session that only
   * allocates (ADD): after another writer changed the store, its duplicate check may see the
   * recorded owner of a file replaced under the same name (see DiskStore); every other session
   * sees exact owners.
   */
  lock(forAllocation?: boolean): void;
  /** Releases the lock, persisting any bookkeeping first. */
  unlock(): void;
  /** Releases everything; the store cannot be used afterwards. */
  close(): void;

  /**
   * Reserves `ip` for (id, ifname) by creating its reservation exclusively; false when it is
   * already taken. On success also records `ip` as the last reserved address of `rangeID`.
   */
  reserve(id: string, ifname: string, ip: IPAddr, rangeID: string): boolean;
  /** The address last reserved in `rangeID`, or null (missing or unparseable record). */
  lastReservedIP(rangeID: string): IPAddr | null;
  /** Addresses held by (id, ifname), plus those of legacy files holding just `id`. */
  getByID(id: string, ifname: string): IPAddr[];
  /** True when (id, ifname) holds a reservation, or (fallback) a legacy file holds `id`. */
  findByID(id: string, ifname: string): boolean;
  /**
   * Releases every reservation held by (id, ifname); when there is none, releases the legacy
   * files holding `id`. A file that cannot be removed is an error (upstream ignores it); the
   * others are still removed.
   */
  releaseByID(id: string, ifname: string): void;

  /** Every reservation (one per reserved address). */
  reservations(): StoredReservation[];
  /** Releases one reservation if its content is still `r.key`; true when it was removed, an error when it could not be. */
  releaseReservation(r: StoredReservation): boolean;
}
