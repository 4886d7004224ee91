import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AF_UNIX, SOCK_CLOEXEC, SOCK_DGRAM } from "./constants.ts";
import { ENAMETOOLONG, SyscallError } from "./errno.ts";
import { bind, close, getsockname, socket } from "./libc.ts";
import { inet6Address, inetAddress, netlinkAddress, unixAddress } from "./sockaddr.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("socket addresses", () => {
  test("sockaddr_in: family in host order, port and address in network order, zero padding", () => {
    expect(hex(inetAddress(Uint8Array.of(10, 1, 2, 3), 68))).toBe("0200" + "0044" + "0a010203" + "0000000000000000");
  });

  test("sockaddr_in6: family, port, flowinfo 0, address, scope id in host order", () => {
    const addr = new Uint8Array(16);
    addr.set([0xff, 0x02], 0);
    addr.set([0x00, 0x01, 0x00, 0x02], 12);
    expect(hex(inet6Address(addr, 547, 7))).toBe("0a00" + "0223" + "00000000" + "ff020000000000000000000000010002" + "07000000");
  });

  test("sockaddr_nl: AF_NETLINK, pid 0 (the kernel), no groups", () => {
    expect(hex(netlinkAddress())).toBe("1000" + "0000" + "00000000" + "00000000");
  });

  test("sockaddr_un: the kernel reports the bound path back as it was given", () => {
    const dir = mkdtempSync(join(tmpdir(), "sys-sockaddr-"));
    const fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    try {
      const addr = unixAddress(join(dir, "s"));
      bind(fd, addr);
      const back = new Uint8Array(addr.byteLength + 16);
      expect(hex(back.subarray(0, getsockname(fd, back)))).toBe(hex(addr));
    } finally {
      close(fd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a path that does not fit sun_path is refused (ENAMETOOLONG)", () => {
    expect(unixAddress("/".repeat(107)).byteLength).toBe(110);
    let err: unknown;
    try {
      unixAddress("/".repeat(108));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SyscallError);
    expect((err as SyscallError).errno).toBe(ENAMETOOLONG);
  });
});
