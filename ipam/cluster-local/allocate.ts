/**
 * ADD's allocation in etcd: one address per range set for one attachment, all taken by ONE
 * transaction that succeeds only if none of the addresses and no owner record of the attachment
 * exists yet (compare create_revision = 0), and that writes the `ips/` keys, the owner record and
 * the range sets' `last_reserved_ip` hints (keys.ts). Concurrent ADDs on any number of nodes can
 * therefore never take the same address; a transaction that lost a race is repeated with the next
 * candidate of the sets whose address was taken.
 *
 * Candidates come in host-local's round-robin order from each set's hint (shared/ipam/candidates.ts).
 * The first write tries the next candidate of each set directly; after a lost race, a read-only
 * transaction probes a batch of candidates before the next write, so a dense stretch of taken
 * addresses costs one read instead of one failed write per address.
 *
 * An attachment that already holds addresses (a runtime retrying an ADD, or this call's own write
 * that timed out at one member and was applied anyway) gets them back.
 */
import { formatIP, parseIP, type IPAddr } from "../../shared/ip/addr.ts";
import {
  allocatedIn,
  AllocationError,
  exhaustedError,
  iterateCandidates,
  requestedRange,
  requestedTakenError,
  type AllocatedIP,
  type Candidate,
} from "../../shared/ipam/candidates.ts";
import { rangeFor, type RangeSet } from "../../shared/ipam/range-set.ts";
import { rangeSetFailure } from "../../shared/ipam/result.ts";
import type { EtcdClient } from "./etcd/client.ts";
import { rangeAt, type KeyValue, type RequestOp } from "./etcd/wire.ts";
import { NetworkKeys, ownerValue, parseOwnerRecord, parseReservation, reservationValue, type Reservation } from "./keys.ts";

/** Candidates read per range set in one probe (etcd allows 128 operations per transaction). */
const PROBE_BATCH = 24;

/** One range set's source of candidates during an allocation. */
class SetCursor {
  readonly set: RangeSet;
  /** The requested address and its range, when the set must hand out exactly that one. */
  readonly fixed: Candidate | undefined;
  readonly #iter: Iterator<Candidate>;
  /** The candidates to try next, in round-robin order: probed and found free (or the first, unprobed). */
  readonly #free: Candidate[] = [];
  #exhausted = false;

  constructor(set: RangeSet, want: IPAddr | undefined, hint: IPAddr | null) {
    this.set = set;
    this.fixed = want === undefined ? undefined : { ip: want, range: requestedRange(set, want) };
    this.#iter = iterateCandidates(set, hint);
  }

  /** The address the next write tries, or undefined when more must be probed first. */
  current(): Candidate | undefined {
    return this.fixed ?? this.#free[0];
  }

  /** Up to `n` unprobed candidates; [] when the set has none left. */
  nextBatch(n: number): Candidate[] {
    const out: Candidate[] = [];
    while (out.length < n && !this.#exhausted) {
      const c = this.#iter.next();
      if (c.done) this.#exhausted = true;
      else out.push(c.value);
    }
    return out;
  }

  /** Queues a candidate for the next writes. */
  queue(c: Candidate): void {
    this.#free.push(c);
  }

  /** The current candidate was taken by someone else. */
  lost(): void {
    this.#free.shift();
  }
}

export interface AllocationRequest {
  keys: NetworkKeys;
  rangeSets: readonly RangeSet[];
  /** Per range set: the requested address, if any. */
  wants: readonly (IPAddr | undefined)[];
  owner: Reservation;
}

function hintOf(kv: KeyValue | undefined): IPAddr | null {
  return kv === undefined ? null : parseIP(kv.value.trim());
}

/**
 * The addresses an existing owner record names, checked: every `ips/` key exists with the owner's
 * create revision (written together), and each range set (and requested address) is served.
 * AllocationError (999) when they do not.
 */
export async function heldAddresses(client: EtcdClient, req: AllocationRequest, ownerKv: KeyValue): Promise<AllocatedIP[]> {
  const who = `${req.owner.containerID}/${req.owner.ifname}`;
  const record = parseOwnerRecord(ownerKv.value);
  const ips = (record?.ips ?? []).map((t) => parseIP(t));
  if (record === undefined || ips.some((ip) => ip === null)) {
    throw new AllocationError(`the owner record ${ownerKv.key} of ${who} is not cluster-local's; remove it or DEL the attachment`);
  }
  const read = await client.txn({ compare: [], success: ips.map((ip) => ({ range: { key: req.keys.ip(ip!) } })) });
  const out: AllocatedIP[] = [];
  for (const [idx, set] of req.rangeSets.entries()) {
    const held = ips.find((ip): ip is IPAddr => ip !== null && rangeFor(set, ip) !== undefined);
    const want = req.wants[idx];
    if (held === undefined || (want !== undefined && formatIP(want) !== formatIP(held))) {
      throw new AllocationError(
        `${who} already holds ${record.ips.join(", ")}, which ${held === undefined ? `has no address in range set ${idx}` : `is not the requested ${formatIP(want!)}`}; DEL the attachment before adding it again`,
      );
    }
    const kv = rangeAt(read, ips.indexOf(held)).kvs[0];
    const holder = kv === undefined ? undefined : parseReservation(kv.value);
    if (kv === undefined || kv.createRevision !== ownerKv.createRevision || holder?.containerID !== req.owner.containerID || holder.ifname !== req.owner.ifname) {
      throw new AllocationError(`${who} is recorded as holding ${formatIP(held)}, but that reservation is gone or someone else's; DEL the attachment before adding it again`);
    }
    out.push(allocatedIn(rangeFor(set, held)!, held));
  }
  return out;
}

/** Probes unprobed candidates of every set that has no free one queued; throws when a set is exhausted. */
async function refill(client: EtcdClient, keys: NetworkKeys, cursors: readonly SetCursor[]): Promise<void> {
  for (;;) {
    const needy = cursors.filter((c) => c.current() === undefined);
    if (needy.length === 0) return;
    const batches = needy.map((c) => ({ cursor: c, batch: c.nextBatch(PROBE_BATCH) }));
    const empty = batches.find((b) => b.batch.length === 0);
    if (empty !== undefined) throw rangeSetFailure(cursors.indexOf(empty.cursor), exhaustedError(empty.cursor.set));
    const ops: RequestOp[] = batches.flatMap((b) => b.batch.map((c) => ({ range: { key: keys.ip(c.ip), countOnly: true, serializable: true } })));
    const read = await client.txn({ compare: [], success: ops });
    let i = 0;
    for (const { cursor, batch } of batches) {
      for (const c of batch) if (rangeAt(read, i++).count === 0) cursor.queue(c);
    }
  }
}

/**
 * Allocates one address per range set for `req.owner`, or returns what the attachment holds
 * already. Errors: AllocationError (999) for a taken requested address, an exhausted set or an
 * inconsistent record; the client's errors (11, 7) for etcd.
 */
export async function allocate(client: EtcdClient, req: AllocationRequest): Promise<AllocatedIP[]> {
  const { keys, owner } = req;
  const ownerKey = keys.owner(owner.containerID, owner.ifname);
  const hints = req.rangeSets.map((_, idx) => keys.hint(idx));
  // Serializable reads (no leader round): the write's compares decide, so a stale answer costs at
  // most a retry (an owner already there or a candidate taken shows in the write's failure reads).
  const first = await client.txn({ compare: [], success: [ownerKey, ...hints].map((key) => ({ range: { key, serializable: true } })) });
  let existing = rangeAt(first, 0).kvs[0];
  // An owner a serializable read shows may have just been released (a DEL before this ADD's retry):
  // a current read decides.
  if (existing !== undefined) existing = (await client.range({ key: ownerKey })).kvs[0];
  if (existing !== undefined) return heldAddresses(client, req, existing);

  const cursors = req.rangeSets.map((set, idx) => {
    try {
      return new SetCursor(set, req.wants[idx], hintOf(rangeAt(first, idx + 1).kvs[0]));
    } catch (err) {
      throw rangeSetFailure(idx, err);
    }
  });
  // The first write tries each set's next candidate unprobed: in a pool with room it is free, and
  // the ADD costs two round trips (this read, that write). Probes come after a lost race.
  for (const c of cursors) {
    const next = c.fixed === undefined ? c.nextBatch(1)[0] : undefined;
    if (next !== undefined) c.queue(next);
  }
  const reservation = reservationValue(owner);
  for (;;) {
    await refill(client, keys, cursors);
    const chosen = cursors.map((c) => c.current()!);
    const ipKeys = chosen.map((c) => keys.ip(c.ip));
    const result = await client.txn({
      compare: [ownerKey, ...ipKeys].map((key) => ({ key, target: "CREATE", result: "EQUAL", value: 0 })),
      success: [
        ...ipKeys.map((key) => ({ put: { key, value: reservation } })),
        { put: { key: ownerKey, value: ownerValue({ ...owner, ips: chosen.map((c) => formatIP(c.ip)) }) } },
        ...hints.map((key, idx) => ({ put: { key, value: formatIP(chosen[idx]!.ip) } })),
      ],
      failure: [ownerKey, ...ipKeys].map((key) => ({ range: { key } })),
    });
    if (result.succeeded) return chosen.map((c) => allocatedIn(c.range, c.ip));
    const ownerNow = rangeAt(result, 0).kvs[0];
    if (ownerNow !== undefined) return heldAddresses(client, req, ownerNow);
    for (const [idx, cursor] of cursors.entries()) {
      if (rangeAt(result, idx + 1).kvs.length === 0) continue;
      if (cursor.fixed !== undefined) throw rangeSetFailure(idx, requestedTakenError(cursor.set, cursor.fixed.ip));
      cursor.lost();
    }
  }
}
