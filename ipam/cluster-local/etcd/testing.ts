/**
 * Test support: an in-memory etcd behind a JSON gateway on 127.0.0.1 (Bun.serve), with the
 * semantics cluster-local relies on — one revision per write transaction, create/mod revisions,
 * range with range_end, count_only and keys_only, txn compares on CREATE/MOD/VALUE, put, delete
 * and nested txns — plus switches to answer like a member without a leader, like something that is
 * not etcd, or not at all. The integration tests use a real cluster; this one lets unit tests run
 * without root.
 */
import type { Server } from "bun";

interface Stored {
  value: string;
  create: number;
  mod: number;
}

export type FakeMode = "ok" | "no-leader" | "not-etcd" | "hang" | "permission-denied" | "invalid-argument";

const unb64 = (s: string | undefined): string => (s === undefined ? "" : Buffer.from(s, "base64").toString("utf8"));
const b64 = (s: string): string => Buffer.from(s).toString("base64");

export class FakeEtcd {
  readonly data = new Map<string, Stored>();
  revision = 1;
  mode: FakeMode = "ok";
  /** Requests received, by path. */
  readonly requests: { path: string; body: any; headers: Headers }[] = [];
  readonly #server: Server<undefined>;

  constructor() {
    this.#server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => this.#handle(req) });
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.#server.port}`;
  }

  stop(): void {
    void this.#server.stop(true);
  }

  /** The stored keys under `prefix`, with values. */
  dump(prefix = ""): Record<string, string> {
    return Object.fromEntries([...this.data].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, v.value]));
  }

  /** Writes a key as another client would. */
  put(key: string, value: string): void {
    this.revision++;
    const old = this.data.get(key);
    this.data.set(key, { value, create: old?.create ?? this.revision, mod: this.revision });
  }

  async #handle(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    const body = (await req.json().catch(() => ({}))) as any;
    this.requests.push({ path, body, headers: req.headers });
    switch (this.mode) {
      case "hang":
        return new Promise<Response>(() => {});
      case "not-etcd":
        return new Response("<html>It works!</html>", { status: 200 });
      case "no-leader":
        return Response.json({ error: "etcdserver: no leader", message: "etcdserver: no leader", code: 14 }, { status: 503 });
      case "permission-denied":
        return Response.json({ error: "etcdserver: permission denied", message: "etcdserver: permission denied", code: 7 }, { status: 403 });
      case "invalid-argument":
        return Response.json({ error: "etcdserver: too many operations in txn request", message: "etcdserver: too many operations in txn request", code: 3 }, { status: 400 });
      case "ok":
        break;
    }
    if (path === "/v3/kv/range") return Response.json({ header: this.#header(), ...this.#range(body) });
    if (path === "/v3/kv/txn") {
      const writes = (ops: any[] | undefined): boolean => (ops ?? []).some((op) => op.request_put || op.request_delete_range || (op.request_txn && (writes(op.request_txn.success) || writes(op.request_txn.failure))));
      const next = writes(body.success) || writes(body.failure) ? this.revision + 1 : this.revision;
      const result = this.#txn(body, next);
      if (this.revision !== next && result.wrote) this.revision = next;
      return Response.json({ header: this.#header(), ...result.json });
    }
    return new Response("Not Found", { status: 404 });
  }

  #header(): Record<string, string> {
    return { cluster_id: "1", member_id: "2", revision: String(this.revision), raft_term: "2" };
  }

  #keysIn(r: any): string[] {
    const key = unb64(r.key);
    if (r.range_end === undefined) return this.data.has(key) ? [key] : [];
    const end = unb64(r.range_end);
    return [...this.data.keys()].filter((k) => k >= key && (end === "\0" || k < end)).sort();
  }

  #range(r: any): Record<string, unknown> {
    const keys = this.#keysIn(r);
    const out: Record<string, unknown> = {};
    if (keys.length > 0) out.count = String(keys.length);
    if (!r.count_only && keys.length > 0) {
      out.kvs = keys.map((k) => {
        const s = this.data.get(k)!;
        return { key: b64(k), create_revision: String(s.create), mod_revision: String(s.mod), version: "1", ...(r.keys_only ? {} : { value: b64(s.value) }) };
      });
    }
    return out;
  }

  #compare(c: any): boolean {
    const s = this.data.get(unb64(c.key));
    const field = c.target === "CREATE" ? "create_revision" : c.target === "MOD" ? "mod_revision" : "value";
    const have: number | string = c.target === "VALUE" ? (s?.value ?? "") : c.target === "CREATE" ? (s?.create ?? 0) : (s?.mod ?? 0);
    const want: number | string = c.target === "VALUE" ? unb64(c[field]) : Number(c[field] ?? 0);
    switch (c.result ?? "EQUAL") {
      case "EQUAL":
        return have === want;
      case "NOT_EQUAL":
        return have !== want;
      case "GREATER":
        return have > want;
      default:
        return have < want;
    }
  }

  #txn(t: any, rev: number): { json: Record<string, unknown>; wrote: boolean } {
    const ok = (t.compare ?? []).every((c: any) => this.#compare(c));
    let wrote = false;
    const responses = ((ok ? t.success : t.failure) ?? []).map((op: any) => {
      if (op.request_range) return { response_range: { header: {}, ...this.#range(op.request_range) } };
      if (op.request_put) {
        const key = unb64(op.request_put.key);
        const old = this.data.get(key);
        this.data.set(key, { value: unb64(op.request_put.value), create: old?.create ?? rev, mod: rev });
        wrote = true;
        return { response_put: { header: {} } };
      }
      if (op.request_delete_range) {
        const keys = this.#keysIn(op.request_delete_range);
        for (const k of keys) this.data.delete(k);
        if (keys.length > 0) wrote = true;
        return { response_delete_range: { header: {}, ...(keys.length > 0 ? { deleted: String(keys.length) } : {}) } };
      }
      const inner = this.#txn(op.request_txn, rev);
      if (inner.wrote) wrote = true;
      return { response_txn: { header: {}, ...inner.json } };
    });
    return { json: { ...(ok ? { succeeded: true } : {}), ...(responses.length > 0 ? { responses } : {}) }, wrote };
  }
}
