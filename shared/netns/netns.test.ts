import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { statfs } from "../sys/libc.ts";
import { NetnsError, NetnsNotFoundError, NotANetnsError } from "./errors.ts";
import { NetNS, checkNetnsPath, isSameNetNS } from "./netns.ts";
import { withNetNS } from "./enter.ts";
import { createTempNetNS } from "./temp.ts";
import { createScratchNetns, skipUnlessRoot, type ScratchNetns } from "./testing.ts";

const ownNs = () => readlinkSync("/proc/thread-self/ns/net");

let dir = "";
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "netns-test-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("NetNS.open validation (upstream IsNSorErr wording)", () => {
  test("a missing path is NetnsNotFoundError: failed to Statfs ...", () => {
    const p = join(dir, "gone");
    let err: unknown;
    try {
      NetNS.open(p);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NetnsNotFoundError);
    expect((err as Error).message).toBe(`failed to Statfs "${p}": no such file or directory`);
    expect((err as NetnsNotFoundError).path).toBe(p);
  });

  test("a regular file is NotANetnsError: unknown FS magic on ...: <hex>", () => {
    const p = join(dir, "plain");
    writeFileSync(p, "");
    const magic = statfs(p).type;
    let err: unknown;
    try {
      NetNS.open(p);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NotANetnsError);
    expect((err as Error).message).toBe(`unknown FS magic on "${p}": ${magic.toString(16)}`);
    expect((err as NotANetnsError).magic).toBe(magic);
  });

  test("a directory is not a netns either, and relative paths are checked as given", () => {
    expect(() => checkNetnsPath(dir)).toThrow(NotANetnsError);
    expect(() => checkNetnsPath("relative/does-not-exist")).toThrow(NetnsNotFoundError);
  });

  test("other statfs failures are NetnsError (not the not-found subclass)", () => {
    const p = join(dir, "plain2");
    writeFileSync(p, "");
    let err: unknown;
    try {
      checkNetnsPath(`${p}/child`); // ENOTDIR
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NetnsError);
    expect(err).not.toBeInstanceOf(NetnsNotFoundError);
    expect((err as Error).message).toBe(`failed to Statfs "${p}/child": not a directory`);
  });

  test("procfs and nsfs paths open; current() is the same namespace as /proc/self/ns/net", () => {
    using self = NetNS.open("/proc/self/ns/net");
    using cur = NetNS.current();
    expect(cur.path).toBe("/proc/thread-self/ns/net");
    expect(isSameNetNS(self, cur)).toBe(true);
    expect(self.fd).toBeGreaterThan(2);
  });

  test("close is idempotent and the fd is unusable afterwards", () => {
    const ns = NetNS.current();
    ns.close();
    ns.close();
    expect(ns.isOpen).toBe(false);
    expect(() => ns.fd).toThrow();
  });
});

describe("withNetNS typing", () => {
  test("a Promise-returning callback does not type-check (checked by tsc, never run)", () => {
    const typeChecks = (ns: NetNS): void => {
      // @ts-expect-error a Promise result is excluded by NotThenable
      withNetNS(ns, () => Promise.resolve(1));
      // @ts-expect-error so is any other thenable
      withNetNS(ns, () => ({ then: (_: unknown) => undefined }));
      const n: number = withNetNS(ns, () => 1);
      withNetNS(ns, () => undefined);
      void n;
    };
    expect(typeof typeChecks).toBe("function");
  });
});

describe.skipIf(skipUnlessRoot("withNetNS (setns needs CAP_SYS_ADMIN)"))("withNetNS", () => {
  let scratch: ScratchNetns;
  beforeAll(() => {
    scratch = createScratchNetns();
  });
  afterAll(() => {
    scratch[Symbol.dispose]();
  });

  test("returns the callback's value and rethrows its error", () => {
    using cur = NetNS.current();
    expect(withNetNS(cur, () => 42)).toBe(42);
    expect(() =>
      withNetNS(cur, () => {
        throw new RangeError("boom");
      }),
    ).toThrow(RangeError);
  });

  test("a thenable result is rejected at runtime", () => {
    using cur = NetNS.current();
    const sneaky = (() => ({ then: () => undefined })) as unknown as () => number;
    expect(() => withNetNS(cur, sneaky)).toThrow(/must be synchronous/);
  });

  test("runs inside the target and restores the original netns", () => {
    const before = ownNs();
    const target = readlinkSync(scratch.path);
    expect(target).not.toBe(before);
    const inside = withNetNS(scratch.ns, () => ownNs());
    expect(inside).toBe(target);
    expect(ownNs()).toBe(before);
  });

  test("restores the original netns when the callback throws", () => {
    const before = ownNs();
    expect(() =>
      withNetNS(scratch.ns, () => {
        throw new Error("inside");
      }),
    ).toThrow("inside");
    expect(ownNs()).toBe(before);
  });

  test("restores before rejecting a thenable result", () => {
    const before = ownNs();
    const sneaky = (() => Promise.resolve(1)) as unknown as () => number;
    expect(() => withNetNS(scratch.ns, sneaky)).toThrow(/must be synchronous/);
    expect(ownNs()).toBe(before);
  });

  test("nests: inner window returns to the outer namespace", () => {
    const before = ownNs();
    using host = NetNS.current();
    const seen = withNetNS(scratch.ns, () => {
      const inHost = withNetNS(host, () => ownNs());
      return [inHost, ownNs()];
    });
    expect(seen).toEqual([before, readlinkSync(scratch.path)]);
    expect(ownNs()).toBe(before);
  });

  test("isSameNetNS tells namespaces apart", () => {
    using cur = NetNS.current();
    using again = NetNS.open(scratch.path);
    expect(isSameNetNS(cur, scratch.ns)).toBe(false);
    expect(isSameNetNS(again, scratch.ns)).toBe(true);
  });

  test("createTempNetNS: a new namespace, held only by its handle; the thread stays where it was", () => {
    const before = ownNs();
    using cur = NetNS.current();
    const temp = createTempNetNS();
    try {
      expect(ownNs()).toBe(before);
      expect(isSameNetNS(temp, cur)).toBe(false);
      expect(isSameNetNS(temp, scratch.ns)).toBe(false);
      expect(readlinkSync(`/proc/self/fd/${temp.fd}`)).toMatch(/^net:\[\d+\]$/);
      expect(withNetNS(temp, () => ownNs())).toBe(readlinkSync(`/proc/self/fd/${temp.fd}`));
    } finally {
      temp.close();
    }
  });

  test("a failed switch back aborts the process with a message on stderr", () => {
    const script = `
      import { restoreOrAbort } from ${JSON.stringify(join(import.meta.dir, "_restore.ts"))};
      restoreOrAbort(987654, "/proc/1/ns/net");
      console.log("continued");
    `;
    const r = Bun.spawnSync([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
    expect(r.stdout.toString()).not.toContain("continued");
    expect(r.success).toBe(false);
    expect(r.signalCode).toBe("SIGABRT");
    expect(r.stderr.toString()).toContain(
      'fatal: failed to switch back to the original network namespace after entering "/proc/1/ns/net": setns fd=987654: bad file descriptor (EBADF)',
    );
  });
});
