/**
 * Which plugins a suite may use: ours from the build under test (dist/bin, or CNI_TEST_BIN_DIR) and
 * the Go reference from /usr/lib/cni. Every suite is a table; a row that needs a plugin that is not
 * built yet is registered as a skipped test whose NAME says why ("portmap not built yet"), and the
 * reason is printed, so it is never silent and is picked up automatically once the plugin exists.
 */
import { test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DIST_BIN, GO_BIN_DIR } from "../../harness/paths.ts";

/** Our plugin directory (the build under test). */
export const OUR_BIN = DIST_BIN;
export { GO_BIN_DIR };

export function hasOurs(type: string): boolean {
  return existsSync(join(OUR_BIN, type));
}

export function hasGo(type: string): boolean {
  return existsSync(join(GO_BIN_DIR, type));
}

/** Why a row cannot run (plugins missing from either side), or undefined when it can. */
export function missingReason(types: readonly string[], opts: { go?: boolean } = {}): string | undefined {
  const ours = types.filter((t) => !hasOurs(t));
  const go = opts.go ? types.filter((t) => !hasGo(t)) : [];
  const parts: string[] = [];
  if (ours.length > 0) parts.push(`${ours.join(", ")} not built yet`);
  if (go.length > 0) parts.push(`Go reference lacks ${go.join(", ")}`);
  return parts.length > 0 ? parts.join("; ") : undefined;
}

/**
 * Registers one table row: a real test, or a skipped test named `<name> [SKIP: <reason>]` with the
 * reason also written to stderr. `reason` may come from {@link missingReason} or a kernel/tool probe.
 */
export function rowTest(name: string, reason: string | undefined, body: () => Promise<void> | void, timeoutMs = 120_000): void {
  if (reason === undefined) {
    test(name, body, timeoutMs);
    return;
  }
  process.stderr.write(`SKIP ${name}: ${reason}\n`);
  test.skip(`${name} [SKIP: ${reason}]`, () => {});
}

/** The subset of `types` present in our build, in the given order (for "only the ones present" chains). */
export function presentOf(types: readonly string[]): string[] {
  return types.filter(hasOurs);
}
