/**
 * An exclusive flock(2) on a descriptor the caller already holds (and keeps owning), such as an
 * open network namespace file: `using _lock = lockFd(ns.fd)`. Waits as long as needed; released
 * when the returned object is disposed (LOCK_UN) or when the descriptor is closed. Nothing is
 * opened or created, unlike {@link FileLock} (flock.ts), which opens its lock file by path.
 */

import { LOCK_EX, LOCK_UN } from "./constants.ts";
import { flock } from "./libc.ts";

export function lockFd(fd: number): Disposable {
  flock(fd, LOCK_EX);
  return { [Symbol.dispose]: () => flock(fd, LOCK_UN) };
}
