/**
 * build/check-x86-64-v2.sh can fail: on a Bun runtime compiled for x86-64-v3 (the x64 runtime of
 * Bun 1.3.0, which users saw die with SIGILL on CPUs without AVX2) it must refuse, naming the
 * shares. That it passes this build's executable is shown by every `make build` (a fresh checkout
 * has no kept verdict, so it disassembles). The runtime comes from the npm registry into a
 * temporary directory, as build/bun-runtime.sh fetches runtimes.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../test/harness/paths.ts";
import { makeTempDir } from "../test/harness/tempdir.ts";

const CHECK = join(REPO_ROOT, "build", "check-x86-64-v2.sh");
const V3_RUNTIME = "@oven/bun-linux-x64@1.3.0";

function check(exe: string): { status: number | null; out: string } {
  const r = Bun.spawnSync(["bash", CHECK, "--no-cache", exe], { stdout: "pipe", stderr: "pipe" });
  return { status: r.exitCode, out: `${r.stdout.toString()}${r.stderr.toString()}` };
}

const skip = process.arch !== "x64" ? "the check reads x86-64 code with this host's objdump" : undefined;
if (skip !== undefined) process.stderr.write(`SKIP check-x86-64-v2: ${skip}\n`);

describe.skipIf(skip !== undefined)("build/check-x86-64-v2.sh", () => {
  test(`refuses ${V3_RUNTIME}, a runtime compiled for x86-64-v3`, () => {
    const dir = makeTempDir("cni-x86-64-v2-");
    const pack = Bun.spawnSync(["npm", "pack", "--silent", V3_RUNTIME], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    expect(pack.exitCode, pack.stderr.toString()).toBe(0);
    const tgz = readdirSync(dir).find((f) => f.endsWith(".tgz"))!;
    expect(Bun.spawnSync(["tar", "-xzf", tgz], { cwd: dir }).exitCode).toBe(0);
    const r = check(join(dir, "package", "bin", "bun"));
    expect(r.status).toBe(1);
    expect(r.out).toContain("needs more than x86-64-v2");
    // the shares it names are the ones the script documents for this runtime
    expect(r.out).toMatch(/VEX-encoded \d+ \(3\.\d+ %/);
    expect(r.out).toMatch(/BMI\/LZCNT\/MOVBE \d+ \(0\.1\d+ %/);
  }, 120_000);
});
