import { describe, expect, test } from "bun:test";
import { formatTable, verdict, type Row } from "./table.ts";

const row = (over: Partial<Row>): Row => ({
  scenario: "s",
  unit: "ms",
  values: { direct: 30, standalone: 31, resident: 10, go: 40 },
  targets: [
    { kind: "ratio", of: "resident", vs: "go", max: 0.5 },
    { kind: "ratio", of: "standalone", vs: "direct", max: 1.05 },
  ],
  ...over,
});

describe("bench table", () => {
  test("every target must hold: ratio bounds are inclusive, one miss misses the row", () => {
    expect(verdict(row({}))).toBe("met");
    expect(verdict(row({ values: { direct: 30, standalone: 31, resident: 20, go: 40 } }))).toBe("met");
    expect(verdict(row({ values: { direct: 30, standalone: 31, resident: 21, go: 40 } }))).toBe("MISSED");
    expect(verdict(row({ values: { direct: 30, standalone: 32, resident: 10, go: 40 } }))).toBe("MISSED");
  });

  test("difference and absolute targets, in the row's unit", () => {
    const within = [{ kind: "within", of: "standalone", vs: "direct", max: 1 }] as Row["targets"];
    expect(verdict(row({ values: { direct: 20.2, standalone: 21 }, targets: within }))).toBe("met");
    expect(verdict(row({ values: { direct: 20.2, standalone: 21.3 }, targets: within }))).toBe("MISSED");
    const atMost = [{ kind: "at-most", of: "resident", max: 2 }] as Row["targets"];
    expect(verdict(row({ unit: "MB", values: { resident: 1.2 }, targets: atMost }))).toBe("met");
    expect(verdict(row({ unit: "MB", values: { resident: 2.4 }, targets: atMost }))).toBe("MISSED");
  });

  test("a failed check misses whatever the figures; errors and missing figures are errors; no target is information", () => {
    expect(verdict(row({ check: { ok: false, text: "no duplicate" } }))).toBe("MISSED");
    expect(verdict(row({ check: { ok: true, text: "no duplicate" } }))).toBe("met");
    expect(verdict(row({ error: "worker exited 1" }))).toBe("error");
    expect(verdict(row({ values: { direct: 30, standalone: 31, resident: 10 } }))).toBe("error");
    expect(verdict(row({ targets: [] }))).toBe("-");
  });

  test("the table has every series, the ratios, the targets and the result, and a summary", () => {
    const text = formatTable([
      row({ scenario: "bridge ADD" }),
      row({ scenario: "VERSION vs hello", values: { direct: 21.5, hello: 20.2 }, targets: [{ kind: "within", of: "direct", vs: "hello", max: 1 }] }),
      row({ scenario: "peak RSS", unit: "MB", values: { standalone: 30, resident: 0.8, go: 4 }, targets: [{ kind: "at-most", of: "resident", max: 2 }] }),
      row({ scenario: "kube ADD", error: "boom" }),
      row({ scenario: "50 concurrent", check: { ok: true, text: "no duplicate" } }),
    ]);
    const lines = text.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^scenario\s+direct\s+standalone\s+resident\s+reference\s+stand\/direct\s+stand\/ref\s+res\/ref\s+target\s+result$/);
    const bridge = lines.find((l) => l.startsWith("bridge ADD"))!;
    for (const cell of ["30.0 ms", "31.0 ms", "10.0 ms", "40.0 ms Go", "1.03", "0.78", "0.25", "resident/Go <= 0.5, standalone/direct <= 1.05", "met"]) {
      expect(bridge).toContain(cell);
    }
    expect(text).toContain("20.2 ms hello");
    expect(text).toContain("direct-hello <= +1 ms");
    expect(lines.find((l) => l.startsWith("VERSION vs hello"))).toMatch(/MISSED$/);
    expect(lines.find((l) => l.startsWith("peak RSS"))).toContain("resident <= 2 MB");
    expect(text).toContain("resident/Go <= 0.5, standalone/direct <= 1.05, no duplicate");
    expect(text).toContain("targets: 3 met, 1 missed, 1 errors");
    expect(text).toContain('error in "kube ADD": boom');
  });

  test("a row against the same implementation on an empty node: its reference column and ratio", () => {
    const text = formatTable([
      row({ scenario: "one pod next to 500", values: { resident: 120, "empty-node": 100 }, targets: [{ kind: "ratio", of: "resident", vs: "empty-node", max: 1.2 }] }),
      row({ scenario: "one pod next to 500, standalone", values: { standalone: 130, "empty-node": 100 }, targets: [{ kind: "ratio", of: "standalone", vs: "empty-node", max: 1.2 }] }),
    ]);
    const [res, stand] = ["one pod next to 500 ", "one pod next to 500, standalone"].map((p) => text.split("\n").find((l) => l.startsWith(p))!);
    expect(res).toContain("100.0 ms 0 live pods");
    expect(res).toContain("1.20");
    expect(res).toContain("resident/0 live pods <= 1.2");
    expect(res).toMatch(/met$/);
    expect(stand).toContain("1.30");
    expect(stand).toMatch(/MISSED$/);
  });
});
