/**
 * A finished span as this suite records it (one per plugin call, one per phase of a call), in the
 * form the OTLP exporter (./otlp/) encodes and a standalone call hands to the agent.
 */

/** OpenTelemetry SpanKind (trace.proto Span.SpanKind). */
export const SPAN_KIND_INTERNAL = 1;
export const SPAN_KIND_SERVER = 2;

/** OpenTelemetry Status.StatusCode. */
export const STATUS_CODE_UNSET = 0;
export const STATUS_CODE_OK = 1;
export const STATUS_CODE_ERROR = 2;

/** An attribute value: strings, whole numbers (OTLP intValue) and booleans. */
export type AttributeValue = string | number | boolean;

export interface SpanData {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** 16 lowercase hex digits; "" for a root span. */
  parentSpanId: string;
  /** The W3C tracestate the span's context carries ("" when none). */
  traceState: string;
  name: string;
  kind: number;
  /** Start and end, milliseconds since the Unix epoch (fractional: microseconds kept). */
  startMs: number;
  endMs: number;
  attributes: Record<string, AttributeValue>;
  /** STATUS_CODE_*, and a message for an error. */
  status: { code: number; message: string };
}
