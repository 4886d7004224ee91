import { describe, expect, test } from "bun:test";
import type { SamplerConfig } from "./config.ts";
import { shouldSample, traceIdRatioKeeps } from "./sampler.ts";

const ID = "0af7651916cd43dd8448eb211c80319c";
const on = (name: SamplerConfig["name"], ratio = 1): SamplerConfig => ({ name, ratio });

/** Trace ids with pseudo-random lower bits (a fixed sequence, so the test is repeatable). */
function traceIds(count: number): string[] {
  let state = 0x2545f4914f6cdd1dn;
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    ids.push(`${"0".repeat(16)}${state.toString(16).padStart(16, "0")}`);
  }
  return ids;
}

describe("shouldSample", () => {
  test("always_on and always_off ignore the parent", () => {
    expect(shouldSample(on("always_on"), ID, { sampled: false })).toBe(true);
    expect(shouldSample(on("always_off"), ID, { sampled: true })).toBe(false);
  });

  test("parent-based samplers follow the parent and use their root sampler without one", () => {
    expect(shouldSample(on("parentbased_always_on"), ID, undefined)).toBe(true);
    expect(shouldSample(on("parentbased_always_on"), ID, { sampled: false })).toBe(false);
    expect(shouldSample(on("parentbased_always_off"), ID, undefined)).toBe(false);
    expect(shouldSample(on("parentbased_always_off"), ID, { sampled: true })).toBe(true);
    expect(shouldSample(on("parentbased_traceidratio", 0), ID, undefined)).toBe(false);
    expect(shouldSample(on("parentbased_traceidratio", 0), ID, { sampled: true })).toBe(true);
    expect(shouldSample(on("parentbased_traceidratio", 1), ID, { sampled: false })).toBe(false);
  });

  test("traceidratio ignores the parent", () => {
    expect(shouldSample(on("traceidratio", 0), ID, { sampled: true })).toBe(false);
    expect(shouldSample(on("traceidratio", 1), ID, { sampled: false })).toBe(true);
  });
});

describe("traceIdRatioKeeps", () => {
  test("the threshold over the lower 56 bits: R >= (1 - ratio) * 2^56", () => {
    // ratio 0.5: threshold 2^55 = 0x80000000000000 (14 hex digits)
    expect(traceIdRatioKeeps(0.5, "ffffffffffffffffff80000000000000")).toBe(true);
    expect(traceIdRatioKeeps(0.5, "ffffffffffffffffff7fffffffffffff")).toBe(false);
    // the high bits do not count
    expect(traceIdRatioKeeps(0.5, "000000000000000000ffffffffffffff")).toBe(true);
    expect(traceIdRatioKeeps(0.5, "ffffffffffffffff0000000000000000")).toBe(false);
  });

  test("the same trace id always gets the same answer", () => {
    for (const id of traceIds(50)) expect(traceIdRatioKeeps(0.3, id)).toBe(traceIdRatioKeeps(0.3, id));
  });

  test("the share kept is near the ratio, and a larger ratio keeps a superset", () => {
    const ids = traceIds(4000);
    const kept = (ratio: number) => ids.filter((id) => traceIdRatioKeeps(ratio, id));
    const quarter = kept(0.25);
    expect(quarter.length / ids.length).toBeGreaterThan(0.22);
    expect(quarter.length / ids.length).toBeLessThan(0.28);
    const half = new Set(kept(0.5));
    for (const id of quarter) expect(half.has(id)).toBe(true);
    expect(kept(0).length).toBe(0);
    expect(kept(1).length).toBe(ids.length);
  });
});
