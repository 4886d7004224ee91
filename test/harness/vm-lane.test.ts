import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "./cleanup.ts";
import { VM_LANE_ENV } from "./kernel.ts";
import { isRoot, netnsIdOf, SANDBOX_ENV } from "./sandbox.ts";
import { makeTempDir } from "./tempdir.ts";
import { vmPluginCalls } from "./vm-lane.ts";

/**
 * Runs `bun test` on a one-file suite of one describeVm block needing `needs` (its one test passes),
 * with `env` added; with `unshare`, in a fresh netns (root only). Returns bun's pass count and whether
 * it skipped anything (bun also counts a skipped block's cleanup hooks as skipped tests).
 */
function runVmBlock(needs: string, env: Record<string, string>, unshare = false): { pass: number; skipped: boolean } {
  const dir = makeTempDir("cni-vm-lane-test-");
  const file = join(dir, "block.test.ts");
  writeFileSync(
    file,
    `import { test } from "bun:test";
import { describeVm } from ${JSON.stringify(join(import.meta.dir, "vm-lane.ts"))};
describeVm("block", ${needs}, () => {
  test("body", () => {});
});
`,
  );
  const argv = [...(unshare ? ["unshare", "--net", "--"] : []), process.execPath, "test", file];
  const run = Bun.spawnSync(argv, { cwd: dir, env: { ...process.env, [SANDBOX_ENV]: "", [VM_LANE_ENV]: "", ...env }, stdout: "pipe", stderr: "pipe" });
  const output = run.stdout.toString() + run.stderr.toString();
  const count = (word: string): number => Number(new RegExp(`^\\s*(\\d+) ${word}\\s*$`, "m").exec(output)?.[1] ?? "0");
  return { pass: count("pass"), skipped: count("skip") > 0 };
}

describe("VM-lane set-up", () => {
  useFixtureCleanup();

  test("ids are unique per file and name the tag; invocations carry the file's interface name", () => {
    const calls = vmPluginCalls("xy", "eth7");
    const a = calls.ids("add");
    const b = calls.ids("add");
    expect(a).toEqual({ cid: `xy-add-${process.pid}-1`, net: "xynet-add-1", n: 1 });
    expect(b.n).toBe(2);
    expect(b.cid).not.toBe(a.cid);
    expect(vmPluginCalls("xy", "eth7").ids("add")).toEqual(a);
    expect(calls.inv("/proc/1/ns/net", "DEL", { a: 1 }, "c1")).toEqual({ command: "DEL", containerID: "c1", netns: "/proc/1/ns/net", ifName: "eth7", config: { a: 1 } });
  });

  test("outside a throwaway netns a block is skipped, whatever it needs", () => {
    expect(runVmBlock("{}", {})).toEqual({ pass: 0, skipped: true });
    expect(runVmBlock("{ onlyInVm: true }", { [VM_LANE_ENV]: "1" })).toEqual({ pass: 0, skipped: true });
  });

  test.skipIf(!isRoot())("in a throwaway netns a block runs; one only for the VM runs only there (root)", () => {
    const sandbox = { [SANDBOX_ENV]: netnsIdOf("self") };
    expect(runVmBlock("{}", sandbox, true)).toEqual({ pass: 1, skipped: false });
    expect(runVmBlock("{ onlyInVm: true }", sandbox, true)).toEqual({ pass: 0, skipped: true });
    expect(runVmBlock("{ onlyInVm: true }", { ...sandbox, [VM_LANE_ENV]: "1" }, true)).toEqual({ pass: 1, skipped: false });
  });
});
