import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { attachmentLock, clearDeletionMark, deletionMarks, deletionMarkTime, lockFirewall, tryLockFirewall } from "./attachment-lock.ts";

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
