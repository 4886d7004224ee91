/**
 * An in-memory {@link Store} with the disk store's semantics (upstream `backend/testing/fake_store.go`,
 * extended): reservations are `name -> content` exactly as the files would hold them, so tests can
 * plant legacy, empty or unreadable entries. It also asserts the lock discipline: every data call
 * outside lock()/unlock() throws.
 */
import { formatIP, parseIP, type IPAddr } from "../../../shared/ip/addr.ts";
import { goTrimSpace, legacyKey, reservationContent } from "./owner.ts";
import type { Store, StoredReservation } from "./store.ts";

export class FakeStore implements Store {
  /** Reservation name (Go IP text) -> raw content; null marks an unreadable file. */
  readonly files = new Map<string, string | null>();
  /** rangeID -> raw content of `last_reserved_ip.<rangeID>`. */
  readonly lastReserved = new Map<string, string>();
  /** Number of lock() calls, for tests of the per-range-set locking. */
  lockCount = 0;
  /** How each lock session was marked (lock's forAllocation), in order. */
  readonly sessions: boolean[] = [];
  #locked = false;
  #closed = false;

  constructor(files: Record<string, string | null> = {}, lastReserved: Record<string, string> = {}) {
    for (const [k, v] of Object.entries(files)) this.files.set(k, v);
    for (const [k, v] of Object.entries(lastReserved)) this.lastReserved.set(k, v);
  }

  lock(forAllocation = false): void {
    if (this.#closed) throw new Error("FakeStore: lock after close");
    if (this.#locked) throw new Error("FakeStore: lock taken twice");
    this.#locked = true;
    this.lockCount++;
    this.sessions.push(forAllocation);
  }

  unlock(): void {
    this.#locked = false;
  }

  close(): void {
    this.#locked = false;
    this.#closed = true;
  }

  get locked(): boolean {
    return this.#locked;
  }

  #assertLocked(): void {
    if (!this.#locked) throw new Error("FakeStore: used without the lock");
  }

  reserve(id: string, ifname: string, ip: IPAddr, rangeID: string): boolean {
    this.#assertLocked();
    const name = formatIP(ip);
    if (this.files.has(name)) return false;
    this.files.set(name, reservationContent(id, ifname));
    this.lastReserved.set(rangeID, name);
    return true;
  }

  lastReservedIP(rangeID: string): IPAddr | null {
    this.#assertLocked();
    const text = this.lastReserved.get(rangeID);
    return text === undefined ? null : parseIP(text);
  }

  #namesWithKey(key: string): string[] {
    const out: string[] = [];
    for (const [name, content] of this.files) {
      if (content !== null && goTrimSpace(content) === key) out.push(name);
    }
    return out;
  }

  getByID(id: string, ifname: string): IPAddr[] {
    this.#assertLocked();
    const names = [...this.#namesWithKey(reservationContent(id, ifname)), ...this.#namesWithKey(legacyKey(id))];
    return names.map(parseIP).filter((ip): ip is IPAddr => ip !== null);
  }

  findByID(id: string, ifname: string): boolean {
    this.#assertLocked();
    return this.#namesWithKey(reservationContent(id, ifname)).length > 0 || this.#namesWithKey(legacyKey(id)).length > 0;
  }

  releaseByID(id: string, ifname: string): void {
    this.#assertLocked();
    let names = this.#namesWithKey(reservationContent(id, ifname));
    if (names.length === 0) names = this.#namesWithKey(legacyKey(id));
    for (const name of names) this.files.delete(name);
  }

  reservations(): StoredReservation[] {
    this.#assertLocked();
    const out: StoredReservation[] = [];
    for (const [name, content] of this.files) {
      const ip = parseIP(name);
      if (ip === null || formatIP(ip) !== name) continue;
      out.push({ ip, key: content === null ? null : goTrimSpace(content) });
    }
    return out;
  }

  releaseReservation(r: StoredReservation): boolean {
    this.#assertLocked();
    const name = formatIP(r.ip);
    if (!this.files.has(name)) return false;
    const content = this.files.get(name)!;
    const key = content === null ? null : goTrimSpace(content);
    if (key !== r.key) return false;
    this.files.delete(name);
    return true;
  }
}
