/**
 * The final table of `make bench`: one row per figure, ours next to its reference (the Go 1.1.1
 * plugin, or a compiled Bun hello-world for start-up and memory), with the target and whether it
 * was met.
 */
import { ratio } from "./stats.ts";

export type Target =
  /** ours / reference ≤ max. */
  | { kind: "ratio"; max: number }
  /** ours − reference ≤ max, in the row's unit. */
  | { kind: "within"; max: number }
  /** Printed for information. */
  | { kind: "none" };

export interface Row {
  scenario: string;
  unit: "ms" | "MB";
  /** Median of ours; NaN when not measured. */
  ours: number;
  /** Median of the reference; NaN when there is none. */
  reference: number;
  /** What the reference is ("Go" unless said otherwise). */
  referenceLabel?: string;
  target: Target;
  /** A condition the row must also satisfy to be met (e.g. "no failure, no duplicate"). */
  check?: { ok: boolean; text: string };
  /** Why the row has no figures (the scenario failed). */
  error?: string;
}

export type Verdict = "met" | "MISSED" | "-" | "error";

/** Whether the row meets its target (and its check). */
export function verdict(row: Row): Verdict {
  if (row.error !== undefined) return "error";
  if (row.check !== undefined && !row.check.ok) return "MISSED";
  switch (row.target.kind) {
    case "none":
      return "-";
    case "ratio": {
      const r = ratio(row.ours, row.reference);
      if (Number.isNaN(r)) return "error";
      return r <= row.target.max ? "met" : "MISSED";
    }
    case "within": {
      const d = row.ours - row.reference;
      if (Number.isNaN(d)) return "error";
      return d <= row.target.max ? "met" : "MISSED";
    }
  }
}

function figure(v: number, unit: Row["unit"]): string {
  return Number.isFinite(v) ? `${v.toFixed(1)} ${unit}` : "-";
}

/** The comparison column: the ratio for ratio targets (and plain rows), the difference otherwise. */
function comparison(row: Row): string {
  if (row.target.kind === "within") {
    const d = row.ours - row.reference;
    return Number.isFinite(d) ? `${d >= 0 ? "+" : ""}${d.toFixed(1)} ${row.unit}` : "-";
  }
  const r = ratio(row.ours, row.reference);
  return Number.isFinite(r) ? r.toFixed(2) : "-";
}

function targetText(row: Row): string {
  const t = row.target;
  const base = t.kind === "ratio" ? `<= ${t.max}` : t.kind === "within" ? `<= +${t.max} ${row.unit}` : "";
  if (row.check === undefined) return base;
  return base === "" ? row.check.text : `${base}, ${row.check.text}`;
}

/** The table as aligned text, header first; errors are listed under it. */
export function formatTable(rows: readonly Row[]): string {
  const header = ["scenario", "ours", "reference", "ours/ref", "target", "result"];
  const lines = rows.map((r) => [
    r.scenario,
    figure(r.ours, r.unit),
    Number.isFinite(r.reference) ? `${figure(r.reference, r.unit)} ${r.referenceLabel ?? "Go"}` : "-",
    comparison(r),
    targetText(r),
    verdict(r),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const render = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 || i === 4 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  const out = [render(header), widths.map((w) => "-".repeat(w)).join("  "), ...lines.map(render)];
  const errors = rows.filter((r) => r.error !== undefined).map((r) => `error in "${r.scenario}": ${r.error}`);
  const counts = rows.map(verdict);
  out.push(
    "",
    `targets: ${counts.filter((v) => v === "met").length} met, ${counts.filter((v) => v === "MISSED").length} missed, ` +
      `${counts.filter((v) => v === "error").length} errors`,
    ...errors,
  );
  return `${out.join("\n")}\n`;
}
