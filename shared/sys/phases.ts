/**
 * Opt-in phase timer for profiling one plugin process (docs/performance.md).
 *
 * With `CNI_PHASES=1` in its environment, a process records named marks (points in time) and spans
 * (time spent in one kind of work, summed: netlink round trips, setns, file locks, IPAM, config
 * decoding) and prints them at exit as one line on stderr:
 *
 *     CNI_PHASES {"origin":<epoch ms of the process's time origin>,"marks":[["entry",3.1],...],
 *                 "spans":{"netlink":[1.92,14],...}}
 *
 * Mark times are ms since `origin`; a span is `[total ms, count]`. `make bench` runs a bridge ADD
 * this way and prints the per-phase breakdown. Without the variable every function here returns
 * after one boolean test: no clock reads, no allocation.
 */

/** True when this process was started with CNI_PHASES=1. */
export const phasesEnabled: boolean = process.env.CNI_PHASES === "1";

const marks: [string, number][] = [];
const spans = new Map<string, [number, number]>();

/** Records that the process reached `label` now. */
export function mark(label: string): void {
  if (phasesEnabled) marks.push([label, round(performance.now())]);
}

/** Start of a span: pass the value to {@link spanEnd}. 0 when the timer is off. */
export function spanStart(): number {
  return phasesEnabled ? performance.now() : 0;
}

/** Adds the time since `start` (from {@link spanStart}) to the span `kind`. */
export function spanEnd(kind: string, start: number): void {
  if (!phasesEnabled) return;
  const s = spans.get(kind) ?? [0, 0];
  s[0] += performance.now() - start;
  s[1]++;
  spans.set(kind, s);
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** The `CNI_PHASES {...}` line (with newline), or "" when the timer is off. */
export function phasesReport(): string {
  if (!phasesEnabled) return "";
  const out: Record<string, [number, number]> = {};
  for (const [k, [ms, n]] of spans) out[k] = [round(ms), n];
  return `CNI_PHASES ${JSON.stringify({ origin: performance.timeOrigin, marks, spans: out })}\n`;
}
