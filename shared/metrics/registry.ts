/**
 * Counters, gauges and histograms with labels, kept in memory and written out in the Prometheus
 * text exposition format (version 0.0.4) or in OpenMetrics 1.0, whichever the scraper asks for
 * (docs/observability.md). Recording is a map lookup and an addition: it never waits, never
 * throws for a value, and allocates only for a label set seen for the first time.
 *
 * Label values are given by the code that records, never taken from a call's input beyond bounded
 * names (plugin, command, code): a container id or an address would make the series unbounded.
 */

/** Label values, in the order of the metric's label names. */
export type LabelValues = readonly string[];

/** What a metric family is, as both formats name it. */
type Kind = "counter" | "gauge" | "histogram";

/** Seconds, from 1 ms to 60 s: the buckets of every duration histogram of the agent. */
export const DURATION_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

abstract class Family<S> {
  readonly #series = new Map<string, { values: LabelValues; state: S }>();

  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
    if (!NAME.test(name)) throw new Error(`metric name ${JSON.stringify(name)} is not a Prometheus name`);
    for (const l of labelNames) if (!LABEL.test(l) || l.startsWith("__") || l === "le") throw new Error(`label name ${JSON.stringify(l)} is not allowed`);
  }

  abstract readonly kind: Kind;
  protected abstract fresh(): S;
  /** The sample lines of one series (each `<name><suffix>{labels} value`). */
  protected abstract lines(labels: string, state: S, format: Format): string[];

  /** The state of the series `values` (created on first use). */
  protected series(values: LabelValues): S {
    if (values.length !== this.labelNames.length) throw new Error(`${this.name}: ${values.length} label values for ${this.labelNames.length} names`);
    const key = values.join("\u0000");
    let s = this.#series.get(key);
    if (s === undefined) {
      s = { values: [...values], state: this.fresh() };
      this.#series.set(key, s);
    }
    return s.state;
  }

  /** The family in `format`, series in the order of their label values. */
  expose(format: Format): string {
    const family = format === "openmetrics" && this.kind === "counter" ? this.name.replace(/_total$/, "") : this.name;
    let out = `# HELP ${family} ${escapeHelp(this.help, format)}\n# TYPE ${family} ${this.kind}\n`;
    const all = [...this.#series.values()].sort((a, b) => compareValues(a.values, b.values));
    for (const s of all) for (const line of this.lines(labelText(this.labelNames, s.values), s.state, format)) out += `${line}\n`;
    return out;
  }
}

export class Counter extends Family<{ value: number }> {
  readonly kind = "counter";
  protected fresh() {
    return { value: 0 };
  }
  /** Adds `n` (≥ 0) to the series `values`. */
  inc(values: LabelValues = [], n = 1): void {
    if (!(n >= 0)) return;
    this.series(values).value += n;
  }
  protected lines(labels: string, s: { value: number }, format: Format): string[] {
    const name = format === "openmetrics" && !this.name.endsWith("_total") ? `${this.name}_total` : this.name;
    return [`${name}${labels} ${num(s.value)}`];
  }
}

export class Gauge extends Family<{ value: number }> {
  readonly kind = "gauge";
  protected fresh() {
    return { value: 0 };
  }
  set(values: LabelValues, v: number): void {
    this.series(values).value = v;
  }
  add(values: LabelValues, d: number): void {
    this.series(values).value += d;
  }
  protected lines(labels: string, s: { value: number }): string[] {
    return [`${this.name}${labels} ${num(s.value)}`];
  }
}

interface HistogramState {
  /** Observations ≤ each bound (not yet cumulative). */
  counts: number[];
  count: number;
  sum: number;
}

export class Histogram extends Family<HistogramState> {
  readonly kind = "histogram";
  readonly buckets: readonly number[];

  constructor(name: string, help: string, labelNames: readonly string[], buckets: readonly number[] = DURATION_BUCKETS) {
    super(name, help, labelNames);
    this.buckets = [...buckets].sort((a, b) => a - b);
  }
  protected fresh(): HistogramState {
    return { counts: this.buckets.map(() => 0), count: 0, sum: 0 };
  }
  /** Records one observation (seconds for a duration). */
  observe(values: LabelValues, v: number): void {
    if (Number.isNaN(v)) return;
    const s = this.series(values);
    const i = this.buckets.findIndex((b) => v <= b);
    if (i >= 0) s.counts[i]!++;
    s.count++;
    s.sum += v;
  }
  protected lines(labels: string, s: HistogramState): string[] {
    const out: string[] = [];
    let cumulative = 0;
    const inner = labels === "" ? "" : `${labels.slice(1, -1)},`;
    this.buckets.forEach((b, i) => {
      cumulative += s.counts[i]!;
      out.push(`${this.name}_bucket{${inner}le="${num(b)}"} ${cumulative}`);
    });
    out.push(`${this.name}_bucket{${inner}le="+Inf"} ${s.count}`);
    out.push(`${this.name}_sum${labels} ${num(s.sum)}`);
    out.push(`${this.name}_count${labels} ${s.count}`);
    return out;
  }
}

/** The two exposition formats. */
export type Format = "prometheus" | "openmetrics";

/** The Content-Type of each format. */
export const CONTENT_TYPE: Readonly<Record<Format, string>> = {
  prometheus: "text/plain; version=0.0.4; charset=utf-8",
  openmetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8",
};

/** The format a scraper's Accept header asks for: OpenMetrics when it names it, else the text format. */
export function formatFor(accept: string | null | undefined): Format {
  return accept !== null && accept !== undefined && /application\/openmetrics-text/i.test(accept) ? "openmetrics" : "prometheus";
}

/** What the registry keeps of a family: its name and how to write it out. */
interface Exposable {
  readonly name: string;
  expose(format: Format): string;
}

/** Every family of one process, written out together. */
export class MetricsRegistry {
  readonly #families: Exposable[] = [];

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.#add(new Counter(name, help, labelNames));
  }
  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.#add(new Gauge(name, help, labelNames));
  }
  histogram(name: string, help: string, labelNames: readonly string[] = [], buckets?: readonly number[]): Histogram {
    return this.#add(new Histogram(name, help, labelNames, buckets));
  }

  #add<F extends Exposable>(f: F): F {
    if (this.#families.some((g) => g.name === f.name)) throw new Error(`metric ${f.name} registered twice`);
    this.#families.push(f);
    return f;
  }

  /** All families in `format` (OpenMetrics ends with `# EOF`). */
  expose(format: Format): string {
    let out = "";
    for (const f of this.#families) out += f.expose(format);
    return format === "openmetrics" ? `${out}# EOF\n` : out;
  }
}

function labelText(names: readonly string[], values: LabelValues): string {
  if (names.length === 0) return "";
  return `{${names.map((n, i) => `${n}="${escapeValue(values[i]!)}"`).join(",")}}`;
}

function escapeValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** HELP text: the text format escapes backslash and newline; OpenMetrics also the double quote. */
function escapeHelp(v: string, format: Format): string {
  const t = v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
  return format === "openmetrics" ? t.replace(/"/g, '\\"') : t;
}

function num(v: number): string {
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (Number.isNaN(v)) return "NaN";
  return String(v);
}

function compareValues(a: LabelValues, b: LabelValues): number {
  for (let i = 0; i < a.length; i++) {
    const c = a[i]!.localeCompare(b[i]!);
    if (c !== 0) return c;
  }
  return 0;
}
