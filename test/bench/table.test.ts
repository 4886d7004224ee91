import { describe, expect, test } from "bun:test";
import { formatTable, verdict, type Row } from "./table.ts";

const row = (over: Partial<Row>): Row => ({ scenario: "s", unit: "ms", ours: 40, reference: 100, target: { kind: "ratio", max: 0.5 }, ...over });

describe("bench table", () => {
  test("ratio targets: met at or under the bound, missed above", () => {
    expect(verdict(row({}))).toBe("met");
    expect(verdict(row({ ours: 50 }))).toBe("met");
    expect(verdict(row({ ours: 51 }))).toBe("MISSED");
  });

  test("difference targets, in the row's unit", () => {
    const t = { kind: "within", max: 1 } as const;
    expect(verdict(row({ ours: 21, reference: 20.2, target: t }))).toBe("met");
    expect(verdict(row({ ours: 21.3, reference: 20.2, target: t }))).toBe("MISSED");
  });

  test("a failed check misses the target whatever the figures; errors and missing figures are errors", () => {
    expect(verdict(row({ check: { ok: false, text: "no duplicate" } }))).toBe("MISSED");
    expect(verdict(row({ check: { ok: true, text: "no duplicate" } }))).toBe("met");
    expect(verdict(row({ error: "worker exited 1" }))).toBe("error");
    expect(verdict(row({ reference: Number.NaN }))).toBe("error");
    expect(verdict(row({ target: { kind: "none" } }))).toBe("-");
  });

  test("the table has every figure, the ratio or difference, the target and the result, and a summary", () => {
    const text = formatTable([
      row({ scenario: "bridge ADD" }),
      row({ scenario: "VERSION vs hello", ours: 21.5, reference: 20.2, referenceLabel: "hello", target: { kind: "within", max: 1 } }),
      row({ scenario: "peak RSS", unit: "MB", ours: 30, reference: 4, target: { kind: "none" } }),
      row({ scenario: "kube ADD", error: "boom" }),
      row({ scenario: "50 concurrent", check: { ok: true, text: "no duplicate" } }),
    ]);
    const lines = text.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^scenario\s+ours\s+reference\s+ours\/ref\s+target\s+result$/);
    expect(text).toContain("40.0 ms");
    expect(text).toContain("100.0 ms Go");
    expect(text).toContain("0.40");
    expect(text).toContain("20.2 ms hello");
    expect(text).toContain("+1.3 ms");
    expect(text).toContain("<= +1 ms");
    expect(text).toContain("7.50");
    expect(text).toContain("<= 0.5, no duplicate");
    expect(lines.find((l) => l.startsWith("VERSION vs hello"))).toMatch(/MISSED$/);
    expect(text).toContain("targets: 2 met, 1 missed, 1 errors");
    expect(text).toContain('error in "kube ADD": boom');
  });
});
