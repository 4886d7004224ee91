import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { attachmentLock, clearDeletionMark, deletionMarks, deletionMarkTime, lockFirewall, MARK_TTL_MS, tryLockFirewall } from "./attachment-lock.ts";

const A = { network: "net", containerID: "c1", ifName: "eth0" };

function withDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), "cni-attachment-lock-"));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("attachment lock", () => {
  test("DEL leaves a mark before its removals, ADD clears it; marks are listed with their attachment", () => {
    withDir((dir) => {
      const lock = attachmentLock(dir);
      const seen = lock.whileDeleting(A, () => deletionMarkTime(A, dir));
      expect(seen).toBeNumber();
      expect(deletionMarks(dir).map(({ network, containerID, ifName }) => ({ network, containerID, ifName }))).toEqual([A]);
      expect(lock.whileAdding(A, () => deletionMarkTime(A, dir))).toBeUndefined();
      expect(deletionMarks(dir)).toEqual([]);
      lock.whileDeleting(A, () => {});
      clearDeletionMark(A, dir);
      expect(deletionMarkTime(A, dir)).toBeUndefined();
    });
  });

  test("marks do not pile up: the next DEL removes those older than the TTL, and only those", () => {
    withDir((dir) => {
      const lock = attachmentLock(dir);
      const B = { ...A, containerID: "c2" };
      lock.whileDeleting(A, () => {});
      lock.whileDeleting(B, () => {});
      const old = (Date.now() - MARK_TTL_MS - 60_000) / 1000;
      const markOfA = deletionMarks(dir).find((m) => m.containerID === "c1")!.path;
      utimesSync(markOfA, old, old);
      lock.whileDeleting({ ...A, containerID: "c3" }, () => {});
      expect(deletionMarks(dir).map((m) => m.containerID).sort()).toEqual(["c2", "c3"]);
    });
  });

  test("one holder at a time: ADD's and DEL's work runs holding it; tryLock fails meanwhile", () => {
    withDir((dir) => {
      const lock = attachmentLock(dir);
      lock.whileAdding(A, () => expect(tryLockFirewall(dir)).toBeUndefined());
      lock.whileDeleting(A, () => expect(tryLockFirewall(dir)).toBeUndefined());
      const held = tryLockFirewall(dir);
      expect(held).toBeDefined();
      expect(tryLockFirewall(dir)).toBeUndefined();
      held![Symbol.dispose]();
      using again = lockFirewall(dir);
      expect(again).toBeDefined();
    });
  });

  test("DEL still runs when the state directory cannot be used; ADD fails instead of writing unguarded", () => {
    withDir((dir) => {
      const file = join(dir, "not-a-dir");
      writeFileSync(file, "");
      const lock = attachmentLock(file);
      expect(lock.whileDeleting(A, () => "removed")).toBe("removed");
      let ran = false;
      expect(() => lock.whileAdding(A, () => void (ran = true))).toThrow(/^failed to take the firewall lock/);
      expect(ran).toBe(false);
    });
  });
});
