/**
 * Sends finished spans to an OTLP/HTTP collector in batches, off the path of the calls that
 * record them.
 *
 * `add` only appends to a bounded queue (a full queue drops the span and counts it), so recording
 * never waits, never throws and never holds more than the queue's spans. A batch leaves when it is
 * full or when its first span has waited the schedule delay; at most one request is in flight, so a
 * slow collector costs one pending request and a full queue, never a pile of requests. Each
 * request is bounded by the timeout; a failed one (non-2xx answer, network error, timeout) drops its
 * batch, counted with the reason, and is never retried. The timers are unref'd: an idle exporter
 * never keeps a process alive. A pending request does (the runtime holds the process for a fetch),
 * so a short-lived process calls `flush(limitMs)` and then `close()`, which abandons what is left.
 */
import type { SpanData } from "../span.ts";
import type { TraceExportConfig } from "./config.ts";
import { encodeTraceRequestJson } from "./encode-json.ts";
import { encodeTraceRequestProto } from "./encode-proto.ts";
import type { InstrumentationScope } from "./span-values.ts";

/** Why spans were dropped: no room in the queue, a failed request, a request past its timeout. */
export type DropReason = "queue_full" | "export_failed" | "timeout";

export interface ExportHooks {
  /** `count` spans will never reach the collector. Also called by close() for the spans it abandons. */
  dropped(count: number, reason: DropReason): void;
  /** The collector accepted `count` spans. */
  exported?(count: number): void;
  /** A line for the operator: the first of a run of failures alike, and the recovery after them. */
  log?(line: string): void;
}

/** The part of fetch the exporter uses (tests pass their own). */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** The instrumentation scope spans are reported under unless the constructor is given another. */
export const DEFAULT_SCOPE: InstrumentationScope = { name: "cni-plugins", version: "" };

interface InFlight {
  controller: AbortController;
  done: Promise<void>;
}

/** Raised inside the exporter when a request outlives the timeout (the abort reason). */
class ExportTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
    this.name = "ExportTimeoutError";
  }
}

/** Raised inside the exporter when close() abandons the request in flight (the abort reason). */
class ExporterClosedError extends Error {
  constructor() {
    super("exporter closed");
    this.name = "ExporterClosedError";
  }
}

export class BatchSpanExporter {
  readonly #config: TraceExportConfig;
  readonly #hooks: ExportHooks;
  readonly #fetch: FetchLike;
  readonly #scope: InstrumentationScope;
  readonly #contentType: string;
  /** Where spans go, without credentials a URL might carry, for log lines. */
  readonly #where: string;

  #queue: SpanData[] = [];
  #inFlight: InFlight | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** The problem of the last failed request, while failures last (so a run of them logs once). */
  #failing: string | undefined;

  constructor(config: TraceExportConfig, hooks: ExportHooks, fetchImpl: FetchLike = fetch, scope: InstrumentationScope = DEFAULT_SCOPE) {
    this.#config = config;
    this.#hooks = hooks;
    this.#fetch = fetchImpl;
    this.#scope = scope;
    this.#contentType = config.protocol === "http/json" ? "application/json" : "application/x-protobuf";
    this.#where = redacted(config.endpoint);
  }

  /** Spans waiting in the queue (not counting a batch in flight). */
  get queued(): number {
    return this.#queue.length;
  }

  /** Whether a request is in flight. */
  get busy(): boolean {
    return this.#inFlight !== undefined;
  }

  /** Queues `span` for export, or drops it (counted) when the queue is full or the exporter closed. Never throws. */
  add(span: SpanData): void {
    if (this.#closed || this.#queue.length >= this.#config.maxQueueSize) {
      this.#dropped(1, "queue_full");
      return;
    }
    this.#queue.push(span);
    if (this.#inFlight !== undefined) return; // its end schedules the next batch
    if (this.#queue.length >= this.#config.maxExportBatchSize) this.#schedule(0);
    else this.#schedule(this.#config.scheduleDelayMs);
  }

  /**
   * Sends what is queued (batch after batch, one request at a time) and resolves when all is sent
   * or after `limitMs`, whichever comes first; a request still pending then stays in flight.
   */
  async flush(limitMs: number): Promise<void> {
    let expire: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<"expired">((resolve) => {
      expire = setTimeout(() => resolve("expired"), Math.max(0, limitMs));
    });
    try {
      while (!this.#closed) {
        if (this.#inFlight === undefined) {
          if (this.#queue.length === 0) return;
          this.#startExport();
        }
        const current = this.#inFlight;
        if (current === undefined) continue; // the batch could not be encoded and is gone
        if ((await Promise.race([current.done, expired])) === "expired") return;
      }
    } finally {
      clearTimeout(expire);
    }
  }

  /** Stops: abandons the request in flight (dropped as "timeout") and the queued spans (dropped as "export_failed"). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#inFlight?.controller.abort(new ExporterClosedError());
    const abandoned = this.#queue.length;
    this.#queue = [];
    if (abandoned > 0) this.#dropped(abandoned, "export_failed");
  }

  /** Arms the batch timer to fire within `delayMs` (an earlier timer stays). */
  #schedule(delayMs: number): void {
    if (this.#timer !== undefined) {
      if (delayMs > 0) return;
      clearTimeout(this.#timer);
    }
    const timer = setTimeout(() => {
      this.#timer = undefined;
      this.#startExport();
    }, delayMs);
    timer.unref();
    this.#timer = timer;
  }

  /** Sends the next batch unless a request is in flight. */
  #startExport(): void {
    if (this.#closed || this.#inFlight !== undefined || this.#queue.length === 0) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#queue.splice(0, this.#config.maxExportBatchSize);
    let body: Uint8Array | string;
    try {
      body = this.#config.protocol === "http/json"
        ? encodeTraceRequestJson(this.#config.resource, this.#scope, batch)
        : encodeTraceRequestProto(this.#config.resource, this.#scope, batch);
    } catch (error) {
      this.#failed(batch.length, "export_failed", `spans not encodable: ${messageOf(error)}`);
      this.#next();
      return;
    }
    const controller = new AbortController();
    const done = this.#send(batch.length, body, controller).finally(() => {
      this.#inFlight = undefined;
      this.#next();
    });
    this.#inFlight = { controller, done };
  }

  /** One request; resolves (never rejects) once the batch is exported or counted as dropped. */
  async #send(count: number, body: Uint8Array | string, controller: AbortController): Promise<void> {
    const timeout = setTimeout(() => controller.abort(new ExportTimeoutError(this.#config.timeoutMs)), this.#config.timeoutMs);
    timeout.unref();
    try {
      const response = await this.#fetch(this.#config.endpoint, {
        method: "POST",
        headers: { ...this.#config.headers, "content-type": this.#contentType },
        body,
        signal: controller.signal,
      });
      await response.arrayBuffer(); // read to the end, so the connection can serve the next request
      if (response.ok) this.#succeeded(count);
      else this.#failed(count, "export_failed", `HTTP ${response.status}`);
    } catch (error) {
      const reason = controller.signal.reason;
      if (reason instanceof ExportTimeoutError) this.#failed(count, "timeout", reason.message);
      else if (reason instanceof ExporterClosedError) this.#failed(count, "timeout", "abandoned at close");
      else this.#failed(count, "export_failed", messageOf(error));
    } finally {
      clearTimeout(timeout);
    }
  }

  /** After a request: the next batch at once when one is full, else when the delay has passed. */
  #next(): void {
    if (this.#closed || this.#queue.length === 0) return;
    if (this.#queue.length >= this.#config.maxExportBatchSize) this.#startExport();
    else this.#schedule(this.#config.scheduleDelayMs);
  }

  #succeeded(count: number): void {
    if (this.#failing !== undefined) {
      this.#failing = undefined;
      this.#log(`otlp trace export to ${this.#where} works again`);
    }
    try {
      this.#hooks.exported?.(count);
    } catch {
      // a hook's failure is not the exporter's
    }
  }

  #failed(count: number, reason: DropReason, problem: string): void {
    if (this.#failing !== problem) {
      this.#failing = problem;
      this.#log(`otlp trace export to ${this.#where} failed (${problem}): ${count} spans dropped; alike failures are not logged again`);
    }
    this.#dropped(count, reason);
  }

  #dropped(count: number, reason: DropReason): void {
    try {
      this.#hooks.dropped(count, reason);
    } catch {
      // a hook's failure is not the exporter's
    }
  }

  #log(line: string): void {
    try {
      this.#hooks.log?.(line);
    } catch {
      // a hook's failure is not the exporter's
    }
  }
}

/** `endpoint` without user name, password, query or fragment. */
function redacted(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    return `${url.origin}${url.pathname}`;
  } catch {
    return "the collector";
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
