/**
 * The type a lock wait (fd-lock.ts) is given to end and to wake it: the resident agent's call scope
 * passes one; a plugin process none. A type alone, so that the call's types (shared/cni/types.ts)
 * name it without loading the lock code.
 */

/** What a lock wait is ended by, and what it is woken by (the resident agent's call scope). */
export interface LockWaiter {
  /** A reading to pass to pause, taken before a try: a release after it wakes that pause at once. */
  epoch(): number;
  /** Sleeps up to `ms`, or until a lock was released after `epoch`; throws to give the wait up. */
  pause(ms: number, epoch: number): void;
  /** A lock was released by this thread: wakes those that pause. */
  released(): void;
}
