import { describe, expect, test } from "bun:test";
import { doneOverTime, medianCompletions, runWave, WaveFailed } from "./waves.ts";

/** A clock the test moves: each pod's step sets it to the time the pod is done. */
function fakeClock(start: number) {
  let now = start;
  return { now: () => now, set: (t: number) => (now = t) };
}

describe("a wave of pods", () => {
  test("every pod starts at once; each one's completion, the wave's time and the summed CPU are kept in the pods' order", async () => {
    const clock = fakeClock(1000);
    const started: number[] = [];
    const finish = [40, 10, 25];
    const gates = finish.map(() => Promise.withResolvers<void>());
    const wave = runWave(
      3,
      async (i) => {
        started.push(i);
        await gates[i]!.promise;
        clock.set(1000 + finish[i]!);
        return { cpuMs: i + 0.5, value: `pod ${i}` };
      },
      clock.now,
    );
    await Bun.sleep(0);
    expect(started).toEqual([0, 1, 2]); // all before any finished
    for (const i of [1, 2, 0]) {
      gates[i]!.resolve();
      await Bun.sleep(0);
    }
    const w = await wave;
    expect(w.completedAt).toEqual([40, 10, 25]);
    expect(w.ms).toBe(40);
    expect(w.cpuMs).toBe(0.5 + 1.5 + 2.5);
    expect(w.values).toEqual(["pod 0", "pod 1", "pod 2"]);
  });

  test("a failed pod fails the wave, but only once every other pod has finished; the first failure is the cause", async () => {
    let running = 0;
    let maxRunningAfterFailure = 0;
    const err = await runWave(4, async (i) => {
      running++;
      await Bun.sleep(i === 1 ? 1 : 20);
      running--;
      if (i === 1) throw new Error("bridge ADD (b-1) exited 1: stderr text");
      maxRunningAfterFailure = Math.max(maxRunningAfterFailure, running);
      return { cpuMs: 1, value: i };
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaveFailed);
    expect((err as WaveFailed).failed).toBe(1);
    expect((err as WaveFailed).message).toContain("1 of 4 pods failed");
    expect((err as WaveFailed).message).toContain("stderr text");
    expect(((err as WaveFailed).cause as Error).message).toContain("b-1");
    expect(running).toBe(0);
  });

  test("the typical curve: the k-th completion of each round, median over the rounds", () => {
    expect(
      medianCompletions([
        [30, 10, 20],
        [12, 35, 18],
        [11, 19, 50],
      ]),
    ).toEqual([11, 19, 35]);
    expect(medianCompletions([[5, 1]])).toEqual([1, 5]);
    expect(
      medianCompletions([
        [1, 2],
        [3, 6],
      ]),
    ).toEqual([2, 4]);
    expect(medianCompletions([])).toEqual([]);
    expect(() => medianCompletions([[1, 2], [3]])).toThrow("same number of pods");
  });

  test("pods done over time is a step line in seconds, starting at (0, 0)", () => {
    expect(doneOverTime([2500, 1000])).toEqual([
      [0, 0],
      [1, 0],
      [1, 1],
      [2.5, 1],
      [2.5, 2],
    ]);
    expect(doneOverTime([])).toEqual([[0, 0]]);
  });
});
