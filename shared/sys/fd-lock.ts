/**
 * An exclusive flock(2) on a descriptor the caller already holds (and keeps owning), such as an
 * open network namespace file: `using _lock = lockFd(ns.fd)`. Waits as long as needed; released
 * when the returned object is disposed (LOCK_UN) or when the descriptor is closed. Nothing is
 * opened or created, unlike {@link FileLock} (flock.ts), which opens its lock file by path.
 *
 * How a wait ends: without a `waiter`, flock(2) blocks until the lock is free (a plugin process:
 * the wait ends at the latest with the process). With one (a call of the resident agent,
 * CmdArgs.scope.lockWaiter), the lock is tried, and between tries the thread sleeps in the
 * waiter's pause, which throws once the call has been ended, so the wait ends with the call. A
 * thread of the agent that releases a lock tells the waiter (`released`), which wakes the threads
 * pausing for one at once: a lock passed between calls of the agent costs no back-off; one held by
 * another process is tried again after each back-off.
 */

import { LOCK_EX, LOCK_NB, LOCK_UN } from "./constants.ts";
import { EAGAIN, SyscallError } from "./errno.ts";
import { flock } from "./libc.ts";
import type { LockWaiter } from "./lock-waiter.ts";

/**
 * Back-off between tries of a lock held by someone else: from the first to the longest, doubling.
 * A release by another thread of the agent wakes the pause at once, so these bound only the wait
 * for a holder outside the agent (a plugin process, Go's host-local); shorter ones made threads
 * that wait for each other poll (50 concurrent DELs through the agent took 10-20 % longer).
 */
const FIRST_PAUSE_MS = 1;
const LONGEST_PAUSE_MS = 4;

/** Takes the exclusive lock on `fd` (see the module doc for `waiter`). */
export function takeLock(fd: number, waiter: LockWaiter | undefined): void {
  if (waiter === undefined) {
    flock(fd, LOCK_EX);
    return;
  }
  for (let ms = FIRST_PAUSE_MS; ; ms = Math.min(ms * 2, LONGEST_PAUSE_MS)) {
    const epoch = waiter.epoch();
    if (tryLockFd(fd)) return;
    waiter.pause(ms, epoch);
  }
}

/** Takes the exclusive lock on `fd` if it is free now; false when someone else holds it. */
export function tryLockFd(fd: number): boolean {
  try {
    flock(fd, LOCK_EX | LOCK_NB);
    return true;
  } catch (err) {
    if (err instanceof SyscallError && err.errno === EAGAIN) return false;
    throw err;
  }
}

export function lockFd(fd: number, waiter?: LockWaiter): Disposable {
  takeLock(fd, waiter);
  return {
    [Symbol.dispose]: () => {
      flock(fd, LOCK_UN);
      waiter?.released();
    },
  };
}
