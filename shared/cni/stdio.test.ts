import { describe, expect, test } from "bun:test";

/** Runs a snippet that imports stdio.ts in a child process; returns its exit status and stdout. */
function child(body: string, stdin = ""): { code: number | null; out: string } {
  const script = `import * as stdio from ${JSON.stringify(`${import.meta.dir}/stdio.ts`)};\n${body}\nprocess.exit(0);`;
  const r = Bun.spawnSync({ cmd: [process.execPath, "-e", script], stdin: Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString() };
}

describe("stdio", () => {
  test("writeAllSync writes every byte before an exit, as given (no newline added)", () => {
    const r = child(`stdio.writeAllSync(1, "x".repeat(300_000) + "%s {}");`);
    expect(r.code).toBe(0);
    expect(r.out).toBe(`${"x".repeat(300_000)}%s {}`);
  });

  test("readAllSync reads stdin to its end, whatever its size", () => {
    const input = `{"name":"é"}${"z".repeat(200_000)}`;
    const r = child(`const b = stdio.readAllSync(0); stdio.writeAllSync(1, b.byteLength + " " + new TextDecoder().decode(b.subarray(0, 13)));`, input);
    expect(r.out).toBe(`${Buffer.byteLength(input)} {"name":"é"}`);
  });
});
