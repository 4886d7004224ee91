import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as file from "./file.ts";
import { close } from "./libc.ts";
import { listenUnix } from "./process.ts";
import { checkSocketDirectory, listenPrivately, SocketPathError } from "./socket-file.ts";

const euid = process.geteuid!();
/** A user id that is neither root nor ours. */
const OTHER_UID = euid === 65534 ? 65533 : 65534;

let base: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "sys-socket-file-"));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** A directory made under `base` with `mode` (chmod, so the umask does not narrow it). */
function dirWithMode(rel: string, mode: number): string {
  const p = join(base, rel);
  mkdirSync(p, { recursive: true });
  chmodSync(p, mode);
  return p;
}

/** The message of the SocketPathError `f` throws. */
function refusal(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(SocketPathError);
    return (err as Error).message;
  }
  throw new Error("was not refused");
}

describe("checkSocketDirectory", () => {
  test("a 0700 directory of ours below root-owned and sticky ones (a temp dir under /tmp) is accepted", () => {
    const dir = dirWithMode("ok", 0o700);
    expect(() => checkSocketDirectory(dir, euid)).not.toThrow();
    expect(() => checkSocketDirectory(dirWithMode("ok-755", 0o755), euid)).not.toThrow();
  });

  test("a socket directory writable by group, or by others, is refused; the message names it and its mode", () => {
    for (const mode of [0o770, 0o720, 0o707, 0o702, 0o777, 0o1777]) {
      const dir = dirWithMode(`w${mode.toString(8)}`, mode);
      expect(refusal(() => checkSocketDirectory(dir, euid))).toBe(
        `unsafe socket directory ${JSON.stringify(dir)}: it is writable by group or others (mode 0${mode.toString(8)})`,
      );
    }
  });

  test("a socket directory owned by another user is refused", () => {
    // Checked on behalf of another uid (no root needed): the temp dir itself, right below /tmp, is
    // ours, so not theirs.
    expect(refusal(() => checkSocketDirectory(base, OTHER_UID))).toBe(
      `unsafe socket directory ${JSON.stringify(base)}: it is owned by uid ${euid}, not by this process's uid ${OTHER_UID}`,
    );
  });

  test("a symbolic link anywhere on the way is refused, not followed: the directory itself or a component above it", () => {
    const real = dirWithMode("real/sub", 0o700);
    symlinkSync(join(base, "real"), join(base, "above"));
    symlinkSync(real, join(base, "itself"));
    expect(statSync(join(base, "above", "sub")).isDirectory()).toBe(true); // what a path walk would accept
    expect(refusal(() => checkSocketDirectory(join(base, "above", "sub"), euid))).toBe(
      `unsafe socket directory ${JSON.stringify(join(base, "above", "sub"))}: ${join(base, "above")} is a symbolic link`,
    );
    expect(refusal(() => checkSocketDirectory(join(base, "itself"), euid))).toBe(
      `unsafe socket directory ${JSON.stringify(join(base, "itself"))}: ${join(base, "itself")} is a symbolic link`,
    );
  });

  test("an ancestor writable by others is refused unless it is sticky (as /tmp is)", () => {
    const open = dirWithMode("open", 0o777);
    const dir = dirWithMode("open/sock", 0o700);
    expect(refusal(() => checkSocketDirectory(dir, euid))).toBe(
      `unsafe socket directory ${JSON.stringify(dir)}: ${open} on the way to it is writable by group or others without the sticky bit (mode 0777)`,
    );
    chmodSync(open, 0o775);
    expect(refusal(() => checkSocketDirectory(dir, euid))).toContain("without the sticky bit (mode 0775)");
    chmodSync(open, 0o1777);
    expect(() => checkSocketDirectory(dir, euid)).not.toThrow();
  });

  test("an ancestor owned by a user other than root and ours is refused", () => {
    const mid = dirWithMode("mid", 0o755);
    const dir = dirWithMode("mid/sock", 0o700);
    // As root: `mid` given away. Otherwise the temp dir, ours, is checked on behalf of another uid.
    const [offending, checkedAs] = euid === 0 ? [mid, euid] : [base, OTHER_UID];
    if (euid === 0) chownSync(mid, OTHER_UID, OTHER_UID);
    expect(refusal(() => checkSocketDirectory(dir, checkedAs))).toBe(
      `unsafe socket directory ${JSON.stringify(dir)}: ${offending} on the way to it is owned by uid ${lstatSync(offending).uid}, neither root nor this process's uid ${checkedAs}`,
    );
  });

  test("a path through a file is refused", () => {
    writeFileSync(join(base, "file"), "");
    expect(refusal(() => checkSocketDirectory(join(base, "file"), euid))).toContain(`${join(base, "file")} is not a directory`);
  });
});

describe("listenPrivately", () => {
  const quiet = () => {};

  test("makes the missing directory 0700; the socket is 0600 from its creation, whatever the umask was", async () => {
    const path = join(base, "new", "deeper", "s.sock");
    const before = process.umask(0);
    let modeAtBirth = -1;
    try {
      const fd = await listenPrivately(path, () => {
        const fd = listenUnix(path);
        modeAtBirth = file.lstat(path).mode;
        return fd;
      }, quiet);
      close(fd);
      expect(process.umask()).toBe(0); // the caller's umask is given back
    } finally {
      process.umask(before);
    }
    expect(modeAtBirth & 0o7777).toBe(0o600);
    expect(file.lstat(path).isSocket()).toBe(true);
    expect(statSync(join(base, "new")).mode & 0o7777).toBe(0o700);
    expect(statSync(join(base, "new", "deeper")).mode & 0o7777).toBe(0o700);
  });

  test("refuses an unsafe directory before touching the path; a stale socket is replaced, a live one refused", async () => {
    const unsafe = dirWithMode("unsafe", 0o770);
    let listened = false;
    const err = await listenPrivately(join(unsafe, "s.sock"), () => (listened = true), quiet).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SocketPathError);
    expect((err as Error).message).toContain(`unsafe socket directory ${JSON.stringify(unsafe)}`);
    expect(listened).toBe(false);

    const path = join(dirWithMode("ok", 0o700), "s.sock");
    close(await listenPrivately(path, () => listenUnix(path), quiet)); // closed: the file stays, stale
    const logged: string[] = [];
    const live = await listenPrivately(path, () => listenUnix(path), (l) => logged.push(l));
    expect(logged).toEqual([`removing stale socket ${path} (connection refused: its process is gone)`]);
    try {
      const second = await listenPrivately(path, () => listenUnix(path), quiet).catch((e: unknown) => e);
      expect(second).toBeInstanceOf(SocketPathError);
      expect((second as Error).message).toBe(`another process is already listening on ${path}`);
    } finally {
      close(live);
    }
  });
});

test("FileStat: uid and isSocket agree with node:fs", () => {
  const path = join(base, "s.sock");
  const fd = listenUnix(path);
  try {
    expect(file.lstat(path).isSocket()).toBe(true);
    expect(file.lstat(base).isSocket()).toBe(false);
    const owned = join(base, "owned");
    writeFileSync(owned, "");
    if (euid === 0) chownSync(owned, OTHER_UID, OTHER_UID); // an owner that is not 0 either way
    expect(file.lstat(owned).uid).toBe(lstatSync(owned).uid);
    expect(file.lstat(owned).uid).not.toBe(0);
  } finally {
    close(fd);
  }
});
