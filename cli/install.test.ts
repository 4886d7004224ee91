/**
 * cli/install.ts (`cni-plugins install`) on temporary directories: links per name, idempotence,
 * unrelated files kept, replacement by rename (an open old file keeps its bytes), identical copies
 * skipped, leftovers of an interrupted run removed, and the command's argument handling.
 */
import { describe, expect, test } from "bun:test";
import {
  chmodSync,
  closeSync,
  existsSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../test/harness/cleanup.ts";
import { makeTempDir } from "../test/harness/tempdir.ts";
import { BINARY_NAME, installPlugins, runInstallCommand, sameContent, SHIM_NAME } from "./install.ts";

const NAMES = ["bridge", "host-local", "portmap"];
useFixtureCleanup();
const tempDir = () => makeTempDir("cni-install-test-");

/** A fake "executable" with the given content. */
function source(content: string): string {
  const file = join(tempDir(), "cni-plugins");
  writeFileSync(file, content);
  chmodSync(file, 0o700);
  return file;
}

function inode(path: string): number {
  return statSync(path).ino;
}

describe("installPlugins", () => {
  test("an empty directory gets the binary (0755) and one hard link per name", () => {
    const dest = join(tempDir(), "opt", "cni", "bin");
    const report = installPlugins({ source: source("v1"), dest, names: NAMES });
    expect(report).toEqual({ written: [BINARY_NAME, ...NAMES], unchanged: [] });
    const bin = join(dest, BINARY_NAME);
    expect(readFileSync(bin, "utf8")).toBe("v1");
    expect(statSync(bin).mode & 0o777).toBe(0o755);
    for (const n of NAMES) expect(inode(join(dest, n))).toBe(inode(bin));
    expect(statSync(bin).nlink).toBe(NAMES.length + 1);
    expect(readdirSync(dest).sort()).toEqual([BINARY_NAME, ...NAMES].sort());
  });

  test("a second run with the same binary changes nothing", () => {
    const dest = tempDir();
    const src = source("v1");
    installPlugins({ source: src, dest, names: NAMES });
    const before = Object.fromEntries([BINARY_NAME, ...NAMES].map((n) => [n, statSync(join(dest, n))]));
    const report = installPlugins({ source: src, dest, names: NAMES });
    expect(report).toEqual({ written: [], unchanged: [BINARY_NAME, ...NAMES] });
    for (const [n, st] of Object.entries(before)) {
      const now = statSync(join(dest, n));
      expect([now.ino, now.mtimeMs]).toEqual([st.ino, st.mtimeMs]);
    }
  });

  test("other plugins in the directory are left in place", () => {
    const dest = tempDir();
    writeFileSync(join(dest, "sriov"), "someone else's plugin");
    writeFileSync(join(dest, ".hidden"), "x");
    const ino = inode(join(dest, "sriov"));
    installPlugins({ source: source("v1"), dest, names: NAMES });
    expect(readFileSync(join(dest, "sriov"), "utf8")).toBe("someone else's plugin");
    expect(inode(join(dest, "sriov"))).toBe(ino);
    expect(existsSync(join(dest, ".hidden"))).toBe(true);
  });

  test("an upgrade replaces by rename: a process holding the old file keeps reading the old bytes", () => {
    const dest = tempDir();
    installPlugins({ source: source("version-one"), dest, names: NAMES });
    const oldIno = inode(join(dest, "bridge"));
    const held = openSync(join(dest, "bridge"), "r"); // as an exec'd process maps its executable
    try {
      const report = installPlugins({ source: source("version-two"), dest, names: NAMES });
      expect(report.written).toEqual([BINARY_NAME, ...NAMES]);
      const buf = Buffer.alloc(32);
      const n = readSync(held, buf, 0, buf.length, 0);
      expect(buf.subarray(0, n).toString()).toBe("version-one");
    } finally {
      closeSync(held);
    }
    const bin = join(dest, BINARY_NAME);
    expect(readFileSync(bin, "utf8")).toBe("version-two");
    expect(inode(bin)).not.toBe(oldIno);
    for (const n of NAMES) expect(inode(join(dest, n))).toBe(inode(bin));
  });

  test("names held by other files or symlinks are replaced; the symlink's target is untouched", () => {
    const dest = tempDir();
    const elsewhere = join(tempDir(), "go-bridge");
    writeFileSync(elsewhere, "go bridge");
    symlinkSync(elsewhere, join(dest, "bridge"));
    writeFileSync(join(dest, "portmap"), "go portmap");
    const report = installPlugins({ source: source("ts"), dest, names: NAMES });
    expect(report.written).toEqual([BINARY_NAME, ...NAMES]);
    expect(lstatSync(join(dest, "bridge")).isSymbolicLink()).toBe(false);
    expect(readFileSync(join(dest, "bridge"), "utf8")).toBe("ts");
    expect(readFileSync(join(dest, "portmap"), "utf8")).toBe("ts");
    expect(readFileSync(elsewhere, "utf8")).toBe("go bridge");
  });

  test("a name that is an identical copy (not a link) is kept as it is", () => {
    const dest = tempDir();
    const src = source("same bytes");
    writeFileSync(join(dest, "host-local"), "same bytes");
    const ino = inode(join(dest, "host-local"));
    const report = installPlugins({ source: src, dest, names: NAMES });
    expect(report.unchanged).toEqual(["host-local"]);
    expect(inode(join(dest, "host-local"))).toBe(ino);
  });

  test("temporary files of an interrupted run are removed; no temporary file is left", () => {
    const dest = tempDir();
    writeFileSync(join(dest, ".cni-plugins-install.bridge.77.abc"), "half");
    installPlugins({ source: source("v1"), dest, names: NAMES });
    expect(readdirSync(dest).filter((f) => f.startsWith("."))).toEqual([]);
  });

  test("the binary's own name is never a symlink left pointing elsewhere", () => {
    const dest = tempDir();
    const other = join(tempDir(), "x");
    writeFileSync(other, "v1");
    symlinkSync(other, join(dest, BINARY_NAME));
    installPlugins({ source: source("v1"), dest, names: NAMES });
    expect(lstatSync(join(dest, BINARY_NAME)).isFile()).toBe(true);
    expect(() => readlinkSync(join(dest, BINARY_NAME))).toThrow();
  });
});

describe("sameContent", () => {
  test("compares sizes, then bytes across chunk boundaries", () => {
    const d = tempDir();
    const big = Buffer.alloc((1 << 20) * 2 + 17, 7);
    writeFileSync(join(d, "a"), big);
    writeFileSync(join(d, "b"), big);
    expect(sameContent(join(d, "a"), join(d, "b"))).toBe(true);
    big[(1 << 20) + 3] = 8;
    writeFileSync(join(d, "c"), big);
    expect(sameContent(join(d, "a"), join(d, "c"))).toBe(false);
    writeFileSync(join(d, "e"), big.subarray(1));
    expect(sameContent(join(d, "a"), join(d, "e"))).toBe(false);
  });
});

describe("installPlugins with the exec shim", () => {
  /** A source directory holding the executable and the shim, as dist/bin or the image's /bin. */
  function pair(binary: string, shim: string): { source: string; shim: string } {
    const dir = tempDir();
    writeFileSync(join(dir, BINARY_NAME), binary);
    writeFileSync(join(dir, SHIM_NAME), shim);
    return { source: join(dir, BINARY_NAME), shim: join(dir, SHIM_NAME) };
  }

  test("the names are links to the shim; the executable stands alone", () => {
    const dest = tempDir();
    const report = installPlugins({ ...pair("exe", "shim"), dest, names: NAMES });
    expect(report).toEqual({ written: [BINARY_NAME, SHIM_NAME, ...NAMES], unchanged: [] });
    for (const n of NAMES) expect(inode(join(dest, n))).toBe(inode(join(dest, SHIM_NAME)));
    expect(readFileSync(join(dest, "bridge"), "utf8")).toBe("shim");
    expect(statSync(join(dest, BINARY_NAME)).nlink).toBe(1);
    expect(statSync(join(dest, SHIM_NAME)).mode & 0o777).toBe(0o755);
  });

  test("names that linked to the executable (an older install) are repointed to the shim, once", () => {
    const dest = tempDir();
    const first = pair("exe", "shim");
    installPlugins({ source: first.source, dest, names: NAMES });
    expect(readFileSync(join(dest, "bridge"), "utf8")).toBe("exe");
    expect(installPlugins({ ...first, dest, names: NAMES })).toEqual({ written: [SHIM_NAME, ...NAMES], unchanged: [BINARY_NAME] });
    expect(readFileSync(join(dest, "portmap"), "utf8")).toBe("shim");
    expect(installPlugins({ ...first, dest, names: NAMES })).toEqual({ written: [], unchanged: [BINARY_NAME, SHIM_NAME, ...NAMES] });
  });

  test("the command takes the shim beside its source", () => {
    const dest = tempDir();
    const { source: src } = pair("exe", "shim");
    let out = "";
    expect(runInstallCommand(["--dest", dest, "--source", src], NAMES, (t) => (out += t), () => {})).toBe(0);
    expect(out).toEndWith(`cni-plugins install: 5 written, 0 unchanged in ${dest}\n`);
    expect(readFileSync(join(dest, "host-local"), "utf8")).toBe("shim");
  });
});

describe("runInstallCommand", () => {
  const run = (argv: string[]) => {
    let out = "";
    let err = "";
    const code = runInstallCommand(argv, NAMES, (t) => (out += t), (t) => (err += t));
    return { code, out, err };
  };

  test("--dest DIR and --dest=DIR both work and report what was written", () => {
    const src = source("v1");
    const a = tempDir();
    const r1 = run(["--dest", a, "--source", src]);
    expect(r1).toMatchObject({ code: 0, err: "" });
    expect(r1.out).toContain(`installed ${join(a, "bridge")}\n`);
    expect(r1.out).toEndWith(`cni-plugins install: 4 written, 0 unchanged in ${a}\n`);
    const r2 = run([`--dest=${a}`, `--source=${src}`]);
    expect(r2.out).toBe(`cni-plugins install: 0 written, 4 unchanged in ${a}\n`);
  });

  test("usage errors exit 2 and name the problem", () => {
    expect(run([])).toMatchObject({ code: 2 });
    expect(run([]).err).toContain("--dest is required");
    expect(run(["--dest", tempDir(), "--force"]).err).toContain('unknown argument "--force"');
    expect(run(["--help"])).toMatchObject({ code: 0 });
  });

  test("a failure exits 1 with the reason on stderr and nothing installed", () => {
    const dest = tempDir();
    const r = run(["--dest", dest, "--source", join(dest, "missing")]);
    expect(r.code).toBe(1);
    expect(r.err).toContain("ENOENT");
    expect(readdirSync(dest)).toEqual([]);
  });
});
