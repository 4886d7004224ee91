/**
 * Whether a new span is recorded and exported, per the sampler of the export settings.
 *
 * The ratio samplers decide from the trace id alone, so every span of a trace (in this process or
 * in another that uses the same rule) gets the same answer: the rule of consistent probability
 * sampling, which takes the lower 56 bits of the trace id (its last 14 hex digits, the random part
 * of a W3C Trace Context level 2 id) as a number R in [0, 2^56) and keeps the trace when
 * R >= T, with the rejection threshold T = (1 - ratio) * 2^56 rounded. Ratio 1 keeps every trace,
 * ratio 0 none. The parent-based samplers follow the parent's sampled flag when there is a parent
 * and use their root sampler otherwise.
 */
import type { SamplerConfig } from "./config.ts";

/** The sampled flag of a span's parent context (its trace flags' low bit). */
export interface ParentSampling {
  sampled: boolean;
}

const RANDOMNESS_BITS = 56;
const RANDOMNESS_RANGE = 2 ** RANDOMNESS_BITS;

/** True when a span of trace `traceIdHex` (32 hex digits) with parent `parent` is to be recorded. */
export function shouldSample(sampler: SamplerConfig, traceIdHex: string, parent: ParentSampling | undefined): boolean {
  switch (sampler.name) {
    case "always_on":
      return true;
    case "always_off":
      return false;
    case "traceidratio":
      return traceIdRatioKeeps(sampler.ratio, traceIdHex);
    case "parentbased_always_on":
      return parent === undefined ? true : parent.sampled;
    case "parentbased_always_off":
      return parent === undefined ? false : parent.sampled;
    case "parentbased_traceidratio":
      return parent === undefined ? traceIdRatioKeeps(sampler.ratio, traceIdHex) : parent.sampled;
  }
}

/** The consistent-probability decision for `ratio` over the trace id's lower 56 bits. */
export function traceIdRatioKeeps(ratio: number, traceIdHex: string): boolean {
  if (ratio >= 1) return true;
  if (!(ratio > 0)) return false;
  const randomness = /^[0-9a-fA-F]{14}$/.test(traceIdHex.slice(-14)) ? BigInt(`0x${traceIdHex.slice(-14)}`) : 0n;
  const threshold = BigInt(Math.round((1 - ratio) * RANDOMNESS_RANGE));
  return randomness >= threshold;
}
