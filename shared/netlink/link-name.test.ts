import { describe, expect, test } from "bun:test";
import { linkNameProblem } from "./link-name.ts";

describe("linkNameProblem (dev_valid_name)", () => {
  test("names the kernel accepts", () => {
    for (const ok of ["eth0", "veth1a2b3c4d", "a", "x".repeat(15), "br-0_9.x", "é"]) expect(linkNameProblem(ok)).toBeUndefined();
  });
  test("names it refuses, with the reason", () => {
    expect(linkNameProblem("")).toBe("is empty");
    expect(linkNameProblem("eth0\u0000x")).toBe("contains a NUL byte");
    expect(linkNameProblem("x".repeat(16))).toBe("is longer than 15 bytes");
    expect(linkNameProblem("ééééééé12")).toBe("is longer than 15 bytes"); // 9 characters, 16 bytes
    expect(linkNameProblem(".")).toBe('is "." or ".."');
    expect(linkNameProblem("..")).toBe('is "." or ".."');
    expect(linkNameProblem("a/b")).toBe('contains "/"');
    expect(linkNameProblem("eth0:1")).toBe('contains ":"');
    for (const s of [" ", "\t", "\n", "\v", "\f", "\r"]) expect(linkNameProblem(`a${s}b`)).toBe("contains white space");
    // U+00E0 is C3 A0 in UTF-8: the kernel's isspace sees the 0xa0 byte
    expect(linkNameProblem("à")).toBe("contains white space");
  });
});
