import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "./cleanup.ts";
import { KERNEL_FEATURES, kernelFeature, kernelProbe, PRETEND_MISSING_ENV, requireKernel, VM_LANE_ENV } from "./kernel.ts";
import { isRoot } from "./sandbox.ts";
import { makeTempDir } from "./tempdir.ts";

/** Runs `bun test` on a one-file suite gated by requireKernel("ifb"), with `env` added. */
function runGatedSuite(env: Record<string, string>): { code: number | null; output: string } {
  const dir = makeTempDir("cni-kernel-test-");
  const file = join(dir, "gated.test.ts");
  writeFileSync(
    file,
    `import { describe, test } from "bun:test";
import { requireKernel } from ${JSON.stringify(join(import.meta.dir, "kernel.ts"))};
describe.skipIf(requireKernel("ifb") !== undefined)("needs ifb", () => {
  test("gated body", () => {});
});
`,
  );
  const run = Bun.spawnSync([process.execPath, "test", file], {
    cwd: dir,
    env: { ...process.env, [VM_LANE_ENV]: "", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() };
}

describe("kernel features", () => {
  useFixtureCleanup();

  test("requireKernel runs a block exactly when every feature it names is present", () => {
    for (const f of KERNEL_FEATURES) {
      expect(requireKernel(f) === undefined).toBe(kernelFeature(f));
    }
  });

  test.skipIf(!isRoot())("the probe agrees with a direct `unshare -n ip link add` (root)", () => {
    for (const [feature, argv] of [
      ["ifb", ["ip", "link", "add", "x0", "type", "ifb"]],
      ["bridge_vlan_filtering", ["ip", "link", "add", "x0", "type", "bridge", "vlan_filtering", "1"]],
      ["dummy", ["ip", "link", "add", "x0", "type", "dummy"]],
    ] as const) {
      const direct = Bun.spawnSync(["unshare", "--net", "--", ...argv], { stdout: "ignore", stderr: "ignore" });
      expect({ feature, supported: kernelFeature(feature) }).toEqual({ feature, supported: direct.exitCode === 0 });
    }
  });

  test(`${PRETEND_MISSING_ENV} marks a feature missing with a reason`, () => {
    const before = process.env[PRETEND_MISSING_ENV];
    process.env[PRETEND_MISSING_ENV] = "vrf, ifb";
    try {
      expect(kernelProbe("ifb")).toEqual({ supported: false, detail: `marked missing by ${PRETEND_MISSING_ENV}` });
      expect(kernelFeature("vrf")).toBe(false);
      expect(requireKernel("ifb")).toContain("kernel lacks ifb (marked missing by");
    } finally {
      if (before === undefined) delete process.env[PRETEND_MISSING_ENV];
      else process.env[PRETEND_MISSING_ENV] = before;
    }
  });

  test("on the host a missing feature skips the block and prints why", () => {
    const { code, output } = runGatedSuite({ [PRETEND_MISSING_ENV]: "ifb" });
    expect(output).toContain("skip: kernel lacks ifb (marked missing by");
    expect(output).toMatch(/^\s*0 pass\s*$/m);
    expect(output).toMatch(/^\s*1 skip\s*$/m);
    expect(code).toBe(0);
  });

  test("in the VM lane a missing feature fails instead of skipping, and the block still runs", () => {
    const { code, output } = runGatedSuite({ [PRETEND_MISSING_ENV]: "ifb", [VM_LANE_ENV]: "1" });
    expect(output).toContain("kernel feature ifb is available in the VM");
    expect(output).toContain("the VM lane's kernel lacks ifb");
    expect(output).toMatch(/^\s*1 pass\s*$/m);
    expect(output).toMatch(/^\s*1 fail\s*$/m);
    expect(code).not.toBe(0);
  });
});
