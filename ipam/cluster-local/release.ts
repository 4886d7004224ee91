/**
 * Releasing reservations in etcd. An attachment's owner record and the `ips/` keys created with it
 * (same create revision) go in one transaction that applies only while the owner record is the one
 * read (mod revision), and deletes each address only while it is still that reservation (nested
 * transactions): DEL and GC never release an address someone else holds now, however they race.
 */
import { TryAgainLaterError } from "../../shared/cni/errors.ts";
import type { ValidAttachment } from "../../shared/cni/types.ts";
import { parseIP } from "../../shared/ip/addr.ts";
import type { EtcdClient } from "./etcd/client.ts";
import { rangeAt, type KeyValue, type RequestOp } from "./etcd/wire.ts";
import { NetworkKeys, parseOwnerRecord, parseReservation, type OwnerRecord } from "./keys.ts";

/** How often a release is re-read and retried when the owner record changed under it. */
const RELEASE_ATTEMPTS = 5;

/** The transaction that releases `ownerKv` (as read) and its addresses; succeeded = released. */
function releaseOps(keys: NetworkKeys, ownerKv: KeyValue): { compare: { key: string; target: "MOD"; result: "EQUAL"; value: number }[]; success: RequestOp[] } {
  const ips = (parseOwnerRecord(ownerKv.value)?.ips ?? []).flatMap((t) => {
    const ip = parseIP(t);
    return ip === null ? [] : [ip];
  });
  return {
    compare: [{ key: ownerKv.key, target: "MOD", result: "EQUAL", value: ownerKv.modRevision }],
    success: [
      { deleteRange: { key: ownerKv.key } },
      ...ips.map((ip): RequestOp => ({
        txn: {
          compare: [{ key: keys.ip(ip), target: "CREATE", result: "EQUAL", value: ownerKv.createRevision }],
          success: [{ deleteRange: { key: keys.ip(ip) } }],
        },
      })),
    ],
  };
}

/**
 * Releases what (containerID, ifname) holds; nothing held is success (DEL is idempotent). Returns
 * the owner record that was released, if any.
 */
export async function releaseAttachment(client: EtcdClient, keys: NetworkKeys, containerID: string, ifname: string): Promise<OwnerRecord | undefined> {
  const key = keys.owner(containerID, ifname);
  for (let attempt = 0; attempt < RELEASE_ATTEMPTS; attempt++) {
    const kv = (await client.range({ key })).kvs[0];
    if (kv === undefined) return undefined;
    if ((await client.txn(releaseOps(keys, kv))).succeeded) {
      return parseOwnerRecord(kv.value) ?? { containerID, ifname, node: "", ips: [] };
    }
  }
  throw new TryAgainLaterError(`the reservation ${key} changed ${RELEASE_ATTEMPTS} times while it was being released`);
}

/** This node's reservations as one consistent read: owner records and addresses without an owner. */
export interface NodeReservations {
  owners: { kv: KeyValue; record: OwnerRecord }[];
  /** `ips/` keys of this node whose owner record does not exist (left by hand or by an older writer). */
  orphans: KeyValue[];
}

/** Reads every reservation of `node` in the network (one read-only transaction, one revision). */
export async function nodeReservations(client: EtcdClient, keys: NetworkKeys, node: string): Promise<NodeReservations> {
  const read = await client.txn({
    compare: [],
    success: [{ range: NetworkKeys.under(keys.ownersPrefix) }, { range: NetworkKeys.under(keys.ipsPrefix) }],
  });
  const owners: NodeReservations["owners"] = [];
  const ownerRevisions = new Set<string>();
  for (const kv of rangeAt(read, 0).kvs) {
    const record = parseOwnerRecord(kv.value);
    if (record === undefined) continue;
    ownerRevisions.add(`${record.containerID}/${record.ifname}@${kv.createRevision}`);
    if (record.node === node) owners.push({ kv, record });
  }
  const orphans = rangeAt(read, 1).kvs.filter((kv) => {
    const r = parseReservation(kv.value);
    return r !== undefined && r.node === node && !ownerRevisions.has(`${r.containerID}/${r.ifname}@${kv.createRevision}`);
  });
  return { owners, orphans };
}

/**
 * GC: releases this node's reservations whose attachment is not among `valid`, and this node's
 * addresses without an owner record. Another node's reservations are never touched. Returns the
 * released addresses.
 */
export async function collectStale(client: EtcdClient, keys: NetworkKeys, node: string, valid: readonly ValidAttachment[]): Promise<string[]> {
  const live = new Set(valid.map((a) => `${a.containerID}/${a.ifName}`));
  const found = await nodeReservations(client, keys, node);
  const released: string[] = [];
  for (const { kv, record } of found.owners) {
    if (live.has(`${record.containerID}/${record.ifname}`)) continue;
    // Released only as read: an attachment added again since then keeps its new reservation.
    if ((await client.txn(releaseOps(keys, kv))).succeeded) released.push(...record.ips);
  }
  for (const kv of found.orphans) {
    const r = parseReservation(kv.value)!;
    if (live.has(`${r.containerID}/${r.ifname}`)) continue;
    const done = await client.txn({
      compare: [{ key: kv.key, target: "MOD", result: "EQUAL", value: kv.modRevision }],
      success: [{ deleteRange: { key: kv.key } }],
    });
    if (done.succeeded) released.push(kv.key.slice(keys.ipsPrefix.length));
  }
  return released;
}
