/** Temp directories that the fixture cleanup removes (see cleanup.ts). */
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerCleanup } from "./cleanup.ts";

/** A fresh dir under the system temp dir, removed with its contents after the test. */
export function makeTempDir(prefix = "cni-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  registerCleanup(`temp dir ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A fresh dir shared by the tests of one `describe` (call it in the describe body): removed after
 * the last of them. makeTempDir there would be removed by the first test's cleanup, and a store or
 * a libcni cache written into it later would be made again and left behind.
 */
export function suiteTempDir(prefix = "cni-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
