/** Where the tests find the built plugins, the Go reference plugins and the test output. */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

/** The repository root (this file is test/harness/paths.ts). */
export const REPO_ROOT = resolve(import.meta.dir, "..", "..");

/**
 * The directory `make build` fills: dist/bin/cni-plugins, dist/bin/cni-plugins-shim and one hard
 * link to the shim per plugin. Set CNI_TEST_BIN_DIR to test another install (e.g. /opt/cni/bin
 * after `make install`).
 */
export const DIST_BIN = process.env.CNI_TEST_BIN_DIR || join(REPO_ROOT, "dist", "bin");

/** The multi-call executable itself. */
export const MULTI_CALL_BINARY = join(DIST_BIN, "cni-plugins");

/** The exec shim's own name in a bin directory (each plugin name is a link to it). */
export const SHIM_NAME = "cni-plugins-shim";

/** The Go reference plugins from Debian's containernetworking-plugins (1.1.1). */
export const GO_BIN_DIR = "/usr/lib/cni";

/** Where run.ts writes junit files and summaries. */
export const TEST_OUT = join(REPO_ROOT, ".test-out");

/** Absolute path of our plugin `type`. */
export function pluginPath(type: string): string {
  return join(DIST_BIN, type);
}

/** Absolute path of the Go reference plugin `type`. */
export function goPluginPath(type: string): string {
  return join(GO_BIN_DIR, type);
}

/** True when the Go reference plugin `type` is installed. */
export function hasGoPlugin(type: string): boolean {
  return existsSync(goPluginPath(type));
}
