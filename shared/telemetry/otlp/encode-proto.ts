/**
 * The OTLP/HTTP protobuf body: an ExportTraceServiceRequest holding one ResourceSpans (this
 * process's resource) with one ScopeSpans (this suite's instrumentation scope) and the spans.
 * Field numbers are those of the opentelemetry-proto messages: collector/trace/v1
 * ExportTraceServiceRequest, trace/v1 ResourceSpans, ScopeSpans, Span, Status, common/v1
 * InstrumentationScope, KeyValue, AnyValue and resource/v1 Resource.
 */
import type { AttributeValue, SpanData } from "../span.ts";
import { ProtoWriter } from "./proto-writer.ts";
import { bytesFromHex, typedAttribute, unixNanosFromMs, type InstrumentationScope } from "./span-values.ts";

/** ExportTraceServiceRequest.resource_spans */
const REQUEST_RESOURCE_SPANS = 1;
/** ResourceSpans.resource, .scope_spans */
const RESOURCE_SPANS_RESOURCE = 1;
const RESOURCE_SPANS_SCOPE_SPANS = 2;
/** Resource.attributes */
const RESOURCE_ATTRIBUTES = 1;
/** ScopeSpans.scope, .spans */
const SCOPE_SPANS_SCOPE = 1;
const SCOPE_SPANS_SPANS = 2;
/** InstrumentationScope.name, .version */
const SCOPE_NAME = 1;
const SCOPE_VERSION = 2;
/** Span fields. */
const SPAN_TRACE_ID = 1;
const SPAN_SPAN_ID = 2;
const SPAN_TRACE_STATE = 3;
const SPAN_PARENT_SPAN_ID = 4;
const SPAN_NAME = 5;
const SPAN_KIND = 6;
const SPAN_START_TIME_UNIX_NANO = 7;
const SPAN_END_TIME_UNIX_NANO = 8;
const SPAN_ATTRIBUTES = 9;
const SPAN_STATUS = 15;
/** Status.message, .code (1 is reserved) */
const STATUS_MESSAGE = 2;
const STATUS_CODE = 3;
/** KeyValue.key, .value */
const KEY_VALUE_KEY = 1;
const KEY_VALUE_VALUE = 2;
/** AnyValue members (a oneof). */
const ANY_STRING = 1;
const ANY_BOOL = 2;
const ANY_INT = 3;
const ANY_DOUBLE = 4;

/** The protobuf encoding of an export request for `spans`. Throws SpanEncodingError for an id that is not hex. */
export function encodeTraceRequestProto(
  resource: Readonly<Record<string, AttributeValue>>,
  scope: InstrumentationScope,
  spans: readonly SpanData[],
): Uint8Array {
  return new ProtoWriter()
    .message(REQUEST_RESOURCE_SPANS, (resourceSpans) => {
      resourceSpans.message(RESOURCE_SPANS_RESOURCE, (r) => writeAttributes(r, RESOURCE_ATTRIBUTES, resource));
      resourceSpans.message(RESOURCE_SPANS_SCOPE_SPANS, (scopeSpans) => {
        scopeSpans.message(SCOPE_SPANS_SCOPE, (s) => s.string(SCOPE_NAME, scope.name).string(SCOPE_VERSION, scope.version));
        for (const span of spans) scopeSpans.message(SCOPE_SPANS_SPANS, (s) => writeSpan(s, span));
      });
    })
    .finish();
}

function writeSpan(w: ProtoWriter, span: SpanData): void {
  w.bytes(SPAN_TRACE_ID, bytesFromHex(span.traceId, "trace id"))
    .bytes(SPAN_SPAN_ID, bytesFromHex(span.spanId, "span id"))
    .string(SPAN_TRACE_STATE, span.traceState)
    .bytes(SPAN_PARENT_SPAN_ID, bytesFromHex(span.parentSpanId, "parent span id"))
    .string(SPAN_NAME, span.name)
    .uint32(SPAN_KIND, span.kind)
    .fixed64(SPAN_START_TIME_UNIX_NANO, unixNanosFromMs(span.startMs))
    .fixed64(SPAN_END_TIME_UNIX_NANO, unixNanosFromMs(span.endMs));
  writeAttributes(w, SPAN_ATTRIBUTES, span.attributes);
  w.message(SPAN_STATUS, (s) => s.string(STATUS_MESSAGE, span.status.message).uint32(STATUS_CODE, span.status.code));
}

function writeAttributes(w: ProtoWriter, field: number, attributes: Readonly<Record<string, AttributeValue>>): void {
  for (const [key, value] of Object.entries(attributes)) {
    w.message(field, (kv) => {
      kv.string(KEY_VALUE_KEY, key);
      kv.message(KEY_VALUE_VALUE, (any) => {
        const typed = typedAttribute(value);
        switch (typed.type) {
          case "string":
            any.stringAlways(ANY_STRING, typed.value);
            break;
          case "bool":
            any.boolAlways(ANY_BOOL, typed.value);
            break;
          case "int":
            any.int64Always(ANY_INT, typed.value);
            break;
          case "double":
            any.doubleAlways(ANY_DOUBLE, typed.value);
            break;
        }
      });
    });
  }
}
