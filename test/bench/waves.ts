/**
 * A wave of pods: every pod's chain started at once (each chain's calls one after the other), and
 * what the bench keeps of it: when each pod was done, how long until all were, the CPU time of
 * its calls. Also the arithmetic of the curve "pods done over time" drawn from several rounds.
 */
import { wallNow } from "./lib.ts";
import { median } from "./stats.ts";

export interface Wave<T> {
  /** From the start of the wave until the last pod was done. */
  ms: number;
  /** Per pod (in the order given), ms from the start of the wave until its chain was done. */
  completedAt: number[];
  /** CPU time of every process of the wave, summed. */
  cpuMs: number;
  /** Per pod, what its chain returned. */
  values: T[];
}

/** Some pods of a wave failed; `cause` is the first failure. */
export class WaveFailed extends Error {
  readonly failed: number;
  constructor(failed: number, of: number, options: { cause: unknown }) {
    super(`${failed} of ${of} pods failed; the first: ${options.cause instanceof Error ? options.cause.message : String(options.cause)}`, options);
    this.name = "WaveFailed";
    this.failed = failed;
  }
}

/**
 * Starts `pod(i)` for every i below `count` at once and waits for all of them (a failure too waits
 * for the rest, so that nothing of the wave runs on while the bench cleans up); throws WaveFailed
 * when any failed. `now` is the clock (epoch ms; tests pass their own).
 */
export async function runWave<T>(count: number, pod: (i: number) => Promise<{ cpuMs: number; value: T }>, now: () => number = wallNow): Promise<Wave<T>> {
  const completedAt: number[] = new Array<number>(count).fill(Number.NaN);
  const t0 = now();
  const settled = await Promise.allSettled(
    Array.from({ length: count }, async (_, i) => {
      const r = await pod(i);
      completedAt[i] = now() - t0;
      return r;
    }),
  );
  const ms = now() - t0;
  const failures = settled.filter((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failures.length > 0) throw new WaveFailed(failures.length, count, { cause: failures[0]!.reason });
  const done = settled as PromiseFulfilledResult<{ cpuMs: number; value: T }>[];
  return { ms, completedAt, cpuMs: done.reduce((sum, d) => sum + d.value.cpuMs, 0), values: done.map((d) => d.value.value) };
}

/**
 * The typical completion curve of several rounds of the same wave: the k-th pod to be done (the
 * k-th smallest completion time) in each round, and the median of those over the rounds.
 */
export function medianCompletions(rounds: readonly (readonly number[])[]): number[] {
  if (rounds.length === 0) return [];
  const sorted = rounds.map((r) => [...r].sort((a, b) => a - b));
  const n = sorted[0]!.length;
  if (sorted.some((r) => r.length !== n)) throw new Error("every round of a wave has the same number of pods");
  return Array.from({ length: n }, (_, k) => median(sorted.map((r) => r[k]!)));
}

/**
 * Pods done over time as a step line: (0, 0), then at each completion time (in seconds) a step up
 * by one, so that the line reads "how many pods were done at time t".
 */
export function doneOverTime(completedMs: readonly number[]): [number, number][] {
  const points: [number, number][] = [[0, 0]];
  [...completedMs]
    .sort((a, b) => a - b)
    .forEach((ms, k) => {
      points.push([ms / 1000, k], [ms / 1000, k + 1]);
    });
  return points;
}
