import { expect, test } from "bun:test";
import { openSync, readlinkSync } from "node:fs";
import { O_CLOEXEC, O_RDONLY } from "./constants.ts";
import { OwnedFd } from "./fd.ts";

test("OwnedFd closes exactly once and refuses use after close", () => {
  const fd = openSync("/dev/null", O_RDONLY | O_CLOEXEC);
  const owned = new OwnedFd(fd);
  expect(owned.fd).toBe(fd);
  expect(owned.isOpen).toBe(true);
  owned.close();
  expect(owned.isOpen).toBe(false);
  expect(() => readlinkSync(`/proc/self/fd/${fd}`)).toThrow();
  expect(() => owned.fd).toThrow("fd already closed");
  owned.close(); // second close is a no-op, so a reused fd number is never closed by mistake
});

test("OwnedFd is released by `using`", () => {
  let fd = -1;
  {
    using owned = new OwnedFd(openSync("/dev/null", O_RDONLY | O_CLOEXEC));
    fd = owned.fd;
    expect(readlinkSync(`/proc/self/fd/${fd}`)).toBe("/dev/null");
  }
  expect(() => readlinkSync(`/proc/self/fd/${fd}`)).toThrow();
});

test("OwnedFd rejects a negative fd", () => {
  expect(() => new OwnedFd(-1)).toThrow(RangeError);
});
