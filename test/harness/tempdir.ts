/** Temp directories that the fixture cleanup removes (see cleanup.ts). */
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
