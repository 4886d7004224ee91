import { describe, expect, test } from "bun:test";
import { encodeTraceRequestProto } from "./encode-proto.ts";
import { SpanEncodingError } from "./span-values.ts";
import { CHILD_SPAN, ROOT_SPAN, SAMPLE_RESOURCE, SAMPLE_SCOPE } from "./testing.ts";

/**
 * An independent protobuf reader for the test: walks tags and returns, per field number, the raw
 * values (varint as bigint, fixed64 as its 8 bytes, length-delimited as bytes).
 */
type Raw = { wire: 0; value: bigint } | { wire: 1; bytes: Uint8Array } | { wire: 2; bytes: Uint8Array } | { wire: 5; bytes: Uint8Array };

function readVarint(bytes: Uint8Array, at: { pos: number }): bigint {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    const b = bytes[at.pos++];
    if (b === undefined) throw new Error("truncated varint");
    result |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return result;
    shift += 7n;
  }
}

function fields(bytes: Uint8Array): Map<number, Raw[]> {
  const out = new Map<number, Raw[]>();
  const at = { pos: 0 };
  while (at.pos < bytes.length) {
    const tag = Number(readVarint(bytes, at));
    const field = tag >>> 3;
    const wire = tag & 7;
    let raw: Raw;
    if (wire === 0) raw = { wire, value: readVarint(bytes, at) };
    else if (wire === 1) raw = { wire, bytes: bytes.slice(at.pos, (at.pos += 8)) };
    else if (wire === 5) raw = { wire, bytes: bytes.slice(at.pos, (at.pos += 4)) };
    else if (wire === 2) {
      const length = Number(readVarint(bytes, at));
      raw = { wire, bytes: bytes.slice(at.pos, (at.pos += length)) };
    } else throw new Error(`wire type ${wire}`);
    if (at.pos > bytes.length) throw new Error("truncated field");
    out.set(field, [...(out.get(field) ?? []), raw]);
  }
  return out;
}

function all(m: Map<number, Raw[]>, field: number): Raw[] {
  return m.get(field) ?? [];
}
function one(m: Map<number, Raw[]>, field: number): Raw {
  const values = all(m, field);
  if (values.length !== 1) throw new Error(`field ${field}: ${values.length} values`);
  return values[0]!;
}
function sub(m: Map<number, Raw[]>, field: number): Map<number, Raw[]> {
  return fields(bytesOf(one(m, field)));
}
function bytesOf(raw: Raw): Uint8Array {
  if (raw.wire !== 2) throw new Error(`wire ${raw.wire}, not length-delimited`);
  return raw.bytes;
}
function text(raw: Raw): string {
  return new TextDecoder().decode(bytesOf(raw));
}
function hex(raw: Raw): string {
  return [...bytesOf(raw)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
function varint(raw: Raw): bigint {
  if (raw.wire !== 0) throw new Error(`wire ${raw.wire}, not varint`);
  return raw.value;
}
function double(raw: Raw): number {
  if (raw.wire !== 1) throw new Error(`wire ${raw.wire}, not fixed64`);
  return new DataView(raw.bytes.buffer, raw.bytes.byteOffset, 8).getFloat64(0, true);
}
function fixed64(raw: Raw): bigint {
  if (raw.wire !== 1) throw new Error(`wire ${raw.wire}, not fixed64`);
  return new DataView(raw.bytes.buffer, raw.bytes.byteOffset, 8).getBigUint64(0, true);
}

/** KeyValue list → key → [AnyValue field number, decoded value]. */
function attributes(list: Raw[]): Record<string, [number, unknown]> {
  const out: Record<string, [number, unknown]> = {};
  for (const kv of list) {
    const m = fields(bytesOf(kv));
    const any = sub(m, 2);
    expect(any.size).toBe(1); // exactly one oneof member
    const [[member, [raw]]] = [...any.entries()] as [[number, Raw[]]];
    let value: unknown;
    if (member === 1) value = text(raw!);
    else if (member === 2) value = varint(raw!) === 1n;
    else if (member === 3) value = BigInt.asIntN(64, varint(raw!));
    else if (member === 4) value = double(raw!);
    out[text(one(m, 1))] = [member, value];
  }
  return out;
}

describe("encodeTraceRequestProto", () => {
  const bytes = encodeTraceRequestProto(SAMPLE_RESOURCE, SAMPLE_SCOPE, [ROOT_SPAN, CHILD_SPAN]);
  const request = fields(bytes);

  test("one ResourceSpans with the resource and one ScopeSpans", () => {
    expect([...request.keys()]).toEqual([1]);
    const resourceSpans = sub(request, 1);
    expect([...resourceSpans.keys()].sort()).toEqual([1, 2]);
    const resource = sub(resourceSpans, 1);
    expect(attributes(all(resource, 1))).toEqual({
      "service.name": [1, "cni-plugins"],
      "host.name": [1, "node-1"],
      "process.pid": [3, 4242n],
    });
    const scopeSpans = sub(resourceSpans, 2);
    const scope = sub(scopeSpans, 1);
    expect(text(one(scope, 1))).toBe("cni-plugins");
    expect(text(one(scope, 2))).toBe("1.2.3");
    expect(all(scopeSpans, 2).length).toBe(2);
  });

  const spans = all(sub(sub(request, 1), 2), 2).map((s) => fields(bytesOf(s)));

  test("a root span: ids, name, kind, times in nanoseconds, attributes, status; no parent, no trace state", () => {
    const root = spans[0]!;
    expect(hex(one(root, 1))).toBe(ROOT_SPAN.traceId);
    expect(hex(one(root, 2))).toBe(ROOT_SPAN.spanId);
    expect(root.has(3)).toBe(false);
    expect(root.has(4)).toBe(false);
    expect(text(one(root, 5))).toBe("cni ADD bridge");
    expect(varint(one(root, 6))).toBe(2n);
    expect(fixed64(one(root, 7))).toBe(1_700_000_000_123_456_000n);
    expect(fixed64(one(root, 8))).toBe(1_700_000_000_130_789_000n);
    expect(attributes(all(root, 9))).toEqual({
      "cni.command": [1, "ADD"],
      "cni.plugin": [1, "bridge"],
      "cni.ifname": [1, "eth0"],
      "cni.exit_code": [3, 0n],
      "cni.cached": [2, false],
      "cni.ratio": [4, 0.5],
    });
    const status = sub(root, 15);
    expect(status.has(2)).toBe(false);
    expect(varint(one(status, 3))).toBe(1n);
    expect([...root.keys()].every((f) => [1, 2, 5, 6, 7, 8, 9, 15].includes(f))).toBe(true);
  });

  test("a child span: parent, trace state, negative and large ints, empty and unicode strings, error status", () => {
    const child = spans[1]!;
    expect(hex(one(child, 4))).toBe("b7ad6b7169203331");
    expect(text(one(child, 3))).toBe("vendor=a,other=b");
    expect(varint(one(child, 6))).toBe(1n);
    expect(fixed64(one(child, 7))).toBe(1_700_000_000_124_001_000n);
    expect(fixed64(one(child, 8))).toBe(1_700_000_000_125_500_000n);
    expect(attributes(all(child, 9))).toEqual({
      "error.type": [1, "ENOSPC"],
      retries: [3, -3n],
      big: [3, 9_007_199_254_740_991n],
      empty: [1, ""],
      unicode: [1, "réseau ✓"],
      yes: [2, true],
    });
    const status = sub(child, 15);
    expect(text(one(status, 2))).toBe("no address left in 10.0.0.0/30");
    expect(varint(one(status, 3))).toBe(2n);
  });

  test("no spans is a request with the resource and scope only", () => {
    const empty = fields(encodeTraceRequestProto({ "service.name": "x" }, { name: "s", version: "" }, []));
    const scopeSpans = sub(sub(empty, 1), 2);
    expect(all(scopeSpans, 2).length).toBe(0);
    expect(sub(scopeSpans, 1).has(2)).toBe(false);
  });

  test("an id that is not hex is a SpanEncodingError", () => {
    expect(() => encodeTraceRequestProto({}, SAMPLE_SCOPE, [{ ...ROOT_SPAN, spanId: "xyz" }])).toThrow(SpanEncodingError);
  });

  test("a large batch grows the buffer and stays decodable", () => {
    const many = Array.from({ length: 300 }, (_, i) => ({ ...CHILD_SPAN, name: `n${i}` }));
    const decoded = all(sub(sub(fields(encodeTraceRequestProto(SAMPLE_RESOURCE, SAMPLE_SCOPE, many)), 1), 2), 2);
    expect(decoded.length).toBe(300);
    expect(text(one(fields(bytesOf(decoded[299]!)), 5))).toBe("n299");
  });
});
