/**
 * What each plugin says about itself. With no CNI_COMMAND it prints upstream's about text on
 * stderr and exits 0; VERSION answers the supported versions on stdout; the multi-call executable
 * under its own name lists the plugins it contains.
 */
import { describe, expect, test } from "bun:test";
import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { execPlugin } from "../harness/exec-plugin.ts";
import { DIST_BIN, MULTI_CALL_BINARY } from "../harness/paths.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { ALL_SPEC_VERSIONS } from "../harness/versions.ts";

const PLUGINS = ["loopback", "host-local", "static"] as const;
const VERSIONS_LINE = `CNI protocol versions supported: ${ALL_SPEC_VERSIONS.join(", ")}`;

describe("about and VERSION", () => {
  useFixtureCleanup();

  for (const type of PLUGINS) {
    test(`${type} prints the about text on stderr and exits 0 when CNI_COMMAND is unset`, async () => {
      const run = await execPlugin(type, { path: undefined, env: { CNI_PATH: undefined } });
      expect({ status: run.status, stdout: run.stdout }).toEqual({ status: 0, stdout: "" });
      const lines = run.stderr.split("\n");
      expect(lines[0]).toMatch(new RegExp(`^CNI ${type} plugin \\S`));
      expect(lines[1]).toBe(VERSIONS_LINE);
      expect(run.stderr.endsWith("\n")).toBe(true);
    });

    test(`${type} prints the about text when CNI_COMMAND is empty even with other variables set`, async () => {
      const run = await execPlugin(type, { command: "", containerID: "c1", ifName: "eth0", config: "{}" });
      expect(run.status).toBe(0);
      expect(run.stdout).toBe("");
      expect(run.stderr).toContain(VERSIONS_LINE);
    });

    test(`${type} VERSION answers the supported versions as one JSON line`, async () => {
      const run = await execPlugin(type, { command: "VERSION" });
      expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: "" });
      expect(run.stdout).toBe(`${JSON.stringify({ cniVersion: "1.1.0", supportedVersions: ALL_SPEC_VERSIONS })}\n`);
    });

    test(`${type} VERSION ignores stdin, even when it is not JSON`, async () => {
      const run = await execPlugin(type, { command: "VERSION", config: "\u0000garbage{", path: "" });
      expect(run.status).toBe(0);
      expect(run.json).toEqual({ cniVersion: "1.1.0", supportedVersions: [...ALL_SPEC_VERSIONS] });
    });
  }

  test("cni-plugins under its own name lists every plugin it contains and exits 0", async () => {
    const run = await execPlugin("cni-plugins", { binDir: DIST_BIN });
    expect(run.status).toBe(0);
    expect(run.stdout).toBe("");
    for (const type of PLUGINS) expect(run.stderr).toMatch(new RegExp(`^\\s*${type}\\s*$`, "m"));
  });

  test("cni-plugins dispatches through a symlink named after a plugin (install by symlink)", async () => {
    const dir = makeTempDir();
    symlinkSync(MULTI_CALL_BINARY, join(dir, "loopback"));
    const run = await execPlugin("loopback", { command: "VERSION", binDir: dir });
    expect(run.status).toBe(0);
    expect(run.json?.supportedVersions).toEqual([...ALL_SPEC_VERSIONS]);
  });

  test("cni-plugins under an unknown name fails and lists the plugins", async () => {
    const dir = makeTempDir();
    symlinkSync(MULTI_CALL_BINARY, join(dir, "no-such-plugin"));
    const run = await execPlugin("no-such-plugin", { command: "VERSION", binDir: dir });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("loopback");
  });
});
