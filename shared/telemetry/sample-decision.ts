/**
 * The configured sampler (OTEL_TRACES_SAMPLER, otlp/config.ts) as the decision a call's telemetry
 * asks for when its span starts (call.ts SampleDecision).
 */
import type { SampleDecision } from "./call.ts";
import type { SamplerConfig } from "./otlp/config.ts";
import { shouldSample } from "./otlp/sampler.ts";

export function sampleDecision(sampler: SamplerConfig): SampleDecision {
  return (traceId, parentSampled) => shouldSample(sampler, traceId, parentSampled === undefined ? undefined : { sampled: parentSampled });
}
