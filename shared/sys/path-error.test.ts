import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { ENOENT, ENOTDIR } from "./errno.ts";
import { readTextFile } from "./file.ts";
import { PathError } from "./path-error.ts";

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe("PathError (Go's *fs.PathError text)", () => {
  test.each([
    ["node:fs", (p: string) => readFileSync(p)],
    ["shared/sys (SyscallError, positive errno)", (p: string) => readTextFile(p)],
  ])("from a %s failure: `<op> <path>: <errno text>`, errno and cause kept", (_, read) => {
    const cause = thrown(() => read("/nonexistent/x"));
    const err = new PathError("open", "/nonexistent/x", cause);
    expect(err.message).toBe("open /nonexistent/x: no such file or directory");
    expect(err.errno).toBe(ENOENT);
    expect(err.cause).toBe(cause);
  });

  test("ENOTDIR reads as Go's text", () => {
    const notDir = new PathError("open", "/etc/hostname/x", thrown(() => readdirSync("/etc/hostname/x")));
    expect(notDir.message).toBe("open /etc/hostname/x: not a directory");
    expect(notDir.errno).toBe(ENOTDIR);
  });

  test("a cause without errno keeps its own message", () => {
    expect(new PathError("open", "/p", new Error("odd")).message).toBe("open /p: odd");
    expect(new PathError("open", "/p", new Error("odd")).errno).toBe(0);
  });
});
