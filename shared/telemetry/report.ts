/**
 * What one finished plugin invocation tells whoever counts and traces calls (the resident agent):
 * a CallReport. A call the agent serves hands its reports to the agent's main thread; a standalone
 * process sends them to the agent's report socket (agent/report-socket.ts) as JSON, which the
 * agent decodes with {@link decodeCallReport}: anything a sender could make up is bounded there.
 */
import { PHASES, type IpamUsage, type Phase } from "./invocation.ts";
import type { SpanData } from "./span.ts";

export interface CallReport {
  plugin: string;
  /** CNI_COMMAND. */
  command: string;
  /** 0 on success, else the CNI error code (999 when the call printed none). */
  code: number;
  durationS: number;
  /** Time spent in each phase the call met, seconds. */
  phases: [Phase, number][];
  ipam: IpamUsage[];
  /** The call's span and its phases' spans, when the call is sampled. */
  spans?: SpanData[];
}

/** The most a report may carry (a datagram of a standalone call). */
export const REPORT_LIMITS = { spans: 256, ipam: 64, bytes: 256 * 1024, name: 256 } as const;

const COMMANDS = new Set(["ADD", "DEL", "CHECK", "STATUS", "GC", "VERSION", "other"]);
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:\-/]*$/;
const HEX32 = /^[0-9a-f]{32}$/;
const HEX16 = /^[0-9a-f]{16}$/;

export class InvalidReportError extends Error {
  override name = "InvalidReportError";
}

function fail(why: string): never {
  throw new InvalidReportError(why);
}

function name(v: unknown, field: string, allowEmpty = false): string {
  if (typeof v !== "string" || v.length > REPORT_LIMITS.name || (v === "" ? !allowEmpty : !NAME.test(v))) fail(`${field} is not a name`);
  return v;
}

function count(v: unknown, field: string): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) fail(`${field} is not a number ≥ 0`);
  return v;
}

function span(v: unknown): SpanData {
  const s = v as Partial<SpanData>;
  if (typeof s !== "object" || s === null) fail("a span is not an object");
  if (typeof s.traceId !== "string" || !HEX32.test(s.traceId)) fail("span traceId");
  if (typeof s.spanId !== "string" || !HEX16.test(s.spanId)) fail("span spanId");
  if (typeof s.parentSpanId !== "string" || (s.parentSpanId !== "" && !HEX16.test(s.parentSpanId))) fail("span parentSpanId");
  if (typeof s.traceState !== "string" || s.traceState.length > 512) fail("span traceState");
  if (typeof s.name !== "string" || s.name.length > REPORT_LIMITS.name) fail("span name");
  const attributes: SpanData["attributes"] = {};
  if (typeof s.attributes !== "object" || s.attributes === null) fail("span attributes");
  const entries = Object.entries(s.attributes);
  if (entries.length > 32) fail("span attributes: too many");
  for (const [k, a] of entries) {
    if (k.length > 64) fail("span attribute key");
    if (typeof a === "string") attributes[k] = a.slice(0, 1024);
    else if (typeof a === "number" || typeof a === "boolean") attributes[k] = a;
    else fail(`span attribute ${k}`);
  }
  const status = s.status as SpanData["status"] | undefined;
  if (typeof status !== "object" || status === null || ![0, 1, 2].includes(status.code) || typeof status.message !== "string") fail("span status");
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    parentSpanId: s.parentSpanId,
    traceState: s.traceState,
    name: s.name,
    kind: count(s.kind, "span kind"),
    startMs: count(s.startMs, "span startMs"),
    endMs: count(s.endMs, "span endMs"),
    attributes,
    status: { code: status.code, message: status.message.slice(0, 1024) },
  };
}

/** A report sent by another process, checked field by field; throws InvalidReportError. */
export function decodeCallReport(text: string): CallReport {
  if (text.length > REPORT_LIMITS.bytes) fail("too large");
  let v: Partial<CallReport>;
  try {
    v = JSON.parse(text) as Partial<CallReport>;
  } catch {
    fail("not JSON");
  }
  if (typeof v !== "object" || v === null) fail("not an object");
  const command = v.command;
  if (typeof command !== "string" || !COMMANDS.has(command)) fail("command");
  const code = v.code;
  if (typeof code !== "number" || !Number.isInteger(code) || code < 0 || code > 999) fail("code");
  if (!Array.isArray(v.phases) || v.phases.length > PHASES.length) fail("phases");
  const phases = v.phases.map(([p, s]): [Phase, number] => {
    if (!(PHASES as readonly string[]).includes(p)) fail(`phase ${String(p)}`);
    return [p, count(s, "phase time")];
  });
  if (!Array.isArray(v.ipam) || v.ipam.length > REPORT_LIMITS.ipam) fail("ipam");
  const ipam = v.ipam.map((u: Partial<IpamUsage>) => ({
    plugin: name(u.plugin, "ipam plugin"),
    network: name(u.network, "ipam network"),
    range: name(u.range, "ipam range"),
    used: count(u.used, "ipam used"),
    free: count(u.free, "ipam free"),
  }));
  const out: CallReport = { plugin: name(v.plugin, "plugin"), command, code, durationS: count(v.durationS, "durationS"), phases, ipam };
  if (v.spans !== undefined) {
    if (!Array.isArray(v.spans) || v.spans.length > REPORT_LIMITS.spans) fail("spans");
    out.spans = v.spans.map(span);
  }
  return out;
}
