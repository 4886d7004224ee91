/**
 * A full garbage collection once a thread has been idle for IDLE_GC_MS (the agent's worker threads
 * and its main thread). JavaScriptCore collects when its heap grows, which leaves a burst's garbage
 * resident long after; a full collection takes tens of milliseconds, too long to pay per call and
 * nothing to an idle thread. So a quiet agent gives back what a burst of calls left behind.
 */

/** How long a thread is idle before it collects its garbage. */
export const IDLE_GC_MS = 2000;

/** Runs a full garbage collection once nothing has called `touch` for IDLE_GC_MS. */
export function idleCollector(): { touch(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return {
    touch() {
      clearTimeout(timer);
      timer = setTimeout(() => Bun.gc(true), IDLE_GC_MS);
      timer.unref?.();
    },
  };
}
