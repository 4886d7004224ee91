/**
 * What both OTLP encodings (protobuf and JSON) derive from a SpanData the same way: times in
 * nanoseconds, ids as bytes, and which AnyValue member an attribute value becomes.
 */
import type { AttributeValue } from "../span.ts";

/** A span id or trace id is not the hex the encodings require. */
export class SpanEncodingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SpanEncodingError";
  }
}

const NANOS_PER_MS = 1_000_000n;

/**
 * Epoch milliseconds (fractional) as epoch nanoseconds. The fraction is kept to the microsecond:
 * a double holding today's epoch milliseconds is precise to about a quarter of a microsecond, so
 * finer digits would be noise.
 */
export function unixNanosFromMs(ms: number): bigint {
  if (!Number.isFinite(ms) || ms <= 0) return 0n;
  const whole = Math.floor(ms);
  const micros = Math.round((ms - whole) * 1000);
  return BigInt(whole) * NANOS_PER_MS + BigInt(micros) * 1000n;
}

/** `hex` (an even number of hex digits) as bytes; "" is no bytes. */
export function bytesFromHex(hex: string, what: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new SpanEncodingError(`${what} ${JSON.stringify(hex)} is not hex`);
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/** The AnyValue member an attribute value is encoded as. */
export type TypedAttribute =
  | { type: "string"; value: string }
  | { type: "bool"; value: boolean }
  | { type: "int"; value: bigint }
  | { type: "double"; value: number };

const INT64_LIMIT = 2 ** 63;

/** Whole numbers within int64 are intValue; any other number (fraction, too large, not finite) doubleValue. */
export function typedAttribute(value: AttributeValue): TypedAttribute {
  if (typeof value === "string") return { type: "string", value };
  if (typeof value === "boolean") return { type: "bool", value };
  if (Number.isInteger(value) && value < INT64_LIMIT && value >= -INT64_LIMIT) return { type: "int", value: BigInt(value) };
  return { type: "double", value };
}

/** The instrumentation scope spans are reported under. */
export interface InstrumentationScope {
  name: string;
  version: string;
}
