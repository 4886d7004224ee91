import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
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

  test("marks do not pile up: a DEL removes the periods before the previous one, and nothing newer", () => {
    withDir((dir) => {
      const lock = attachmentLock(dir);
      lock.whileDeleting(A, () => {});
      const markOfA = deletionMarks(dir)[0]!.path;
      const periods = markOfA.slice(0, markOfA.lastIndexOf("/", markOfA.lastIndexOf("/") - 1));
      const now = Number(basename(dirname(markOfA)));
      // A mark of the previous period stays; one two periods back goes with the next DEL.
      for (const [p, id] of [[now - 1, "c-prev"], [now - 2, "c-old"]] as const) {
        mkdirSync(join(periods, String(p)), { recursive: true });
        writeFileSync(join(periods, String(p), id), JSON.stringify({ ...A, containerID: id }));
      }
      lock.whileDeleting({ ...A, containerID: "c3" }, () => {});
      expect(deletionMarks(dir).map((m) => m.containerID).sort()).toEqual(["c-prev", "c1", "c3"]);
      expect(readdirSync(periods).sort()).toEqual([String(now - 1), String(now)]);
      expect(MARK_TTL_MS).toBe(3_600_000);
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
