import { describe, expect, test } from "bun:test";
import { writeLineToStdout } from "./stdio.ts";

/** Runs a snippet that imports stdio.ts in a child process; returns its exit status and stdout. */
function child(body: string): { code: number | null; out: string } {
  const script = `import * as stdio from ${JSON.stringify(`${import.meta.dir}/stdio.ts`)};\n${body}\nprocess.exit(0);`;
  const r = Bun.spawnSync({ cmd: [process.execPath, "-e", script], stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString() };
}

describe("stdio", () => {
  test("writeAllSync writes every byte before an exit, as given (no newline added)", () => {
    const r = child(`stdio.writeAllSync(1, "x".repeat(300_000) + "%s {}");`);
    expect(r.code).toBe(0);
    expect(r.out).toBe(`${"x".repeat(300_000)}%s {}`);
  });

  test("writeLineToStdout writes the text verbatim (format characters included) before an exit", () => {
    const r = child(`stdio.writeLineToStdout('{"a":"%s %d %o %%"}\\n');`);
    expect(r.out).toBe('{"a":"%s %d %o %%"}\n');
  });

  test("writeLineToStdout refuses a text without its final newline", () => {
    expect(() => writeLineToStdout("no newline")).toThrow("must end with a newline");
  });
});
