/** A call's scope on a worker thread (worker-scope.ts): lock pauses woken by releases and by the call's end; waits counted. */
import { describe, expect, test } from "bun:test";
import { CallEndedError } from "../shared/cni/call-scope.ts";
import { END, EndReason, WAIT_SINCE, WAITING, bump, newCallCells, newReleasesCell } from "./call-cells.ts";
import { workerCallScope } from "./worker-scope.ts";

describe("workerCallScope", () => {
  test("a lock pause returns at once when a lock was released since its epoch, and sleeps its time otherwise", () => {
    const releases = newReleasesCell();
    const waiter = workerCallScope(newCallCells(), releases).lockWaiter!;
    const epoch = waiter.epoch();
    waiter.released();
    let t = performance.now();
    waiter.pause(1_000, epoch);
    expect(performance.now() - t).toBeLessThan(100);
    t = performance.now();
    waiter.pause(30, waiter.epoch());
    expect(performance.now() - t).toBeGreaterThanOrEqual(25);
  });

  test("a call ended by the pool: its pause throws the CallEndedError and its signal is aborted with it", () => {
    const cells = newCallCells();
    const releases = newReleasesCell();
    const scope = workerCallScope(cells, releases);
    Atomics.store(cells, END, EndReason.CALLER_GONE);
    bump(releases);
    expect(() => scope.lockWaiter!.pause(1_000, 0)).toThrow(CallEndedError);
    expect(scope.signal.aborted).toBe(true);
    expect((scope.signal.reason as Error).message).toContain("its caller went away");
  });

  test("a call started after its end (its thread was starting) begins ended", () => {
    const cells = newCallCells();
    Atomics.store(cells, END, EndReason.TIME_UP);
    expect(workerCallScope(cells, newReleasesCell()).signal.aborted).toBe(true);
  });

  test("waits on other processes are counted, nested ones once, with the time the outermost began", async () => {
    const cells = newCallCells();
    const scope = workerCallScope(cells, newReleasesCell());
    let inner = 0;
    await scope.waitOn(async () => {
      expect(Atomics.load(cells, WAITING)).toBe(1);
      const since = Atomics.load(cells, WAIT_SINCE);
      expect(since).not.toBe(0);
      await scope.waitOn(async () => {
        inner = Atomics.load(cells, WAITING);
        expect(Atomics.load(cells, WAIT_SINCE)).toBe(since);
      });
    });
    expect(inner).toBe(2);
    expect(Atomics.load(cells, WAITING)).toBe(0);
    expect(Atomics.load(cells, WAIT_SINCE)).toBe(0);
  });
});
