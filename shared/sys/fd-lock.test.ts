import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { O_CLOEXEC, O_CREAT, O_RDONLY } from "./constants.ts";
import { lockFd } from "./fd-lock.ts";
import type { LockWaiter } from "./lock-waiter.ts";
import { FileLock } from "./flock.ts";

let dir = "";
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "fd-lock-test-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("lockFd", () => {
  test("holds an exclusive lock on the caller's descriptor until disposed, and leaves it open", () => {
    const path = join(dir, "held");
    const fd = openSync(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600);
    try {
      using other = FileLock.open(path);
      {
        using _held = lockFd(fd);
        expect(other.tryLock()).toBe(false);
      }
      expect(other.tryLock()).toBe(true);
      other.unlock();
      // still the caller's: the lock can be taken again on the same descriptor
      using _again = lockFd(fd);
      expect(other.tryLock()).toBe(false);
    } finally {
      closeSync(fd);
    }
  });
  test("closing the descriptor also releases it", () => {
    const path = join(dir, "closed");
    const fd = openSync(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600);
    lockFd(fd);
    using other = FileLock.open(path);
    expect(other.tryLock()).toBe(false);
    closeSync(fd);
    expect(other.tryLock()).toBe(true);
  });
});

let seq = 0;

/** A waiter that records what it is asked and runs `onPause` at each pause. */
function recorder(onPause: (n: number) => void): LockWaiter & { pauses: number[]; epochs: number; releases: number } {
  const w = {
    pauses: [] as number[],
    epochs: 0,
    releases: 0,
    epoch: () => ++w.epochs,
    pause: (ms: number) => {
      w.pauses.push(ms);
      onPause(w.pauses.length);
    },
    released: () => void w.releases++,
  };
  return w;
}

describe("lock waits with a waiter (the resident agent's calls)", () => {
  test("a held lock is tried, paused for (backing off, a fresh epoch before each try) and taken once free; its release is told", () => {
    const path = join(dir, `waited-${++seq}`);
    const holder = FileLock.open(path);
    holder.lock();
    const mine = FileLock.open(path);
    const waiter = recorder((n) => {
      if (n === 4) holder.unlock();
    });
    mine.lock(waiter);
    expect(mine.held).toBe(true);
    expect(waiter.pauses).toEqual([1, 2, 4, 4]);
    expect(waiter.epochs).toBe(5);
    expect(waiter.releases).toBe(0);
    mine.unlock();
    expect(waiter.releases).toBe(1);
    mine.close();
    holder.close();
  });

  test("a waiter whose pause gives up ends the wait with its error; nothing is held", () => {
    const path = join(dir, `waited-${++seq}`);
    const holder = FileLock.open(path);
    holder.lock();
    const mine = FileLock.open(path);
    const ended = new Error("the call was ended");
    expect(() =>
      mine.lock(
        recorder(() => {
          throw ended;
        }),
      ),
    ).toThrow(ended);
    expect(mine.held).toBe(false);
    mine.close();
    holder.close();
  });

  test("lockFd: a free lock is taken at once (no pause), and its disposal tells the release", () => {
    const lock = FileLock.open(join(dir, `waited-${++seq}`));
    const waiter = recorder(() => {
      throw new Error("no pause expected");
    });
    {
      using _held = lockFd(lock.fd, waiter);
      expect(waiter.pauses).toEqual([]);
    }
    expect(waiter.releases).toBe(1);
    // Closing a lock taken with a waiter tells it too.
    lock.lock(waiter);
    lock.close();
    expect(waiter.releases).toBe(2);
  });
});
