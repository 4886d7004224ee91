/**
 * An exclusive flock(2) on a descriptor the caller already holds (and keeps owning), such as an
 * open network namespace file: `using _lock = lockFd(ns.fd)`. Waits as long as needed; released
 * when the returned object is disposed (LOCK_UN) or when the descriptor is closed. Nothing is
 * opened or created, unlike {@link FileLock} (flock.ts), which opens its lock file by path.
 *
 * How a wait ends: without `pause`, flock(2) blocks until the lock is free (a plugin process: the
 * wait ends at the latest with the process). With `pause` (a call of the resident agent,
 * CmdArgs.scope.pause), the lock is tried, and between tries the thread sleeps through `pause`,
 * which throws once the call has been ended, so the wait ends with the call.
 */

import { LOCK_EX, LOCK_NB, LOCK_UN } from "./constants.ts";
import { EAGAIN } from "./errno.ts";
import { SyscallError } from "./errors.ts";
import { flock } from "./libc.ts";

/** Sleeps up to `ms`; throws to give the wait up. */
export type Pause = (ms: number) => void;

/** Back-off between tries of a lock held by someone else: from the first to the longest, doubling. */
const FIRST_PAUSE_MS = 0.05;
const LONGEST_PAUSE_MS = 2;

/** Takes the exclusive lock on `fd` (see the module doc for `pause`). */
export function takeLock(fd: number, pause: Pause | undefined): void {
  if (pause === undefined) {
    flock(fd, LOCK_EX);
    return;
  }
  for (let ms = FIRST_PAUSE_MS; !tryLockFd(fd); ms = Math.min(ms * 2, LONGEST_PAUSE_MS)) pause(ms);
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

export function lockFd(fd: number, pause?: Pause): Disposable {
  takeLock(fd, pause);
  return { [Symbol.dispose]: () => flock(fd, LOCK_UN) };
}
