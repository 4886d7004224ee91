/**
 * Line charts as SVG text, for the figures `make bench` writes into docs/bench/: one or more panels
 * stacked in one image, each with its title, axes from zero with ticks and labelled units, and a
 * legend. A series is told apart by its dash pattern and its markers as well as by its colour, so a
 * chart reads in grey print too. No dependency: the text is written here.
 */

export type Point = readonly [number, number];
export type Dash = "solid" | "dashed" | "dotted" | "dash-dot";
export type Marker = "circle" | "square" | "triangle" | "diamond" | "cross";

export interface LineSeries {
  label: string;
  points: readonly Point[];
  /** Defaults: by the series' place in the chart. */
  colour?: string;
  dash?: Dash;
  marker?: Marker;
}

export interface LineChart {
  title: string;
  /** Axis labels, with the unit (e.g. "time since the wave started (s)"). */
  xLabel: string;
  yLabel: string;
  series: readonly LineSeries[];
}

/** Colours that stay apart for the common colour-vision deficiencies (Okabe and Ito). */
const COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"];
const DASHES: readonly Dash[] = ["solid", "dashed", "dotted", "dash-dot"];
const MARKERS: readonly Marker[] = ["circle", "square", "triangle", "diamond", "cross"];
const DASH_ARRAY: Readonly<Record<Dash, string | undefined>> = { solid: undefined, dashed: "8 4", dotted: "2 3", "dash-dot": "10 3 2 3" };

/** Panel geometry, in SVG units. */
const WIDTH = 780;
const PANEL_HEIGHT = 380;
const PLOT = { left: 72, right: 560, top: 44, bottom: 322 } as const;
const LEGEND_X = 580;
/** A series with more points than this gets markers at about MARKED_POINTS of them, evenly spaced. */
const MARKED_POINTS = 9;

/** Escapes text for an SVG text node or attribute. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * Ticks from 0 to at least `max`, about `count` of them, at a step of 1, 2, 2.5 or 5 times a power
 * of ten. A `max` of zero or less (or not finite) gives the ticks of 0 to 1.
 */
export function niceTicks(max: number, count = 5): number[] {
  const top = Number.isFinite(max) && max > 0 ? max : 1;
  const raw = top / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * power).find((s) => s >= raw)!;
  const n = Math.ceil(top / step - 1e-9);
  return Array.from({ length: n + 1 }, (_, i) => Number((i * step).toPrecision(12)));
}

/** A tick label: the number without trailing zeros, thousands not grouped. */
export function tickLabel(v: number): string {
  return String(Number(v.toPrecision(6)));
}

const fmt = (v: number) => String(Math.round(v * 10) / 10);

/** The chart's styles per series: its own where given, else by its place. */
function styleOf(s: LineSeries, i: number): { colour: string; dash: Dash; marker: Marker } {
  return { colour: s.colour ?? COLOURS[i % COLOURS.length]!, dash: s.dash ?? DASHES[i % DASHES.length]!, marker: s.marker ?? MARKERS[i % MARKERS.length]! };
}

function dashAttr(dash: Dash): string {
  const a = DASH_ARRAY[dash];
  return a === undefined ? "" : ` stroke-dasharray="${a}"`;
}

/** One marker centred at (x, y). */
function marker(kind: Marker, x: number, y: number, colour: string): string {
  const r = 4;
  const at = (dx: number, dy: number) => `${fmt(x + dx)},${fmt(y + dy)}`;
  switch (kind) {
    case "circle":
      return `<circle class="marker" cx="${fmt(x)}" cy="${fmt(y)}" r="${r}" fill="${colour}"/>`;
    case "square":
      return `<rect class="marker" x="${fmt(x - r)}" y="${fmt(y - r)}" width="${2 * r}" height="${2 * r}" fill="${colour}"/>`;
    case "triangle":
      return `<polygon class="marker" points="${at(0, -r - 1)} ${at(r + 1, r)} ${at(-r - 1, r)}" fill="${colour}"/>`;
    case "diamond":
      return `<polygon class="marker" points="${at(0, -r - 1)} ${at(r + 1, 0)} ${at(0, r + 1)} ${at(-r - 1, 0)}" fill="${colour}"/>`;
    case "cross":
      return `<path class="marker" d="M${at(-r, -r)}L${at(r, r)}M${at(-r, r)}L${at(r, -r)}" stroke="${colour}" stroke-width="2"/>`;
  }
}

/** The indices of a series' points that get a marker: all of a short series, else about MARKED_POINTS spread evenly, the last included. */
export function markedIndices(length: number): number[] {
  if (length <= MARKED_POINTS + 3) return Array.from({ length }, (_, i) => i);
  const step = (length - 1) / (MARKED_POINTS - 1);
  return [...new Set(Array.from({ length: MARKED_POINTS }, (_, k) => Math.round(k * step)))];
}

/** One panel, its top at `top`. */
function panel(chart: LineChart, top: number): string[] {
  const all = chart.series.flatMap((s) => s.points);
  const xTicks = niceTicks(Math.max(0, ...all.map((p) => p[0])));
  const yTicks = niceTicks(Math.max(0, ...all.map((p) => p[1])));
  const xMax = xTicks.at(-1)!;
  const yMax = yTicks.at(-1)!;
  const px = (x: number) => PLOT.left + ((PLOT.right - PLOT.left) * x) / xMax;
  const py = (y: number) => top + PLOT.bottom - ((PLOT.bottom - PLOT.top) * y) / yMax;
  const bottom = top + PLOT.bottom;
  const out: string[] = [`<g class="panel">`, `<text class="title" x="${PLOT.left}" y="${top + 24}" font-size="15" font-weight="bold">${escapeXml(chart.title)}</text>`];
  for (const y of yTicks) {
    out.push(`<line class="grid" x1="${PLOT.left}" y1="${fmt(py(y))}" x2="${PLOT.right}" y2="${fmt(py(y))}" stroke="#e4e4e4"/>`);
    out.push(`<text class="tick y-tick" x="${PLOT.left - 6}" y="${fmt(py(y) + 4)}" text-anchor="end">${tickLabel(y)}</text>`);
  }
  for (const x of xTicks) {
    out.push(`<line class="tick-mark" x1="${fmt(px(x))}" y1="${bottom}" x2="${fmt(px(x))}" y2="${bottom + 5}" stroke="#000"/>`);
    out.push(`<text class="tick x-tick" x="${fmt(px(x))}" y="${bottom + 19}" text-anchor="middle">${tickLabel(x)}</text>`);
  }
  out.push(`<line class="axis x-axis" x1="${PLOT.left}" y1="${bottom}" x2="${PLOT.right}" y2="${bottom}" stroke="#000"/>`);
  out.push(`<line class="axis y-axis" x1="${PLOT.left}" y1="${top + PLOT.top}" x2="${PLOT.left}" y2="${bottom}" stroke="#000"/>`);
  out.push(`<text class="x-label" x="${(PLOT.left + PLOT.right) / 2}" y="${bottom + 42}" text-anchor="middle">${escapeXml(chart.xLabel)}</text>`);
  const yMid = top + (PLOT.top + PLOT.bottom) / 2;
  out.push(`<text class="y-label" x="18" y="${yMid}" text-anchor="middle" transform="rotate(-90 18 ${yMid})">${escapeXml(chart.yLabel)}</text>`);
  chart.series.forEach((s, i) => {
    const st = styleOf(s, i);
    const points = s.points.map(([x, y]) => `${fmt(px(x))},${fmt(py(y))}`).join(" ");
    out.push(`<polyline class="series" data-label="${escapeXml(s.label)}" points="${points}" fill="none" stroke="${st.colour}" stroke-width="2"${dashAttr(st.dash)}/>`);
    for (const k of markedIndices(s.points.length)) out.push(marker(st.marker, px(s.points[k]![0]), py(s.points[k]![1]), st.colour));
    const ly = top + PLOT.top + 10 + i * 22;
    out.push(`<g class="legend">`);
    out.push(`<line x1="${LEGEND_X}" y1="${ly}" x2="${LEGEND_X + 34}" y2="${ly}" stroke="${st.colour}" stroke-width="2"${dashAttr(st.dash)}/>`);
    out.push(marker(st.marker, LEGEND_X + 17, ly, st.colour));
    out.push(`<text x="${LEGEND_X + 42}" y="${ly + 4}">${escapeXml(s.label)}</text>`, `</g>`);
  });
  out.push(`</g>`);
  return out;
}

/** The charts as one SVG image, stacked top to bottom, with an optional caption under them. */
export function svgCharts(charts: readonly LineChart[], caption?: string): string {
  const height = charts.length * PANEL_HEIGHT + (caption === undefined ? 0 : 26);
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    ...charts.flatMap((c, i) => panel(c, i * PANEL_HEIGHT)),
  ];
  if (caption !== undefined) lines.push(`<text class="caption" x="${PLOT.left}" y="${height - 10}" font-size="11" fill="#444">${escapeXml(caption)}</text>`);
  lines.push(`</svg>`);
  return `${lines.join("\n")}\n`;
}
