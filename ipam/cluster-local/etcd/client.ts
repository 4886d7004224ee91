/**
 * A client of etcd's v3 API over its JSON gateway, with `fetch` (no client package: nothing to load
 * at start-up; docs/performance.md). One client serves one plugin call: it reads the TLS files
 * once and carries the call's deadline (`etcd.timeout`). Connections are Bun's fetch pool's, so a
 * process serving many calls (the node agent) reuses them across calls; each response body is read
 * to the end, and an aborted request closes its connection, so none is left behind.
 *
 * Every request asks the member to refuse when it has no leader (gRPC metadata `hasleader`, passed
 * through the gateway as a `Grpc-Metadata-` header), so a member cut off from the quorum answers at
 * once instead of after its own timeout. The endpoints are tried in order; a member that refuses the
 * connection, does not answer within `etcd.endpointTimeout` or has no leader is followed by the next.
 * When every endpoint failed, the client waits a little and tries again until the deadline: a
 * leader election lasts about a second. Then the call fails with code 11 naming each endpoint and
 * its last cause. An endpoint whose answer is not etcd's, or whose TLS setup is wrong, is not tried
 * again; when every endpoint is like that the call fails with code 7 naming the field.
 */
import { InternalError, InvalidConfigError, TryAgainLaterError } from "../../../shared/cni/errors.ts";
import type { EtcdConfig } from "../config.ts";
import { diagnoseTls, loadTlsMaterial, type TlsMaterial } from "./tls.ts";
import { parseRange, parseTxn, rangeRequestBody, txnWire, WireError, type RangeRequest, type RangeResult, type TxnRequest, type TxnResult } from "./wire.ts";

/** Why one attempt at one endpoint failed. */
export interface Failure {
  /** transient: try again (later or elsewhere); config: this endpoint never works with this config; fatal: stop now. */
  kind: "transient" | "config" | "fatal";
  cause: string;
  /** The request may have reached the member and been applied (a write's outcome is unknown). */
  reached?: boolean;
}

/** etcd could not be reached with a quorum before the deadline (code 11). */
export class EtcdUnavailableError extends TryAgainLaterError {
  override name = "EtcdUnavailableError";
}

/** Failed attempts, endpoint by endpoint, as one line. */
function describe(failures: ReadonlyMap<string, Failure>): string {
  if (failures.size === 0) return "the deadline passed before the request could be sent";
  return [...failures].map(([ep, f]) => `${ep}: ${f.cause}`).join("; ");
}

/** Certificate verification failures (BoringSSL/Node codes): the CA of etcd.caFile does not fit. */
const VERIFY_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_SIGNATURE_FAILURE",
  "CERT_NOT_YET_VALID",
  "CERT_HAS_EXPIRED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "HOSTNAME_MISMATCH",
]);

/** gRPC status codes (google.golang.org/grpc/codes) the gateway reports. */
const GRPC = { UNKNOWN: 2, INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, PERMISSION_DENIED: 7, RESOURCE_EXHAUSTED: 8, ABORTED: 10, INTERNAL: 13, UNAVAILABLE: 14, UNAUTHENTICATED: 16 } as const;

/** A gRPC error the member returned. */
export function grpcFailure(code: number, message: string): Failure {
  switch (code) {
    case GRPC.UNAVAILABLE:
      // "no leader" comes from the member's interceptor, before the request is handled.
      return { kind: "transient", cause: message, reached: !/no leader/i.test(message) };
    case GRPC.DEADLINE_EXCEEDED:
    case GRPC.RESOURCE_EXHAUSTED:
    case GRPC.ABORTED:
    case GRPC.INTERNAL:
      return { kind: "transient", cause: message, reached: true };
    case GRPC.UNKNOWN:
      // etcd's "context deadline exceeded", "request timed out", "leader changed" arrive as UNKNOWN.
      return { kind: /deadline|timed out|leader|unavailable|too many requests/i.test(message) ? "transient" : "fatal", cause: message, reached: true };
    case GRPC.PERMISSION_DENIED:
    case GRPC.UNAUTHENTICATED:
      return { kind: "config", cause: `${message} (etcd authentication is enabled: the client certificate of etcd.certFile must name an etcd user allowed to use the key prefix)` };
    default:
      return { kind: "fatal", cause: message };
  }
}

/** Connection failures that mean the request was never sent, in words. */
const NOT_SENT: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ConnectionRefused: "connection refused",
  FailedToOpenSocket: "cannot open a connection",
  ENETUNREACH: "network unreachable",
  EHOSTUNREACH: "host unreachable",
  ENOTFOUND: "host name not found",
  EAI_NONAME: "host name not found",
  EADDRNOTAVAIL: "address not available",
};
/** Connection failures after which a request may have been received, in words. */
const LOST: Readonly<Record<string, string>> = {
  ECONNRESET: "connection reset",
  ConnectionClosed: "connection closed",
  EPIPE: "connection broken",
};

function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code : "";
}

export class EtcdClient {
  readonly #conf: EtcdConfig;
  readonly #tls: TlsMaterial | undefined;
  readonly #deadline: number;
  /** Endpoints that can never work with this config (not etcd, TLS refused). */
  readonly #broken = new Map<string, Failure>();
  #tlsDiagnosed = false;
  #writeMayHaveApplied = false;

  /** Reads the TLS files (code 7 when unusable); the deadline starts now. */
  constructor(conf: EtcdConfig, now = Date.now()) {
    this.#conf = conf;
    this.#tls = loadTlsMaterial(conf);
    this.#deadline = now + conf.timeoutMs;
  }

  /** Milliseconds left before the call's deadline. */
  remainingMs(): number {
    return this.#deadline - Date.now();
  }

  range(req: RangeRequest): Promise<RangeResult> {
    return this.#call("/v3/kv/range", rangeRequestBody(req), parseRange);
  }

  txn(req: TxnRequest): Promise<TxnResult> {
    const writes = [...req.success, ...(req.failure ?? [])].some((op) => !("range" in op));
    return this.#call("/v3/kv/txn", txnWire(req), parseTxn, writes);
  }

  /**
   * True when a write transaction of this client failed in a way that may still have applied it
   * (a timeout or a connection lost after sending): what it wrote may exist although it failed.
   */
  writeMayHaveApplied(): boolean {
    return this.#writeMayHaveApplied;
  }

  async #call<T>(path: string, body: Record<string, unknown>, parse: (answer: unknown) => T, writes = false): Promise<T> {
    const text = JSON.stringify(body);
    const last = new Map<string, Failure>();
    for (let pass = 0; ; pass++) {
      for (const ep of this.#conf.endpoints) {
        if (this.#broken.has(ep)) continue;
        const left = this.remainingMs();
        if (left <= 0) break;
        const outcome = await this.#attempt(ep, path, text, Math.min(left, this.#conf.endpointTimeoutMs), parse);
        if (!("kind" in outcome)) return outcome.value;
        if (outcome.kind === "fatal") throw new InternalError(`etcd at ${ep}: ${outcome.cause}`);
        if (writes && outcome.reached === true) this.#writeMayHaveApplied = true;
        if (outcome.kind === "config") this.#broken.set(ep, outcome);
        else last.set(ep, outcome);
      }
      const all = new Map([...this.#broken, ...last]);
      if (this.#broken.size === this.#conf.endpoints.length) {
        throw new InvalidConfigError(`etcd.endpoints: no endpoint is usable: ${describe(this.#broken)}`);
      }
      const left = this.remainingMs();
      if (left <= 0) throw new EtcdUnavailableError(`etcd is unavailable (no answer with a quorum within etcd.timeout ${this.#conf.timeoutMs} ms): ${describe(all)}`);
      await Bun.sleep(Math.min(left, 50 * 2 ** Math.min(pass, 4)));
    }
  }

  /** One request to one endpoint: the parsed answer, or why not. */
  async #attempt<T>(ep: string, path: string, body: string, ms: number, parse: (answer: unknown) => T): Promise<{ value: T } | Failure> {
    let status: number;
    let text: string;
    try {
      const res = await fetch(`${ep}${path}`, {
        method: "POST",
        body,
        headers: { "Content-Type": "application/json", "Grpc-Metadata-hasleader": "true" },
        signal: AbortSignal.timeout(ms),
        ...(this.#tls === undefined ? {} : { tls: this.#tls }),
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      return this.#fetchFailure(err, ms);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return notEtcd(status, text);
    }
    const o = typeof json === "object" && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
    if (status === 200 && o !== undefined && typeof o.header === "object" && o.header !== null) {
      try {
        return { value: parse(o) };
      } catch (err) {
        if (err instanceof WireError) return notEtcd(status, text);
        throw err;
      }
    }
    if (o !== undefined && typeof o.code === "number" && (typeof o.message === "string" || typeof o.error === "string")) {
      return grpcFailure(o.code, String(o.message ?? o.error));
    }
    return notEtcd(status, text);
  }

  #fetchFailure(err: unknown, ms: number): Failure {
    const name = (err as Error | undefined)?.name;
    if (name === "TimeoutError" || name === "AbortError") return { kind: "transient", cause: `no answer within ${ms} ms`, reached: true };
    const code = errorCode(err);
    const message = (err as Error | undefined)?.message ?? String(err);
    if (VERIFY_CODES.has(code)) {
      return { kind: "config", cause: `TLS: the member's certificate is not trusted with etcd.caFile${this.#conf.caFile === undefined ? " (not set)" : ` ${this.#conf.caFile}`}: ${message}` };
    }
    if (code === "EPROTO") {
      return { kind: "config", cause: `TLS handshake failed: the member may require a client certificate (etcd.certFile, etcd.keyFile), or not speak TLS on this port: ${message}` };
    }
    if (code === "FailedToOpenSocket" && this.#tls !== undefined && !this.#tlsDiagnosed) {
      this.#tlsDiagnosed = true;
      const bad = diagnoseTls(this.#conf, this.#tls);
      if (bad !== undefined) throw new InvalidConfigError(`invalid ${bad.field}: ${bad.why}`, { cause: err });
    }
    if (Object.hasOwn(NOT_SENT, code)) return { kind: "transient", cause: NOT_SENT[code]!, reached: false };
    if (Object.hasOwn(LOST, code)) return { kind: "transient", cause: LOST[code]!, reached: true };
    return { kind: "transient", cause: code === "" || message.startsWith(code) ? message : `${code}: ${message}`, reached: true };
  }
}

/** An answer from something that is not etcd's v3 gateway. */
function notEtcd(status: number, text: string): Failure {
  const excerpt = text.trim().slice(0, 80);
  return { kind: "config", cause: `answered HTTP ${status} ${JSON.stringify(excerpt)}, not etcd's v3 API (is this an etcd client URL, and etcd 3.4 or later?)` };
}
