import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, lstatSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { QEMU_USER_LACKS } from "../../test/harness/aarch64-emulation.ts";
import { skipWhenEmulated } from "../../test/harness/arch.ts";
import { O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_RDONLY, O_RDWR, O_WRONLY } from "./constants.ts";
import { EEXIST, EINVAL, ELOOP, ENOENT, ENOTDIR, SyscallError } from "./errno.ts";
import * as file from "./file.ts";
import { close } from "./libc.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sys-file-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function errnoOf(f: () => unknown): number {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(SyscallError);
    return (err as SyscallError).errno;
  }
  throw new Error("did not throw");
}

describe("file (libc)", () => {
  test("stat, lstat and fstat agree with node:fs", () => {
    const p = join(dir, "f");
    writeFileSync(p, "hello");
    symlinkSync(p, join(dir, "l"));
    // An nsfs inode is made on demand and may be made anew between two stats: its times are not compared.
    for (const [mine, node, withTimes] of [
      [file.stat(join(dir, "l")), statSync(join(dir, "l"), { bigint: true }), true],
      [file.lstat(join(dir, "l")), lstatSync(join(dir, "l"), { bigint: true }), true],
      [file.stat(dir), statSync(dir, { bigint: true }), true],
      [file.stat("/proc/self/ns/net"), statSync("/proc/self/ns/net", { bigint: true }), false],
    ] as const) {
      const times = (x: { mtimeNs: bigint; ctimeNs: bigint }) => (withTimes ? { mtimeNs: x.mtimeNs, ctimeNs: x.ctimeNs } : {});
      expect({ dev: mine.dev, ino: mine.ino, mode: mine.mode, size: mine.size, ...times(mine) }).toEqual({
        dev: node.dev,
        ino: node.ino,
        mode: Number(node.mode),
        size: Number(node.size),
        ...times(node),
      });
      expect([mine.isFile(), mine.isDirectory(), mine.isSymbolicLink()]).toEqual([node.isFile(), node.isDirectory(), node.isSymbolicLink()]);
    }
    const fd = file.open(p, O_RDWR);
    try {
      expect(file.fstat(fd).ino).toBe(statSync(p, { bigint: true }).ino);
    } finally {
      close(fd);
    }
  });

  const noMountIds = skipWhenEmulated("statWithMount", QEMU_USER_LACKS.mountId);
  test.skipIf(noMountIds)("statWithMount reads stx_mnt_id where mountinfo numbers the mount (the struct's offset on this architecture)", () => {
    // /proc/self/mountinfo: "<mount id> <parent id> <major:minor> <root> <mount point> ..."; the
    // last line for a mount point is the mount seen there.
    const idAt = (mountPoint: string) =>
      BigInt(readFileSync("/proc/self/mountinfo", "utf8").split("\n").filter((l) => l.split(" ")[4] === mountPoint).at(-1)!.split(" ")[0]!);
    expect(file.statWithMount("/").mountId).toBe(idAt("/"));
    expect(file.statWithMount("/proc/self/status").mountId).toBe(idAt("/proc"));
    expect(file.statWithMount("/proc/self/root").mountId).toBe(idAt("/")); // a magic link, followed
    expect(file.statWithMount("/proc/self/root").ino).toBe(file.stat("/").ino);
    expect(errnoOf(() => file.statWithMount(join(dir, "nope")))).toBe(ENOENT);
  });

  test("missing paths: ENOENT, or undefined from the IfExists forms", () => {
    expect(errnoOf(() => file.stat(join(dir, "nope")))).toBe(ENOENT);
    expect(file.statIfExists(join(dir, "nope"))).toBeUndefined();
    expect(file.lstatIfExists(join(dir, "nope"))).toBeUndefined();
    expect(errnoOf(() => file.readFile(join(dir, "nope")))).toBe(ENOENT);
  });

  test("exists agrees with node's existsSync: links followed, any failure is false", () => {
    const f = join(dir, "f");
    writeFileSync(f, "");
    symlinkSync(f, join(dir, "good"));
    symlinkSync(join(dir, "nope"), join(dir, "dangling"));
    for (const [p, want] of [
      [f, true],
      [dir, true],
      [join(dir, "good"), true],
      [join(dir, "dangling"), false],
      [join(dir, "nope"), false],
      [join(f, "below-a-file"), false], // ENOTDIR
      ["", false],
    ] as const) {
      expect([p, file.exists(p)]).toEqual([p, want]);
      expect([p, existsSync(p)]).toEqual([p, want]);
    }
  });

  test("writeFile creates with the mode, truncates, honours O_EXCL; readFile and readTextFile read it all", () => {
    const p = join(dir, "w");
    file.writeFile(p, "first version, long", 0o600);
    file.writeFile(p, "é\u2603 second");
    expect(readFileSync(p, "utf8")).toBe("é\u2603 second");
    expect(statSync(p).mode & 0o777).toBe(0o600);
    expect(file.readTextFile(p)).toBe("é\u2603 second");
    expect(errnoOf(() => file.writeFile(p, "x", 0o600, O_WRONLY | O_CREAT | O_EXCL))).toBe(EEXIST);
    const big = "y".repeat(200_000);
    file.writeFile(p, new TextEncoder().encode(big));
    expect(file.readTextFile(p)).toBe(big);
    expect(file.readTextFile("/proc/self/cmdline").length).toBeGreaterThan(0); // size 0 in stat, content read anyway
  });

  test("writeAll appends through O_APPEND and overwrites in place without O_TRUNC", () => {
    const p = join(dir, "a");
    writeFileSync(p, "0123456789");
    file.writeFile(p, "AB", 0o600, O_WRONLY);
    expect(readFileSync(p, "utf8")).toBe("AB23456789");
    const fd = file.open(p, O_WRONLY | O_APPEND);
    try {
      file.writeAll(fd, "tail");
    } finally {
      close(fd);
    }
    expect(readFileSync(p, "utf8")).toBe("AB23456789tail");
  });

  test("readDir lists names, inode numbers and kinds like readdirSync withFileTypes", () => {
    writeFileSync(join(dir, "10.0.0.2"), "x");
    mkdirSync(join(dir, "sub"));
    symlinkSync("/nonexistent", join(dir, "link"));
    writeFileSync(join(dir, "é name"), "");
    for (let i = 0; i < 2000; i++) writeFileSync(join(dir, `many-${i}`), ""); // several getdents64 batches
    const mine = new Map(file.readDir(dir).map((e) => [e.name, e.kind]));
    const node = readdirSync(dir, { withFileTypes: true });
    expect(mine.size).toBe(node.length);
    for (const d of node) {
      expect(mine.get(d.name)).toBe(d.isFile() ? "file" : d.isDirectory() ? "dir" : d.isSymbolicLink() ? "symlink" : "other");
    }
    const inodes = new Map(file.readDir(dir).map((e) => [e.name, e.ino]));
    for (const name of ["10.0.0.2", "sub", "link", "é name", "many-1999"]) {
      expect(inodes.get(name)).toBe(lstatSync(join(dir, name), { bigint: true }).ino);
    }
    expect(errnoOf(() => file.readDir(join(dir, "10.0.0.2")))).toBe(ENOTDIR);
  });

  test("joinPath cleans like path.join (and Go's filepath.Join)", () => {
    const { join: nodeJoin } = require("node:path") as typeof import("node:path");
    for (const parts of [
      ["/var/lib/cni/networks", "net1"],
      ["/var/lib/cni/networks/", "net1"],
      ["/tmp//x/./y", "..", "z"],
      ["rel", "a"],
      ["./rel/", "a"],
      ["/", "..", "a"],
      ["..", "a"],
      ["a", "..", ".."],
      ["", "a"],
      [""],
      ["a", ".."],
    ]) {
      expect(file.joinPath(...parts)).toBe(nodeJoin(...parts));
    }
  });

  test("absolutePath: against the thread's working directory, cleaned (Go's filepath.Abs)", () => {
    expect(file.absolutePath("ns/../ns/net")).toBe(join(process.cwd(), "ns", "net"));
    expect(file.absolutePath("/proc/./1/ns/net/")).toBe("/proc/1/ns/net");
  });

  test("rename, unlink, mkdirAll and utimes", () => {
    const a = join(dir, "a");
    writeFileSync(a, "x");
    file.rename(a, join(dir, "b"));
    expect(readdirSync(dir)).toEqual(["b"]);
    file.unlink(join(dir, "b"));
    expect(readdirSync(dir)).toEqual([]);
    expect(errnoOf(() => file.unlink(join(dir, "b")))).toBe(ENOENT);
    const deep = join(dir, "x", "y", "z/");
    file.mkdirAll(deep, 0o755);
    file.mkdirAll(deep, 0o755);
    expect(statSync(join(dir, "x", "y", "z")).isDirectory()).toBe(true);
    writeFileSync(join(dir, "f"), "");
    expect(errnoOf(() => file.mkdirAll(join(dir, "f"), 0o755))).toBe(EEXIST);
    file.utimes(join(dir, "x"), 1_700_000_000.5, 1_600_000_000);
    const st = statSync(join(dir, "x"), { bigint: true });
    expect(st.mtimeNs).toBe(1_600_000_000_000_000_000n);
    expect(st.atimeNs).toBe(1_700_000_000_500_000_000n);
  });

  test("link gives a second name and refuses an existing one, even a dangling link; unlinkIfExists tolerates ENOENT", () => {
    const a = join(dir, "a");
    writeFileSync(a, "x");
    file.link(a, join(dir, "b"));
    expect(statSync(join(dir, "b")).ino).toBe(statSync(a).ino);
    expect(statSync(a).nlink).toBe(2);
    symlinkSync(join(dir, "nowhere"), join(dir, "c"));
    expect(errnoOf(() => file.link(a, join(dir, "c")))).toBe(EEXIST);
    expect(errnoOf(() => file.link(a, join(dir, "b")))).toBe(EEXIST);
    file.unlinkIfExists(join(dir, "b"));
    file.unlinkIfExists(join(dir, "b"));
    expect(errnoOf(() => file.unlinkIfExists(join(dir, "a", "under-a-file")))).toBe(ENOTDIR);
  });

  test("replaceFile replaces a planted symbolic link instead of writing through it, and clears a stale temp", () => {
    const target = join(dir, "target");
    writeFileSync(target, "precious");
    symlinkSync(target, join(dir, "f"));
    symlinkSync(target, join(dir, "f.tmp"));
    file.replaceFile(join(dir, "f"), "new", 0o600, join(dir, "f.tmp"));
    expect(readFileSync(target, "latin1")).toBe("precious");
    expect(lstatSync(join(dir, "f")).isFile()).toBe(true);
    expect(statSync(join(dir, "f")).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, "f"), "latin1")).toBe("new");
    expect(readdirSync(dir).sort()).toEqual(["f", "target"]);
    // A failing rename (onto a directory) leaves no temp behind.
    mkdirSync(join(dir, "d"));
    expect(errnoOf(() => file.replaceFile(join(dir, "d"), "x", 0o600, join(dir, "d.tmp")))).toBeGreaterThan(0);
    expect(readdirSync(dir)).not.toContain("d.tmp");
  });

  test("scratchName: no two alike, in this thread or another thread of the process (the resident agent's worker threads)", async () => {
    const path = join(dir, "users.json");
    const here = [file.scratchName(path), file.scratchName(path)];
    expect(here[0]).not.toBe(here[1]);
    expect(here[0]).toStartWith(`${path}.tmp${process.pid}.`);
    const code = `import { scratchName } from ${JSON.stringify(join(import.meta.dir, "file.ts"))}; postMessage(scratchName(${JSON.stringify(path)}));`;
    const worker = new Worker(URL.createObjectURL(new Blob([code], { type: "application/typescript" })));
    const there = await new Promise<string>((resolve) => (worker.onmessage = (e: MessageEvent<string>) => resolve(e.data)));
    worker.terminate();
    expect(there).toStartWith(`${path}.tmp${process.pid}.`);
    expect(here).not.toContain(there);
    // The default scratch name of replaceFile leaves nothing behind.
    file.replaceFile(path, "{}", 0o600);
    expect(readdirSync(dir)).toEqual(["users.json"]);
  });

  test("O_NOFOLLOW refuses a symbolic link (ELOOP) on this architecture", () => {
    writeFileSync(join(dir, "t"), "x");
    symlinkSync(join(dir, "t"), join(dir, "l"));
    expect(errnoOf(() => file.readTextFile(join(dir, "l"), O_RDONLY | O_NOFOLLOW))).toBe(ELOOP);
    expect(file.readTextFile(join(dir, "t"), O_RDONLY | O_NOFOLLOW)).toBe("x");
  });

  test("a path with a NUL byte is refused (EINVAL), never truncated at the NUL", () => {
    mkdirSync(join(dir, "x"));
    expect(errnoOf(() => file.stat(`${join(dir, "x")}\0/../y`))).toBe(EINVAL);
    expect(errnoOf(() => file.mkdirAll(`${join(dir, "x")}\0z`, 0o755))).toBe(EINVAL);
  });
});
