import { describe, expect, test } from "bun:test";
import { closeSync, openSync, readFileSync, readlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nativeCommand } from "../../test/harness/arch.ts";
import { AF_NETLINK, NSFS_MAGIC, O_CLOEXEC, O_RDONLY, O_RDWR, PROC_SUPER_MAGIC, SOCK_CLOEXEC, SOCK_RAW } from "./constants.ts";
import { EBADF, ENODEV, ENOENT, SyscallError } from "./errno.ts";
import * as libc from "./libc.ts";

describe("libc wrappers", () => {
  test("getpid/gettid match the process on the main JS thread", () => {
    expect(libc.getpid()).toBe(process.pid);
    expect(libc.gettid()).toBe(process.pid);
  });

  test("a failing call throws SyscallError with errno read right after it", () => {
    let err: unknown;
    try {
      libc.close(1_000_000);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SyscallError);
    expect((err as SyscallError).errno).toBe(EBADF);
    expect((err as SyscallError).code).toBe("EBADF");
    expect((err as SyscallError).message).toBe("close fd=1000000: bad file descriptor (EBADF)");
  });

  test("statfs reports procfs and nsfs magics, and ENOENT for a missing path", () => {
    expect(libc.statfs("/proc").type).toBe(PROC_SUPER_MAGIC);
    expect(libc.statfs("/proc/self/ns/net").type).toBe(NSFS_MAGIC);
    expect(() => libc.statfs("/nonexistent/x")).toThrow(SyscallError);
    try {
      libc.statfs("/nonexistent/x");
    } catch (e) {
      expect((e as SyscallError).errno).toBe(ENOENT);
    }
  });

  test("fstatfs on an open nsfs fd", () => {
    const fd = openSync("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    try {
      expect(libc.fstatfs(fd).type).toBe(NSFS_MAGIC);
    } finally {
      closeSync(fd);
    }
  });

  test("read and write move bytes through a file", () => {
    const path = join(tmpdir(), `libc-rw-${process.pid}`);
    writeFileSync(path, "");
    const fd = openSync(path, O_RDWR | O_CLOEXEC);
    try {
      expect(libc.write(fd, new TextEncoder().encode("hello"))).toBe(5);
      expect(readFileSync(path, "utf8")).toBe("hello");
      const rfd = openSync(path, O_RDONLY | O_CLOEXEC);
      const buf = new Uint8Array(16);
      expect(libc.read(rfd, buf)).toBe(5);
      expect(new TextDecoder().decode(buf.subarray(0, 5))).toBe("hello");
      expect(libc.read(rfd, buf)).toBe(0);
      closeSync(rfd);
    } finally {
      closeSync(fd);
      unlinkSync(path);
    }
  });

  test("socket returns a close-on-exec fd; close releases it", () => {
    const fd = libc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
    expect(readlinkSync(`/proc/self/fd/${fd}`)).toMatch(/^socket:\[\d+\]$/);
    const flags = readFileSync(`/proc/self/fdinfo/${fd}`, "utf8").match(/flags:\s+(\d+)/)?.[1] ?? "0";
    expect(parseInt(flags, 8) & O_CLOEXEC).toBe(O_CLOEXEC);
    libc.close(fd);
    expect(() => readlinkSync(`/proc/self/fd/${fd}`)).toThrow();
  });

  test("ifNameToIndex finds lo and throws ENODEV for a missing name", () => {
    expect(libc.ifNameToIndex("lo")).toBeGreaterThan(0);
    try {
      libc.ifNameToIndex("no-such-if0");
      throw new Error("expected a throw");
    } catch (e) {
      expect(e).toBeInstanceOf(SyscallError);
      expect((e as SyscallError).errno).toBe(ENODEV);
    }
  });
});

describe("ioctl", () => {
  test("SIOCGIFINDEX on a datagram socket returns lo's index in struct ifreq", () => {
    const SIOCGIFINDEX = 0x8933;
    const fd = libc.socket(2 /* AF_INET */, 2 /* SOCK_DGRAM */ | SOCK_CLOEXEC, 0);
    try {
      const ifreq = new Uint8Array(40);
      ifreq.set(new TextEncoder().encode("lo"));
      expect(libc.ioctl(fd, SIOCGIFINDEX, ifreq)).toBe(0);
      expect(new DataView(ifreq.buffer).getInt32(16, true)).toBe(libc.ifNameToIndex("lo"));
      const missing = new Uint8Array(40);
      missing.set(new TextEncoder().encode("no-such-if0"));
      expect(() => libc.ioctl(fd, SIOCGIFINDEX, missing)).toThrow(/ioctl .*no such device \(ENODEV\)/);
    } finally {
      libc.close(fd);
    }
  });
});

const isRoot = process.getuid?.() === 0;
if (!isRoot) console.warn("[skip] libc unshare/mount: need root");

describe.skipIf(!isRoot)("unshare, mount, umount2 (in a child process, so this process is untouched)", () => {
  test("unshare(CLONE_NEWNET) moves the calling thread; mount/umount2 a tmpfs in a private mount namespace", () => {
    const libcPath = JSON.stringify(join(import.meta.dir, "libc.ts"));
    const script = `
      import * as libc from ${libcPath};
      import { readlinkSync, mkdtempSync, writeFileSync, existsSync, rmdirSync } from "node:fs";
      const before = readlinkSync("/proc/thread-self/ns/net");
      libc.unshare(0x40000000);
      const after = readlinkSync("/proc/thread-self/ns/net");
      const dir = mkdtempSync("/tmp/libc-mount-");
      libc.mount("none", dir, "tmpfs", 0, "size=1m");
      const magic = libc.statfs(dir).type;
      writeFileSync(dir + "/f", "x");
      libc.umount2(dir, 2 /* MNT_DETACH */);
      const gone = !existsSync(dir + "/f");
      rmdirSync(dir);
      let err = "";
      try { libc.umount2(dir, 0); } catch (e) { err = e.code; }
      console.log(JSON.stringify({ changed: before !== after, magic, gone, err }));
    `;
    const r = Bun.spawnSync(["unshare", "-m", "--propagation", "private", ...nativeCommand([process.execPath, "-e", script])], { stdout: "pipe", stderr: "pipe" });
    expect(r.stderr.toString()).toBe("");
    expect(JSON.parse(r.stdout.toString())).toEqual({ changed: true, magic: 0x01021994 /* TMPFS_MAGIC */, gone: true, err: "ENOENT" });
  });
});
