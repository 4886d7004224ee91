import { describe, expect, test } from "bun:test";
import { EADDRNOTAVAIL, EAGAIN, EEXIST, ENETUNREACH, ENODEV, ENOENT, ENOTSUP, EOPNOTSUPP, errnoMessage, errnoName, EWOULDBLOCK, hasErrno, SyscallError } from "./errno.ts";

describe("errno table", () => {
  test("names and Go-style messages of common values", () => {
    expect(errnoName(EEXIST)).toBe("EEXIST");
    expect(errnoMessage(EEXIST)).toBe("file exists");
    expect(errnoName(ENODEV)).toBe("ENODEV");
    expect(errnoMessage(ENOENT)).toBe("no such file or directory");
    expect(errnoName(EADDRNOTAVAIL)).toBe("EADDRNOTAVAIL");
    expect(errnoMessage(ENETUNREACH)).toBe("network is unreachable");
  });
  test("aliases share values and the canonical name", () => {
    expect(EWOULDBLOCK).toBe(EAGAIN);
    expect(ENOTSUP).toBe(EOPNOTSUPP);
    expect(errnoName(EAGAIN)).toBe("EAGAIN");
    expect(errnoName(EOPNOTSUPP)).toBe("EOPNOTSUPP");
  });
  test("unknown values are still printable", () => {
    expect(errnoName(4000)).toBe("errno 4000");
    expect(errnoMessage(4000)).toBe("errno 4000");
  });
});

describe("SyscallError", () => {
  test("message reads <syscall> <detail>: <text> (<CODE>)", () => {
    const e = new SyscallError("setns", 1, "fd=7");
    expect(e.message).toBe("setns fd=7: operation not permitted (EPERM)");
    expect(e.syscall).toBe("setns");
    expect(e.errno).toBe(1);
    expect(e.code).toBe("EPERM");
    expect(e.name).toBe("SyscallError");
    expect(e).toBeInstanceOf(Error);
  });
  test("without detail the syscall alone prefixes the text", () => {
    expect(new SyscallError("unshare", EEXIST).message).toBe("unshare: file exists (EEXIST)");
  });
  test("keeps a cause and an optional suffix", () => {
    const cause = new Error("inner");
    const e = new SyscallError("x", ENODEV, "", { cause, suffix: ": more" });
    expect(e.cause).toBe(cause);
    expect(e.message).toBe("x: no such device (ENODEV): more");
  });
  test("hasErrno matches by number only", () => {
    expect(hasErrno(new SyscallError("x", EEXIST), EEXIST, ENODEV)).toBe(true);
    expect(hasErrno(new SyscallError("x", ENOENT), EEXIST)).toBe(false);
    expect(hasErrno(new Error("file exists"), EEXIST)).toBe(false);
  });
});
