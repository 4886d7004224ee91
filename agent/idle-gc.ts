/**
 * Garbage collection of the agent's threads (its worker threads and its main thread).
 *
 * JavaScriptCore collects when its heap grows, which leaves a burst's garbage resident long after
 * and lets a busy thread's heap grow far past what its calls keep: in a burst of 250 pods on 2
 * CPUs the agent's peak resident set was 163 MiB with three worker threads, 130 MiB when each
 * thread asked for a collection after each call. So a worker thread asks for one after each call
 * (`callEnded`): `Bun.gc(false)` only schedules it (0.01-0.15 ms; the collection runs concurrently
 * or at the thread's next opportunity), so it costs the call nothing. And once a thread has been
 * idle for IDLE_GC_MS it runs a full collection: tens of milliseconds, too long to pay per call and
 * nothing to an idle thread. So a quiet agent gives back what a burst of calls left behind.
 */

/** How long a thread is idle before it collects its garbage. */
export const IDLE_GC_MS = 2000;

export interface Collector {
  /** The thread did something: its full collection waits for IDLE_GC_MS of idleness from now. */
  touch(): void;
  /** A call ended (its answer is on its way): a collection is asked for now, and the thread counts as active. */
  callEnded(): void;
}

/** The collector of this thread. */
export function idleCollector(): Collector {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const touch = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => Bun.gc(true), IDLE_GC_MS);
    timer.unref?.();
  };
  return {
    touch,
    callEnded() {
      Bun.gc(false);
      touch();
    },
  };
}
