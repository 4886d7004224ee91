/**
 * The public face of shared/telemetry/: the invocation being run and what code below skel marks
 * on it (invocation.ts), what an invocation records for metrics and traces (call.ts), what it reports when it ends (report.ts), the spans (span.ts), the W3C trace context
 * (trace-context.ts), and the OTLP/HTTP exporter (otlp/: its settings from the standard
 * OpenTelemetry variables, the sampler, the batching exporter and its two encodings). Other
 * packages import the modules named here, never this file (build/lint-layers.ts).
 */
export { CallTelemetry } from "./call.ts";
export type { SampleDecision, TelemetryHost } from "./call.ts";
export { delegateTraceParent, describeCall, PHASES, phaseEnd, phaseStart, recordingCall, reportIpamUsage } from "./invocation.ts";
export type { IpamUsage, Phase } from "./invocation.ts";
export { decodeCallReport, InvalidReportError, REPORT_LIMITS } from "./report.ts";
export type { CallReport } from "./report.ts";
export { sampleDecision } from "./sample-decision.ts";
export type { AttributeValue, SpanData } from "./span.ts";
export { formatTraceParent, parseTraceParent } from "./trace-context.ts";
export type { TraceParent } from "./trace-context.ts";
export { ConfigError, DEFAULT_SAMPLER, exportConfigFrom, samplerFrom } from "./otlp/config.ts";
export type { EnvRecord, OtlpProtocol, SamplerConfig, SamplerName, TraceExportConfig } from "./otlp/config.ts";
export { shouldSample } from "./otlp/sampler.ts";
export type { ParentSampling } from "./otlp/sampler.ts";
export { BatchSpanExporter, DEFAULT_SCOPE } from "./otlp/exporter.ts";
export type { DropReason, ExportHooks, FetchLike } from "./otlp/exporter.ts";
export { encodeTraceRequestProto } from "./otlp/encode-proto.ts";
export { encodeTraceRequestJson } from "./otlp/encode-json.ts";
export { SpanEncodingError } from "./otlp/span-values.ts";
export type { InstrumentationScope } from "./otlp/span-values.ts";
