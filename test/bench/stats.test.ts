import { describe, expect, test } from "bun:test";
import { alternation, median, ratio } from "./stats.ts";

describe("bench stats", () => {
  test("median of odd and even counts, unsorted input left alone", () => {
    const xs = [5, 1, 3];
    expect(median(xs)).toBe(3);
    expect(xs).toEqual([5, 1, 3]);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
    expect(median([])).toBeNaN();
  });

  test("alternation is ABBA: reversed on odd rounds", () => {
    expect(alternation(["ours", "go"], 0)).toEqual(["ours", "go"]);
    expect(alternation(["ours", "go"], 1)).toEqual(["go", "ours"]);
    expect(alternation(["a", "b", "c"], 3)).toEqual(["c", "b", "a"]);
    expect(alternation(["a", "b", "c"], -1)).toEqual(["c", "b", "a"]);
  });

  test("ratio, and NaN when a side is missing or the reference is zero", () => {
    expect(ratio(50, 100)).toBe(0.5);
    expect(ratio(Number.NaN, 100)).toBeNaN();
    expect(ratio(1, 0)).toBeNaN();
  });
});
