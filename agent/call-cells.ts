/**
 * The memory a worker thread shares with the pool (pool.ts) about the call it runs, one Int32Array
 * over a SharedArrayBuffer per thread: read and written with Atomics, so each side sees the other
 * even while its own event loop is busy or blocked.
 *
 * - END: 0 while the call may go on; otherwise why it is to end (an {@link EndReason}). The pool
 *   sets it (and wakes a thread sleeping on it in a lock's back-off) when the call's caller went
 *   away or its time is up; the worker's call scope reads it.
 * - WAITING: how many waits on another process (a delegate, the dhcp daemon, a lock held by someone
 *   else) the call is in now, and WAIT_SINCE: since when (clockMs) it has been in one, 0 when in
 *   none. The pool holds no call back for a thread that has only waited for a while (admission,
 *   pool.ts).
 */
export const END = 0;
export const WAITING = 1;
export const WAIT_SINCE = 2;
const CELLS = 3;

/** clockMs wraps at this (about 12 days): an age is taken modulo it. */
const CLOCK_WRAP = 0x40000000;

/** Milliseconds on a clock every thread of the process reads alike, as a cell holds it (never 0). */
export function clockMs(): number {
  return (Date.now() % CLOCK_WRAP) || 1;
}

/** How long ago `since` (a clockMs reading) was. */
export function ageMs(since: number, now = clockMs()): number {
  return (now - since + CLOCK_WRAP) % CLOCK_WRAP;
}

/** Why a call is ended, as stored in END. */
export const EndReason = { CALLER_GONE: 1, TIME_UP: 2 } as const;
export type EndReason = (typeof EndReason)[keyof typeof EndReason];

/** The text of an end reason (it becomes the call's CallEndedError message). */
export function endReasonText(reason: number): string {
  return reason === EndReason.CALLER_GONE
    ? "its caller went away (the runtime killed the plugin or gave up on it)"
    : "it ran longer than the agent's limit for a call (cni-plugins serve --call-timeout)";
}

/**
 * The process's RELEASES cell (one for all threads): a count bumped, and waited on, by each release
 * of a lock by a thread of the agent and by each call the pool ends (worker-scope.ts).
 */
export function newReleasesCell(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
}

/** Bumps a count cell and wakes whoever waits on it. */
export function bump(cell: Int32Array): void {
  Atomics.add(cell, 0, 1);
  Atomics.notify(cell, 0);
}

export function newCallCells(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(CELLS * Int32Array.BYTES_PER_ELEMENT));
}
