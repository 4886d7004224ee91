/**
 * An OTLP/HTTP trace collector for tests: POST /v1/traces on 127.0.0.1, in both encodings, each
 * request decoded into the spans it carries.
 *
 * A protobuf body is decoded by protoc (Debian package protobuf-compiler), the reference
 * implementation, against the transcribed message definitions in test/fixtures/otlp/, so a body
 * the official definitions do not read the same way fails here. A JSON body is read by the OTLP
 * JSON rules (lowerCamelCase names, hex ids, 64-bit integers as decimal strings, enums as
 * integers). Both readers are strict: a field outside the definitions, an id of the wrong length or
 * an attribute value with no or two members is a decode error (answered 400, listed by
 * decodeErrors()). Modes: "ok" answers 200, "error500" answers 500 (after decoding, so a test sees
 * what was sent), "slow" answers 200 after slowMs (default 10 s) unless the client gives up first.
 */
import { join } from "node:path";
import type { SpanData } from "../../shared/telemetry/span.ts";
import { parseTextFormat, type TextMessage, type TextValue } from "./protobuf-text-format.ts";

export type ReceivedValue = string | number | boolean;

/** A span as the collector decoded it: the fields of SpanData, with its times in nanoseconds. */
export interface ReceivedSpan extends Omit<SpanData, "startMs" | "endMs" | "attributes"> {
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, ReceivedValue>;
  /** The resource of the ResourceSpans the span came in. */
  resource: Record<string, ReceivedValue>;
  scope: { name: string; version: string };
}

export type ReceiverMode = "ok" | "error500" | "slow";

export interface OtlpReceiver {
  /** http://127.0.0.1:PORT: the value for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly endpoint: string;
  /** The spans of every request decoded so far, in arrival order. */
  spans(): ReceivedSpan[];
  /** POST /v1/traces requests received (decodable or not). */
  readonly requests: number;
  /** The Content-Type of each request, in arrival order. */
  contentTypes(): string[];
  /** Why requests could not be decoded. */
  decodeErrors(): string[];
  /** Resolves once `count` spans have arrived; rejects after `limitMs`. */
  waitForSpans(count: number, limitMs?: number): Promise<ReceivedSpan[]>;
  /** Closes the listener and every connection; pending slow answers end. */
  stop(): Promise<void>;
}

/** The receiver cannot run here (protoc missing). */
export class ReceiverSetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReceiverSetupError";
  }
}

/** A body that does not decode as an ExportTraceServiceRequest. */
export class OtlpDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OtlpDecodeError";
  }
}

const PROTO_DIR = join(import.meta.dir, "..", "fixtures", "otlp");
const PROTO_FILE = "trace_service.proto";
const REQUEST_TYPE = "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest";

export function startOtlpReceiver(opts: { mode: ReceiverMode; slowMs?: number }): OtlpReceiver {
  const protoc = Bun.which("protoc");
  if (protoc === null) throw new ReceiverSetupError("protoc not found: the OTLP receiver needs the Debian package protobuf-compiler");
  const received: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const errors: string[] = [];
  const pendingSlow = new Set<() => void>();
  const pendingWork = new Set<Promise<unknown>>();
  let requests = 0;

  const answer = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    if (req.method !== "POST" || url.pathname !== "/v1/traces") return new Response("not found", { status: 404 });
    requests++;
    const contentType = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    contentTypes.push(contentType);
    const body = new Uint8Array(await req.arrayBuffer());
    try {
      if (contentType === "application/x-protobuf") received.push(...(await decodeProtobufRequest(protoc, body)));
      else if (contentType === "application/json") received.push(...decodeJsonRequest(new TextDecoder().decode(body)));
      else throw new OtlpDecodeError(`unsupported content type ${JSON.stringify(contentType)}`);
    } catch (error) {
      errors.push(error instanceof Error ? error.message : String(error));
      return new Response(error instanceof Error ? error.message : "bad request", { status: 400 });
    }
    if (opts.mode === "error500") return new Response("collector failure", { status: 500 });
    if (opts.mode === "slow" && !stopped.now) await slowly(opts.slowMs ?? 10_000, req.signal, pendingSlow);
    const isJson = contentType === "application/json";
    return new Response(isJson ? "{}" : new Uint8Array(0), { status: 200, headers: { "content-type": contentType } });
  };

  /** Set by stop(): a request still being decoded then is not held. */
  const stopped = { now: false };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const work = answer(req);
      pendingWork.add(work);
      void work.finally(() => pendingWork.delete(work));
      return work;
    },
  });

  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    spans: () => [...received],
    get requests() {
      return requests;
    },
    contentTypes: () => [...contentTypes],
    decodeErrors: () => [...errors],
    async waitForSpans(count, limitMs = 5000) {
      const deadline = performance.now() + limitMs;
      while (received.length < count) {
        if (performance.now() > deadline) throw new Error(`${received.length} spans received of ${count} expected within ${limitMs} ms (decode errors: ${errors.join("; ") || "none"})`);
        await Bun.sleep(5);
      }
      return [...received];
    },
    async stop() {
      stopped.now = true;
      for (const end of pendingSlow) end();
      await server.stop(true);
      await Promise.allSettled([...pendingWork]);
    },
  };
}

/** Waits `ms`, or less when the client goes away or the receiver stops. */
function slowly(ms: number, signal: AbortSignal, pending: Set<() => void>): Promise<void> {
  return new Promise((resolve) => {
    const end = () => {
      clearTimeout(timer);
      pending.delete(end);
      signal.removeEventListener("abort", end);
      resolve();
    };
    const timer = setTimeout(end, ms);
    pending.add(end);
    if (signal.aborted) end();
    else signal.addEventListener("abort", end);
  });
}

/** The spans of a protobuf ExportTraceServiceRequest, decoded by protoc. */
export async function decodeProtobufRequest(protoc: string, body: Uint8Array): Promise<ReceivedSpan[]> {
  const child = Bun.spawn([protoc, `--decode=${REQUEST_TYPE}`, `--proto_path=${PROTO_DIR}`, PROTO_FILE], {
    stdin: body,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [text, problems, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new OtlpDecodeError(`protoc could not decode the body: ${problems.trim()}`);
  return spansFromTextFormat(parseTextFormat(text));
}

// ---- protobuf, from protoc's text format ----

const SPAN_KINDS: Readonly<Record<string, number>> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};
const STATUS_CODES: Readonly<Record<string, number>> = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 };

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function spansFromTextFormat(request: TextMessage): ReceivedSpan[] {
  only(request, ["resource_spans"], "ExportTraceServiceRequest");
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of messages(request, "resource_spans")) {
    only(resourceSpans, ["resource", "scope_spans"], "ResourceSpans");
    const resourceMessage = optionalMessage(resourceSpans, "resource") ?? [];
    only(resourceMessage, ["attributes"], "Resource");
    const resource = textAttributes(resourceMessage);
    for (const scopeSpans of messages(resourceSpans, "scope_spans")) {
      only(scopeSpans, ["scope", "spans"], "ScopeSpans");
      const scopeMessage = optionalMessage(scopeSpans, "scope") ?? [];
      only(scopeMessage, ["name", "version"], "InstrumentationScope");
      const scope = { name: textString(scopeMessage, "name"), version: textString(scopeMessage, "version") };
      for (const span of messages(scopeSpans, "spans")) {
        only(span, ["trace_id", "span_id", "trace_state", "parent_span_id", "name", "kind", "start_time_unix_nano", "end_time_unix_nano", "attributes", "status"], "Span");
        const status = optionalMessage(span, "status") ?? [];
        only(status, ["message", "code"], "Status");
        spans.push({
          traceId: textId(span, "trace_id", [16]),
          spanId: textId(span, "span_id", [8]),
          parentSpanId: textId(span, "parent_span_id", [0, 8]),
          traceState: textString(span, "trace_state"),
          name: textString(span, "name"),
          kind: textEnum(span, "kind", SPAN_KINDS),
          startNs: BigInt(textToken(span, "start_time_unix_nano") ?? "0"),
          endNs: BigInt(textToken(span, "end_time_unix_nano") ?? "0"),
          attributes: textAttributes(span),
          status: { code: textEnum(status, "code", STATUS_CODES), message: textString(status, "message") },
          resource,
          scope,
        });
      }
    }
  }
  return spans;
}

function only(message: TextMessage, names: readonly string[], what: string): void {
  for (const field of message) if (!names.includes(field.name)) throw new OtlpDecodeError(`${what}: unexpected field ${field.name}`);
}

function values(message: TextMessage, name: string): TextValue[] {
  return message.filter((f) => f.name === name).map((f) => f.value);
}

function single(message: TextMessage, name: string): TextValue | undefined {
  const all = values(message, name);
  if (all.length > 1) throw new OtlpDecodeError(`field ${name} appears ${all.length} times`);
  return all[0];
}

function messages(message: TextMessage, name: string): TextMessage[] {
  return values(message, name).map((v) => {
    if (v.kind !== "message") throw new OtlpDecodeError(`field ${name} is not a message`);
    return v.fields;
  });
}

function optionalMessage(message: TextMessage, name: string): TextMessage | undefined {
  const value = single(message, name);
  if (value === undefined) return undefined;
  if (value.kind !== "message") throw new OtlpDecodeError(`field ${name} is not a message`);
  return value.fields;
}

function textBytes(message: TextMessage, name: string): Uint8Array {
  const value = single(message, name);
  if (value === undefined) return new Uint8Array(0);
  if (value.kind !== "string") throw new OtlpDecodeError(`field ${name} is not a string`);
  return value.bytes;
}

function textString(message: TextMessage, name: string): string {
  try {
    return strictUtf8.decode(textBytes(message, name));
  } catch {
    throw new OtlpDecodeError(`field ${name} is not UTF-8`);
  }
}

function textId(message: TextMessage, name: string, lengths: readonly number[]): string {
  const bytes = textBytes(message, name);
  if (!lengths.includes(bytes.length)) throw new OtlpDecodeError(`${name} has ${bytes.length} bytes`);
  return Buffer.from(bytes).toString("hex");
}

function textToken(message: TextMessage, name: string): string | undefined {
  const value = single(message, name);
  if (value === undefined) return undefined;
  if (value.kind !== "token") throw new OtlpDecodeError(`field ${name} is not a scalar`);
  return value.text;
}

function textEnum(message: TextMessage, name: string, names: Readonly<Record<string, number>>): number {
  const token = textToken(message, name);
  if (token === undefined) return 0;
  const known = names[token];
  if (known !== undefined) return known;
  if (/^\d+$/.test(token)) return Number(token);
  throw new OtlpDecodeError(`field ${name}: unknown enum value ${token}`);
}

function textAttributes(message: TextMessage): Record<string, ReceivedValue> {
  const attributes: Record<string, ReceivedValue> = {};
  for (const keyValue of messages(message, "attributes")) {
    only(keyValue, ["key", "value"], "KeyValue");
    const any = optionalMessage(keyValue, "value") ?? [];
    only(any, ["string_value", "bool_value", "int_value", "double_value"], "AnyValue");
    if (any.length !== 1) throw new OtlpDecodeError(`attribute ${textString(keyValue, "key")}: AnyValue with ${any.length} members`);
    const member = any[0]!;
    let value: ReceivedValue;
    if (member.name === "string_value") value = textString(any, "string_value");
    else if (member.name === "bool_value") value = textToken(any, "bool_value") === "true";
    else if (member.name === "int_value") value = Number(BigInt(textToken(any, "int_value")!));
    else value = textDouble(textToken(any, "double_value")!);
    attributes[textString(keyValue, "key")] = value;
  }
  return attributes;
}

function textDouble(token: string): number {
  const special: Record<string, number> = { inf: Infinity, "-inf": -Infinity, nan: NaN, "-nan": NaN };
  const value = special[token.toLowerCase()] ?? Number(token);
  if (Number.isNaN(value) && !token.toLowerCase().includes("nan")) throw new OtlpDecodeError(`double ${token}`);
  return value;
}

// ---- JSON ----

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** The spans of a JSON ExportTraceServiceRequest. */
export function decodeJsonRequest(text: string): ReceivedSpan[] {
  let request: Json;
  try {
    request = JSON.parse(text) as Json;
  } catch {
    throw new OtlpDecodeError("body is not JSON");
  }
  const spans: ReceivedSpan[] = [];
  const top = object(request, "ExportTraceServiceRequest", ["resourceSpans"]);
  for (const rs of array(top["resourceSpans"], "resourceSpans")) {
    const resourceSpans = object(rs, "ResourceSpans", ["resource", "scopeSpans"]);
    const resource = jsonAttributes(object(resourceSpans["resource"] ?? {}, "Resource", ["attributes"])["attributes"]);
    for (const ss of array(resourceSpans["scopeSpans"], "scopeSpans")) {
      const scopeSpans = object(ss, "ScopeSpans", ["scope", "spans"]);
      const scopeObject = object(scopeSpans["scope"] ?? {}, "InstrumentationScope", ["name", "version"]);
      const scope = { name: jsonString(scopeObject["name"], "scope.name"), version: jsonString(scopeObject["version"], "scope.version") };
      for (const s of array(scopeSpans["spans"], "spans")) {
        const span = object(s, "Span", ["traceId", "spanId", "traceState", "parentSpanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano", "attributes", "status"]);
        const status = object(span["status"] ?? {}, "Status", ["message", "code"]);
        spans.push({
          traceId: jsonId(span["traceId"], "traceId", [32]),
          spanId: jsonId(span["spanId"], "spanId", [16]),
          parentSpanId: jsonId(span["parentSpanId"], "parentSpanId", [0, 16]),
          traceState: jsonString(span["traceState"], "traceState"),
          name: jsonString(span["name"], "name"),
          kind: jsonEnum(span["kind"], "kind"),
          startNs: jsonInt64(span["startTimeUnixNano"], "startTimeUnixNano"),
          endNs: jsonInt64(span["endTimeUnixNano"], "endTimeUnixNano"),
          attributes: jsonAttributes(span["attributes"]),
          status: { code: jsonEnum(status["code"], "status.code"), message: jsonString(status["message"], "status.message") },
          resource,
          scope,
        });
      }
    }
  }
  return spans;
}

function object(value: Json | undefined, what: string, keys: readonly string[]): JsonObject {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new OtlpDecodeError(`${what} is not an object`);
  for (const key of Object.keys(value)) if (!keys.includes(key)) throw new OtlpDecodeError(`${what}: unexpected field ${key}`);
  return value;
}

function array(value: Json | undefined, what: string): Json[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new OtlpDecodeError(`${what} is not an array`);
  return value;
}

function jsonString(value: Json | undefined, what: string): string {
  if (value === undefined) return "";
  if (typeof value !== "string") throw new OtlpDecodeError(`${what} is not a string`);
  return value;
}

function jsonId(value: Json | undefined, what: string, lengths: readonly number[]): string {
  const hex = jsonString(value, what);
  if (!/^[0-9a-fA-F]*$/.test(hex) || !lengths.includes(hex.length)) throw new OtlpDecodeError(`${what} ${JSON.stringify(hex)} is not hex of ${lengths.join(" or ")} digits`);
  return hex.toLowerCase();
}

function jsonEnum(value: Json | undefined, what: string): number {
  if (value === undefined) return 0;
  if (typeof value !== "number" || !Number.isInteger(value)) throw new OtlpDecodeError(`${what} is not an integer enum value`);
  return value;
}

function jsonInt64(value: Json | undefined, what: string): bigint {
  if (value === undefined) return 0n;
  if (typeof value === "string" && /^-?\d+$/.test(value)) return BigInt(value);
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  throw new OtlpDecodeError(`${what} ${JSON.stringify(value)} is not a 64-bit integer`);
}

function jsonAttributes(value: Json | undefined): Record<string, ReceivedValue> {
  const attributes: Record<string, ReceivedValue> = {};
  for (const kv of array(value, "attributes")) {
    const keyValue = object(kv, "KeyValue", ["key", "value"]);
    const key = jsonString(keyValue["key"], "key");
    const any = object(keyValue["value"], `attribute ${key}`, ["stringValue", "boolValue", "intValue", "doubleValue"]);
    const members = Object.keys(any);
    if (members.length !== 1) throw new OtlpDecodeError(`attribute ${key}: AnyValue with ${members.length} members`);
    const member = members[0]!;
    const raw = any[member];
    if (member === "stringValue") attributes[key] = jsonString(raw, key);
    else if (member === "boolValue") {
      if (typeof raw !== "boolean") throw new OtlpDecodeError(`attribute ${key}: boolValue is not a boolean`);
      attributes[key] = raw;
    } else if (member === "intValue") attributes[key] = Number(jsonInt64(raw, key));
    else if (typeof raw === "number") attributes[key] = raw;
    else if (raw === "NaN" || raw === "Infinity" || raw === "-Infinity") attributes[key] = Number(raw);
    else throw new OtlpDecodeError(`attribute ${key}: doubleValue ${JSON.stringify(raw)}`);
  }
  return attributes;
}
