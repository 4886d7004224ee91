import { describe, expect, test } from "bun:test";
import { encodeTraceRequestJson } from "./encode-json.ts";
import { SpanEncodingError } from "./span-values.ts";
import { CHILD_SPAN, ROOT_SPAN, SAMPLE_RESOURCE, SAMPLE_SCOPE } from "./testing.ts";

describe("encodeTraceRequestJson", () => {
  const request = JSON.parse(encodeTraceRequestJson(SAMPLE_RESOURCE, SAMPLE_SCOPE, [ROOT_SPAN, CHILD_SPAN]));

  test("the request shape: resourceSpans → resource, scopeSpans → scope, spans", () => {
    expect(Object.keys(request)).toEqual(["resourceSpans"]);
    expect(request.resourceSpans).toHaveLength(1);
    expect(request.resourceSpans[0].resource).toEqual({
      attributes: [
        { key: "service.name", value: { stringValue: "cni-plugins" } },
        { key: "host.name", value: { stringValue: "node-1" } },
        { key: "process.pid", value: { intValue: "4242" } },
      ],
    });
    expect(request.resourceSpans[0].scopeSpans).toHaveLength(1);
    expect(request.resourceSpans[0].scopeSpans[0].scope).toEqual({ name: "cni-plugins", version: "1.2.3" });
  });

  test("a root span: hex ids, decimal-string times, integer enums, no parentSpanId or traceState", () => {
    expect(request.resourceSpans[0].scopeSpans[0].spans[0]).toEqual({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      name: "cni ADD bridge",
      kind: 2,
      startTimeUnixNano: "1700000000123456000",
      endTimeUnixNano: "1700000000130789000",
      attributes: [
        { key: "cni.command", value: { stringValue: "ADD" } },
        { key: "cni.plugin", value: { stringValue: "bridge" } },
        { key: "cni.ifname", value: { stringValue: "eth0" } },
        { key: "cni.exit_code", value: { intValue: "0" } },
        { key: "cni.cached", value: { boolValue: false } },
        { key: "cni.ratio", value: { doubleValue: 0.5 } },
      ],
      status: { code: 1 },
    });
  });

  test("a child span: parent, trace state, error status with message", () => {
    const child = request.resourceSpans[0].scopeSpans[0].spans[1];
    expect(child.parentSpanId).toBe("b7ad6b7169203331");
    expect(child.traceState).toBe("vendor=a,other=b");
    expect(child.kind).toBe(1);
    expect(child.status).toEqual({ code: 2, message: "no address left in 10.0.0.0/30" });
    expect(child.attributes).toContainEqual({ key: "retries", value: { intValue: "-3" } });
    expect(child.attributes).toContainEqual({ key: "big", value: { intValue: "9007199254740991" } });
    expect(child.attributes).toContainEqual({ key: "unicode", value: { stringValue: "réseau ✓" } });
  });

  test("upper-case ids are written in lowercase; non-finite doubles as their proto3 JSON strings", () => {
    const span = { ...ROOT_SPAN, traceId: ROOT_SPAN.traceId.toUpperCase(), attributes: { nan: Number.NaN, inf: Number.NEGATIVE_INFINITY } };
    const json = JSON.parse(encodeTraceRequestJson({}, { name: "s", version: "" }, [span]));
    const encoded = json.resourceSpans[0].scopeSpans[0];
    expect(encoded.scope).toEqual({ name: "s" });
    expect(encoded.spans[0].traceId).toBe(ROOT_SPAN.traceId);
    expect(encoded.spans[0].attributes).toEqual([
      { key: "nan", value: { doubleValue: "NaN" } },
      { key: "inf", value: { doubleValue: "-Infinity" } },
    ]);
  });

  test("an id that is not hex is a SpanEncodingError", () => {
    expect(() => encodeTraceRequestJson({}, SAMPLE_SCOPE, [{ ...ROOT_SPAN, traceId: "0af76519-6cd4" }])).toThrow(SpanEncodingError);
  });
});
