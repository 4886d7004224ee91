import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { O_CLOEXEC, O_CREAT, O_RDONLY } from "./constants.ts";
import { lockFd } from "./fd-lock.ts";
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
