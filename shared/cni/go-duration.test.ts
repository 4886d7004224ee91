import { describe, expect, test } from "bun:test";
import { GoDurationError, parseGoDuration } from "./go-duration.ts";

describe("parseGoDuration", () => {
  test("Go durations in milliseconds", () => {
    expect(parseGoDuration("1h2m3.5s")).toBe(3_723_500);
    expect(parseGoDuration("250ms")).toBe(250);
    expect(parseGoDuration("1.5s")).toBe(1500);
    expect(parseGoDuration("-2s")).toBe(-2000);
    expect(parseGoDuration("0")).toBe(0);
  });
  test("Go's errors", () => {
    expect(() => parseGoDuration("10")).toThrow('time: missing unit in duration "10"');
    expect(() => parseGoDuration("")).toThrow('time: invalid duration ""');
    expect(() => parseGoDuration("5 s")).toThrow(GoDurationError);
  });
});
