/**
 * The scope of a call on a worker thread (shared/cni/call-scope.ts): what ends its waits when the
 * pool ends the call (its caller went away, or its time is up), read from the cells the thread
 * shares with the pool (call-cells.ts).
 *
 * - Asynchronous waits (a delegate's exec, the dhcp daemon) watch `signal`. It is aborted by the
 *   pool's "end" message, which arrives whenever the thread's event loop runs, i.e. during exactly
 *   those waits.
 * - Synchronous waits (a lock held by someone else) sleep in the lock waiter's pause on the
 *   process's RELEASES cell, which every thread bumps and notifies when it releases a lock, and the
 *   pool when it ends a call: they wake at once, even while the event loop is blocked, to try the
 *   lock again or to see that their call has ended (END).
 * - While in either, the call counts as waiting (the WAITING and WAIT_SINCE cells), which
 *   admission reads.
 */
import { CallEndedError } from "../shared/cni/call-scope.ts";
import type { CallScope } from "../shared/cni/types.ts";
import { END, WAIT_SINCE, WAITING, bump, clockMs, endReasonText } from "./call-cells.ts";

export interface WorkerCallScope extends CallScope {
  /** The pool's "end" message for this call. */
  end(reason: number): void;
}

export function workerCallScope(cells: Int32Array, releases: Int32Array): WorkerCallScope {
  const controller = new AbortController();
  const end = (reason: number): void => {
    if (!controller.signal.aborted) controller.abort(new CallEndedError(endReasonText(reason)));
  };
  /** Whether the pool has ended the call (the cell is the truth; the message may still be on its way). */
  const ended = (): boolean => {
    const reason = Atomics.load(cells, END);
    if (reason !== 0) end(reason);
    return controller.signal.aborted;
  };
  ended();
  /** Into a wait on another process (the outermost one says since when) and out of it. */
  const waiting = (): void => {
    const since = clockMs();
    if (Atomics.add(cells, WAITING, 1) === 0) Atomics.store(cells, WAIT_SINCE, since);
  };
  const working = (): void => {
    if (Atomics.sub(cells, WAITING, 1) === 1) Atomics.store(cells, WAIT_SINCE, 0);
  };
  return {
    signal: controller.signal,
    end,
    lockWaiter: {
      epoch: () => Atomics.load(releases, 0),
      pause(ms, epoch) {
        if (!ended()) {
          waiting();
          try {
            Atomics.wait(releases, 0, epoch, ms);
          } finally {
            working();
          }
        }
        if (ended()) throw controller.signal.reason;
      },
      released: () => bump(releases),
    },
    async waitOn(wait) {
      waiting();
      try {
        return await wait(controller.signal);
      } finally {
        working();
      }
    },
  };
}
