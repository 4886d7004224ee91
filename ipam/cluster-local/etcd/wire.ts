/**
 * The messages of etcd's v3 KV API (api/etcdserverpb/rpc.proto) as its JSON gateway speaks them
 * (`POST /v3/kv/range`, `POST /v3/kv/txn`): proto3 JSON with the proto field names, keys and values
 * base64, 64-bit integers as strings, and fields at their default value (false, 0, empty) left out.
 * This module converts between that and plain objects with text keys and number revisions.
 */

/** A stored key (`mvccpb.KeyValue`); `value` is "" when the request asked for keys only. */
export interface KeyValue {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
}

export interface RangeRequest {
  key: string;
  /** Exclusive end of a key range ({@link prefixEnd} for every key under a prefix). */
  rangeEnd?: string;
  keysOnly?: boolean;
  countOnly?: boolean;
  /**
   * Answered by the member asked, without confirming with the leader that it is current (etcd's
   * serializable read: one round trip less, possibly stale). Only for reads whose answer a later
   * txn's compares check anyway.
   */
  serializable?: boolean;
}

export interface RangeResult {
  kvs: KeyValue[];
  count: number;
}

/** A txn condition: `target` of `key` compared with `value` (a revision, or a value for VALUE). */
export interface Compare {
  key: string;
  target: "CREATE" | "MOD" | "VALUE";
  result: "EQUAL" | "NOT_EQUAL" | "GREATER" | "LESS";
  value: number | string;
}

export type RequestOp =
  | { range: RangeRequest }
  | { put: { key: string; value: string } }
  | { deleteRange: { key: string } }
  | { txn: TxnRequest };

export interface TxnRequest {
  compare: Compare[];
  success: RequestOp[];
  failure?: RequestOp[];
}

export type ResponseOp = { range: RangeResult } | { put: true } | { deleteRange: { deleted: number } } | { txn: TxnResult };

export interface TxnResult {
  succeeded: boolean;
  responses: ResponseOp[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function toBase64(text: string): string {
  return Buffer.from(encoder.encode(text)).toString("base64");
}

export function fromBase64(b64: string): string {
  return decoder.decode(Buffer.from(b64, "base64"));
}

/** The smallest key after every key that starts with `prefix` (etcd's `GetPrefixRangeEnd`). */
export function prefixEnd(prefix: string): string {
  const bytes = encoder.encode(prefix);
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 0xff) {
      const end = bytes.slice(0, i + 1);
      end[i]! += 1;
      return decoder.decode(end);
    }
  }
  return "\0"; // every key (etcd's "from key" marker)
}

function rangeWire(r: RangeRequest): Record<string, unknown> {
  const out: Record<string, unknown> = { key: toBase64(r.key) };
  if (r.rangeEnd !== undefined) out.range_end = toBase64(r.rangeEnd);
  if (r.keysOnly) out.keys_only = true;
  if (r.countOnly) out.count_only = true;
  if (r.serializable) out.serializable = true;
  return out;
}

const COMPARE_FIELD = { CREATE: "create_revision", MOD: "mod_revision", VALUE: "value" } as const;

function compareWire(c: Compare): Record<string, unknown> {
  const value = c.target === "VALUE" ? toBase64(String(c.value)) : String(c.value);
  return { key: toBase64(c.key), target: c.target, result: c.result, [COMPARE_FIELD[c.target]]: value };
}

function opWire(op: RequestOp): Record<string, unknown> {
  if ("range" in op) return { request_range: rangeWire(op.range) };
  if ("put" in op) return { request_put: { key: toBase64(op.put.key), value: toBase64(op.put.value) } };
  if ("deleteRange" in op) return { request_delete_range: { key: toBase64(op.deleteRange.key) } };
  return { request_txn: txnWire(op.txn) };
}

/** The gateway's JSON body of a RangeRequest. */
export function rangeRequestBody(r: RangeRequest): Record<string, unknown> {
  return rangeWire(r);
}

/** The gateway's JSON body of a TxnRequest. */
export function txnWire(t: TxnRequest): Record<string, unknown> {
  return { compare: t.compare.map(compareWire), success: t.success.map(opWire), failure: (t.failure ?? []).map(opWire) };
}

/** An answer that does not have the shape of etcd's. */
export class WireError extends Error {
  override name = "WireError";
}

function obj(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new WireError(`${what} is not an object`);
  return v as Record<string, unknown>;
}

function int(v: unknown, what: string): number {
  if (v === undefined) return 0;
  const n = typeof v === "string" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isSafeInteger(n)) throw new WireError(`${what} is not an integer`);
  return n;
}

function bytes(v: unknown, what: string): string {
  if (v === undefined) return "";
  if (typeof v !== "string") throw new WireError(`${what} is not base64 text`);
  return fromBase64(v);
}

function keyValue(v: unknown): KeyValue {
  const kv = obj(v, "kv");
  return {
    key: bytes(kv.key, "kv.key"),
    value: bytes(kv.value, "kv.value"),
    createRevision: int(kv.create_revision, "kv.create_revision"),
    modRevision: int(kv.mod_revision, "kv.mod_revision"),
  };
}

/** A RangeResponse body. */
export function parseRange(v: unknown): RangeResult {
  const r = obj(v, "range response");
  const kvs = r.kvs === undefined ? [] : Array.isArray(r.kvs) ? r.kvs.map(keyValue) : [];
  return { kvs, count: int(r.count, "count") };
}

function responseOp(v: unknown): ResponseOp {
  const op = obj(v, "response op");
  if (op.response_range !== undefined) return { range: parseRange(op.response_range) };
  if (op.response_put !== undefined) return { put: true };
  if (op.response_delete_range !== undefined) return { deleteRange: { deleted: int(obj(op.response_delete_range, "delete response").deleted, "deleted") } };
  if (op.response_txn !== undefined) return { txn: parseTxn(op.response_txn) };
  throw new WireError("unknown response op");
}

/** A TxnResponse body. */
export function parseTxn(v: unknown): TxnResult {
  const r = obj(v, "txn response");
  const responses = r.responses === undefined ? [] : Array.isArray(r.responses) ? r.responses.map(responseOp) : [];
  return { succeeded: r.succeeded === true, responses };
}

/** The range result of response `i` of a txn (an empty one when it is not a range). */
export function rangeAt(t: TxnResult, i: number): RangeResult {
  const op = t.responses[i];
  return op !== undefined && "range" in op ? op.range : { kvs: [], count: 0 };
}
