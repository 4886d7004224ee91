/**
 * The OTLP/HTTP JSON body of the same export request encode-proto.ts writes: the proto3 JSON
 * mapping with OTLP's own rules. Field names are lowerCamelCase; trace and span ids are lowercase
 * hex strings (not base64); 64-bit integers (times, intValue) are decimal strings; enums are
 * integers; empty parentSpanId and traceState are left out.
 */
import type { AttributeValue, SpanData } from "../span.ts";
import { bytesFromHex, typedAttribute, unixNanosFromMs, type InstrumentationScope } from "./span-values.ts";

type JsonAnyValue = { stringValue: string } | { boolValue: boolean } | { intValue: string } | { doubleValue: number | string };

interface JsonKeyValue {
  key: string;
  value: JsonAnyValue;
}

/** The JSON text of an export request for `spans`. Throws SpanEncodingError for an id that is not hex. */
export function encodeTraceRequestJson(
  resource: Readonly<Record<string, AttributeValue>>,
  scope: InstrumentationScope,
  spans: readonly SpanData[],
): string {
  const jsonScope: Record<string, string> = { name: scope.name };
  if (scope.version !== "") jsonScope["version"] = scope.version;
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: jsonAttributes(resource) },
        scopeSpans: [{ scope: jsonScope, spans: spans.map(jsonSpan) }],
      },
    ],
  });
}

function jsonSpan(span: SpanData): Record<string, unknown> {
  const json: Record<string, unknown> = { traceId: checkedHex(span.traceId, "trace id"), spanId: checkedHex(span.spanId, "span id") };
  if (span.traceState !== "") json["traceState"] = span.traceState;
  if (span.parentSpanId !== "") json["parentSpanId"] = checkedHex(span.parentSpanId, "parent span id");
  json["name"] = span.name;
  json["kind"] = span.kind;
  json["startTimeUnixNano"] = unixNanosFromMs(span.startMs).toString();
  json["endTimeUnixNano"] = unixNanosFromMs(span.endMs).toString();
  json["attributes"] = jsonAttributes(span.attributes);
  const status: Record<string, unknown> = { code: span.status.code };
  if (span.status.message !== "") status["message"] = span.status.message;
  json["status"] = status;
  return json;
}

/** `hex` in lowercase, after checking it is hex (the same check the protobuf encoding makes). */
function checkedHex(hex: string, what: string): string {
  bytesFromHex(hex, what);
  return hex.toLowerCase();
}

function jsonAttributes(attributes: Readonly<Record<string, AttributeValue>>): JsonKeyValue[] {
  return Object.entries(attributes).map(([key, value]) => ({ key, value: jsonAnyValue(value) }));
}

function jsonAnyValue(value: AttributeValue): JsonAnyValue {
  const typed = typedAttribute(value);
  switch (typed.type) {
    case "string":
      return { stringValue: typed.value };
    case "bool":
      return { boolValue: typed.value };
    case "int":
      return { intValue: typed.value.toString() };
    case "double":
      // JSON has no NaN or infinities; the proto3 JSON mapping spells them as strings.
      return { doubleValue: Number.isFinite(typed.value) ? typed.value : String(typed.value) };
  }
}
