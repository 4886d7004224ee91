/**
 * Advisory whole-file lock over flock(2), compatible with util-linux `flock(1)` and with Go's
 * host-local store lock (`backend/disk/lock.go`): the lock file is opened read-only and created
 * if missing (mode 0750 before umask, as upstream), with O_CLOEXEC so children never inherit it.
 *
 * A blocking {@link FileLock.lock} blocks the whole JS thread; use it in plugins, not on a daemon's
 * main thread.
 */

import { LOCK_UN, O_CREAT, O_NOFOLLOW, O_RDONLY } from "./constants.ts";
import { takeLock, tryLockFd } from "./fd-lock.ts";
import type { LockWaiter } from "./lock-waiter.ts";
import { OwnedFd } from "./fd.ts";
import { open } from "./file.ts";
import { flock } from "./libc.ts";

export class FileLock {
  readonly path: string;
  readonly #file: OwnedFd;
  #held = false;
  /** Told when the lock taken with it is released. */
  #waiter: LockWaiter | undefined;

  private constructor(path: string, file: OwnedFd) {
    this.path = path;
    this.#file = file;
  }

  /**
   * Opens (creating if needed) the lock file. Does not take the lock. A symbolic link at `path`
   * is refused (ELOOP): locking its target would neither exclude the peers that lock `path` nor
   * leave the target untouched.
   */
  static open(path: string, mode = 0o750): FileLock {
    return new FileLock(path, new OwnedFd(open(path, O_RDONLY | O_CREAT | O_NOFOLLOW, mode)));
  }

  /** The underlying descriptor. */
  get fd(): number {
    return this.#file.fd;
  }

  /** True while this object holds the lock. */
  get held(): boolean {
    return this.#held;
  }

  /** Takes the exclusive lock; how the wait ends and who is told of the release: `waiter`, as in fd-lock.ts. */
  lock(waiter?: LockWaiter): void {
    takeLock(this.#file.fd, waiter);
    this.#held = true;
    this.#waiter = waiter;
  }

  /** Tries to take the exclusive lock without waiting; false when someone else holds it. */
  tryLock(): boolean {
    this.#held = tryLockFd(this.#file.fd);
    return this.#held;
  }

  /** Releases the lock (the file stays open). */
  unlock(): void {
    if (!this.#held) return;
    flock(this.#file.fd, LOCK_UN);
    this.#released();
  }

  /** Closes the file, which also releases the lock. Idempotent. */
  close(): void {
    const held = this.#held;
    this.#file.close();
    if (held) this.#released();
  }

  #released(): void {
    this.#held = false;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.released();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
