/**
 * The final table of `make bench`: one row per figure with a column per series — ours through the
 * old layout (every plugin name a link to the executable: `direct`), ours standalone (the exec shim
 * falls back: no agent), ours resident (through the agent), and Go 1.1.1 (or another reference:
 * a compiled Bun hello-world, ours with host-local, a static executable that does nothing, the same
 * implementation on a node without live pods) — the ratios, the targets and whether they were met.
 */
import { ratio } from "./stats.ts";

/** The series a row may have; see the header. */
export type Column = "direct" | "standalone" | "resident" | "observed" | "go" | "hello" | "host-local" | "floor" | "avx2" | "empty-node";

export const COLUMN_LABEL: Readonly<Record<Column, string>> = {
  direct: "direct",
  standalone: "standalone",
  resident: "resident",
  observed: "res+telemetry",
  go: "Go",
  hello: "hello",
  "host-local": "host-local",
  floor: "static-true",
  avx2: "x64 runtime",
  "empty-node": "0 live pods",
};

export type Target =
  /** of / vs ≤ max. */
  | { kind: "ratio"; of: Column; vs: Column; max: number }
  /** of − vs ≤ max, in the row's unit. */
  | { kind: "within"; of: Column; vs: Column; max: number }
  /** of ≤ max, in the row's unit. */
  | { kind: "at-most"; of: Column; max: number };

export interface Row {
  scenario: string;
  unit: "ms" | "MB" | "MiB";
  /** Medians per series; missing or NaN: not measured. */
  values: Partial<Record<Column, number>>;
  /** Every one must hold for the row to be met; none: printed for information. */
  targets: Target[];
  /** A condition the row must also satisfy to be met (e.g. "no failure, no duplicate"). */
  check?: { ok: boolean; text: string };
  /** Why the row has no figures (the scenario failed). */
  error?: string;
}

export type Verdict = "met" | "MISSED" | "-" | "error";

function value(row: Row, c: Column): number {
  return row.values[c] ?? Number.NaN;
}

/** Whether one target holds: true, false, or undefined when a figure is missing. */
function holds(row: Row, t: Target): boolean | undefined {
  const of = value(row, t.of);
  const x = t.kind === "ratio" ? ratio(of, value(row, t.vs)) : t.kind === "within" ? of - value(row, t.vs) : of;
  return Number.isFinite(x) ? x <= t.max : undefined;
}

/** Whether the row meets its targets (and its check). */
export function verdict(row: Row): Verdict {
  if (row.error !== undefined) return "error";
  const results = row.targets.map((t) => holds(row, t));
  if (results.includes(undefined)) return "error";
  if ((row.check !== undefined && !row.check.ok) || results.includes(false)) return "MISSED";
  return row.targets.length === 0 && row.check === undefined ? "-" : "met";
}

function figure(v: number | undefined, unit: Row["unit"]): string {
  return v !== undefined && Number.isFinite(v) ? `${v.toFixed(1)} ${unit}` : "-";
}

function ratioText(a: number | undefined, b: number | undefined): string {
  const r = ratio(a ?? Number.NaN, b ?? Number.NaN);
  return Number.isFinite(r) ? r.toFixed(2) : "-";
}

function targetText(row: Row): string {
  const parts = row.targets.map((t) => {
    const of = COLUMN_LABEL[t.of];
    if (t.kind === "at-most") return `${of} <= ${t.max} ${row.unit}`;
    const vs = COLUMN_LABEL[t.vs];
    return t.kind === "ratio" ? `${of}/${vs} <= ${t.max}` : `${of}-${vs} <= +${t.max} ${row.unit}`;
  });
  if (row.check !== undefined) parts.push(row.check.text);
  return parts.join(", ");
}

/** The reference a row is compared with: Go, else the first other reference it has. */
function referenceOf(row: Row): Column | undefined {
  return (["go", "hello", "host-local", "floor", "observed", "avx2", "empty-node"] as const).find((c) => row.values[c] !== undefined);
}

/** The table as aligned text, header first; errors are listed under it. */
export function formatTable(rows: readonly Row[]): string {
  const header = ["scenario", "direct", "standalone", "resident", "reference", "stand/direct", "stand/ref", "res/ref", "target", "result"];
  const lines = rows.map((r) => {
    const ref = referenceOf(r);
    const refValue = ref === undefined ? undefined : r.values[ref];
    return [
      r.scenario,
      figure(r.values.direct, r.unit),
      figure(r.values.standalone, r.unit),
      figure(r.values.resident, r.unit),
      ref === undefined ? "-" : `${figure(refValue, r.unit)} ${COLUMN_LABEL[ref]}`,
      ratioText(r.values.standalone, r.values.direct),
      ratioText(r.values.standalone, refValue),
      ratioText(r.values.resident, refValue),
      targetText(r),
      verdict(r),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const render = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 || i === 8 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
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
