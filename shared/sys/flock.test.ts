import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { O_CLOEXEC } from "./constants.ts";
import { FileLock } from "./flock.ts";

const haveFlock1 = Bun.spawnSync(["flock", "--version"], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
let dir = "";
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "flock-test-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Starts `flock -x <path> sh -c 'touch <marker>; sleep <secs>'` and waits until it holds the lock. */
function holdWithFlock1(path: string, secs: number): ReturnType<typeof Bun.spawn> {
  const marker = `${path}.held`;
  const child = Bun.spawn(["flock", "-x", path, "sh", "-c", `touch '${marker}'; sleep ${secs}`], { stdout: "ignore", stderr: "inherit" });
  const deadline = Date.now() + 5000;
  while (!existsSync(marker)) {
    if (Date.now() > deadline) throw new Error("flock(1) did not take the lock");
    Bun.sleepSync(5);
  }
  return child;
}

describe("FileLock", () => {
  test("open creates the file read-only with mode 0750 (minus umask) and O_CLOEXEC", () => {
    const path = join(dir, "create.lock");
    using lock = FileLock.open(path);
    const mode = statSync(path).mode & 0o777;
    const umask = process.umask();
    expect(mode).toBe(0o750 & ~umask);
    const flags = parseInt(readFileSync(`/proc/self/fdinfo/${lock.fd}`, "utf8").match(/flags:\s+(\d+)/)?.[1] ?? "0", 8);
    expect(flags & O_CLOEXEC).toBe(O_CLOEXEC);
    expect(flags & 3).toBe(0); // O_RDONLY
  });

  test("lock/unlock/tryLock between two descriptors of this process", () => {
    const path = join(dir, "two.lock");
    using a = FileLock.open(path);
    using b = FileLock.open(path);
    a.lock();
    expect(a.held).toBe(true);
    expect(b.tryLock()).toBe(false);
    a.unlock();
    expect(a.held).toBe(false);
    expect(b.tryLock()).toBe(true);
    expect(a.tryLock()).toBe(false);
    b.close(); // closing releases the lock
    expect(a.tryLock()).toBe(true);
  });

  test("open of a path in a missing directory throws SyscallError ENOENT", () => {
    expect(() => FileLock.open(join(dir, "missing", "x.lock"))).toThrow(/open .*no such file or directory \(ENOENT\)/);
  });

  test("open refuses a symbolic link (ELOOP) and creates nothing at its target", () => {
    const target = join(dir, "elsewhere.lock");
    symlinkSync(target, join(dir, "link.lock"));
    expect(() => FileLock.open(join(dir, "link.lock"))).toThrow(/\(ELOOP\)/);
    expect(existsSync(target)).toBe(false);
  });

  test.skipIf(!haveFlock1)("a util-linux flock(1) holder makes tryLock fail and lock() wait", () => {
    const path = join(dir, "interop.lock");
    using lock = FileLock.open(path);
    const child = holdWithFlock1(path, 0.6);
    try {
      expect(lock.tryLock()).toBe(false);
      const t0 = performance.now();
      lock.lock(); // blocks until flock(1) exits
      const waited = performance.now() - t0;
      expect(lock.held).toBe(true);
      expect(waited).toBeGreaterThan(200);
    } finally {
      child.kill(9);
    }
  });

  test.skipIf(!haveFlock1)("while we hold the lock, flock(1) -n fails", () => {
    const path = join(dir, "reverse.lock");
    using lock = FileLock.open(path);
    lock.lock();
    expect(Bun.spawnSync(["flock", "-n", path, "true"]).exitCode).toBe(1);
    lock.unlock();
    expect(Bun.spawnSync(["flock", "-n", path, "true"]).exitCode).toBe(0);
  });
});
