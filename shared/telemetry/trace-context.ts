/**
 * The W3C trace context a call gets in TRACEPARENT (libcni passes the runtime's; a plugin passes
 * its own call's to the plugins it delegates to), and the random ids of new traces and spans.
 */

/** What a valid `traceparent` says. */
export interface TraceParent {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** The parent span: 16 lowercase hex digits, not all zero. */
  spanId: string;
  /** The sampled flag (bit 0 of trace-flags). */
  sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * Parses a `traceparent` header value; undefined when absent or invalid (then the call starts a
 * trace of its own). Version ff is invalid; a version above 00 may carry more fields after a dash.
 */
export function parseTraceParent(value: string | undefined): TraceParent | undefined {
  if (value === undefined) return undefined;
  const m = TRACEPARENT.exec(value.trim());
  if (m === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** The `traceparent` (version 00) of span `spanId` of trace `traceId`. */
export function formatTraceParent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`;
}

/**
 * `words` random 32-bit words as hex. Math.random, not the crypto generator: ids need to be unique
 * with high probability, not secret, and a plugin process's first crypto.getRandomValues costs
 * 0.3 ms; all zero (invalid for both ids) becomes 1.
 */
function randomHex(words: number): string {
  let out = "";
  let zero = true;
  for (let i = 0; i < words; i++) {
    const w = Math.floor(Math.random() * 0x1_0000_0000);
    if (w !== 0) zero = false;
    out += w.toString(16).padStart(8, "0");
  }
  return zero ? `${out.slice(0, -1)}1` : out;
}

/** A new trace id (16 random bytes). */
export function newTraceId(): string {
  return randomHex(4);
}

/** A new span id (8 random bytes). */
export function newSpanId(): string {
  return randomHex(2);
}
