import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  chooseElevation,
  forwardedEnv,
  notRunLine,
  probeElevation,
  returnToCheckoutOwner,
  type ElevationProbe,
} from "./elevation.ts";

const none: ElevationProbe = { sudoInstalled: false, sudoWithoutPassword: false, terminal: false, desktopPrompt: false };

describe("chooseElevation", () => {
  test("sudo without a password wins, terminal or not, desktop or not", () => {
    for (const terminal of [false, true]) {
      for (const desktopPrompt of [false, true]) {
        expect(chooseElevation({ sudoInstalled: true, sudoWithoutPassword: true, terminal, desktopPrompt })).toEqual({
          method: "sudo",
          asksPassword: false,
        });
      }
    }
  });
  test("sudo needing a password: asked on the terminal when there is one, even with a desktop", () => {
    expect(chooseElevation({ ...none, sudoInstalled: true, terminal: true })).toEqual({ method: "sudo", asksPassword: true });
    expect(chooseElevation({ ...none, sudoInstalled: true, terminal: true, desktopPrompt: true })).toEqual({
      method: "sudo",
      asksPassword: true,
    });
  });
  test("the desktop prompt when sudo cannot ask (no terminal) or is missing", () => {
    expect(chooseElevation({ ...none, sudoInstalled: true, desktopPrompt: true })).toEqual({ method: "desktop" });
    expect(chooseElevation({ ...none, desktopPrompt: true })).toEqual({ method: "desktop" });
    expect(chooseElevation({ ...none, terminal: true, desktopPrompt: true })).toEqual({ method: "desktop" });
  });
  test("nothing possible: unavailable, with the reason", () => {
    expect(chooseElevation({ ...none, sudoInstalled: true })).toEqual({
      method: "unavailable",
      reason: "sudo needs a password and there is no terminal to ask on, nor a desktop session",
    });
    expect(chooseElevation(none)).toEqual({
      method: "unavailable",
      reason: "sudo is not installed and there is no desktop session for pkexec",
    });
    expect(chooseElevation({ ...none, terminal: true })).toEqual({
      method: "unavailable",
      reason: "sudo is not installed and there is no desktop session for pkexec",
    });
  });
});

describe("notRunLine", () => {
  test("names the lanes, the reason and the command that runs them", () => {
    expect(notRunLine(["integration", "vm", "e2e", "diff"], "sudo -v failed (exit 1: wrong password, or no sudo rights)", "sudo make test")).toBe(
      "not run: integration, vm, e2e, diff (they need root; sudo -v failed (exit 1: wrong password, or no sudo rights)); run them with: sudo make test",
    );
    expect(notRunLine(["e2e"], "sudo is not installed and there is no desktop session for pkexec", "sudo make test-e2e")).toBe(
      "not run: e2e (they need root; sudo is not installed and there is no desktop session for pkexec); run them with: sudo make test-e2e",
    );
  });
});

describe("forwardedEnv", () => {
  test("only the given prefixes, minus the excluded names, as NAME=VALUE", () => {
    const env = { CNI_TEST_KERNEL_MISSING: "vrf", CNI_TEST_THROWAWAY_NETNS: "4026531840", VM_DIR: "/tmp/vm", HOME: "/home/u", CNI: "x", UNSET: undefined };
    expect(forwardedEnv(env, ["CNI_", "VM_"], ["CNI_TEST_THROWAWAY_NETNS"])).toEqual(["CNI_TEST_KERNEL_MISSING=vrf", "VM_DIR=/tmp/vm"]);
    expect(forwardedEnv(env, ["CNI_TEST_"], [])).toEqual(["CNI_TEST_KERNEL_MISSING=vrf", "CNI_TEST_THROWAWAY_NETNS=4026531840"]);
  });
});

describe("probeElevation", () => {
  /** A directory whose only `sudo` exits with `status` (and records its arguments). */
  function fakeSudo(status: number): { dir: string; args: string } {
    const dir = mkdtempSync(join(tmpdir(), "fake-sudo-"));
    const args = join(dir, "args");
    writeFileSync(join(dir, "sudo"), `#!/bin/sh\nprintf '%s\\n' "$*" > '${args}'\nexit ${status}\n`);
    chmodSync(join(dir, "sudo"), 0o755);
    return { dir, args };
  }

  test("`sudo -n true` decides sudoWithoutPassword; no sudo on PATH: not installed", () => {
    const ok = fakeSudo(0);
    const refuses = fakeSudo(1);
    try {
      const withOk = probeElevation({ PATH: ok.dir });
      expect(withOk.sudoInstalled).toBe(true);
      expect(withOk.sudoWithoutPassword).toBe(true);
      expect(readFileSync(ok.args, "utf8")).toBe("-n true\n");
      const withRefusal = probeElevation({ PATH: refuses.dir });
      expect(withRefusal).toMatchObject({ sudoInstalled: true, sudoWithoutPassword: false });
      const empty = mkdtempSync(join(tmpdir(), "no-sudo-"));
      try {
        expect(probeElevation({ PATH: empty })).toMatchObject({ sudoInstalled: false, sudoWithoutPassword: false });
      } finally {
        rmSync(empty, { recursive: true, force: true });
      }
    } finally {
      rmSync(ok.dir, { recursive: true, force: true });
      rmSync(refuses.dir, { recursive: true, force: true });
    }
  });

  test("desktopPrompt needs DISPLAY or WAYLAND_DISPLAY (and pkexec or kdesudo)", () => {
    expect(probeElevation({ PATH: "" }).desktopPrompt).toBe(false);
    const hasProgram = existsSync("/usr/bin/pkexec") || existsSync("/usr/bin/kdesudo");
    expect(probeElevation({ PATH: "", DISPLAY: ":0" }).desktopPrompt).toBe(hasProgram);
    expect(probeElevation({ PATH: "", WAYLAND_DISPLAY: "wayland-0" }).desktopPrompt).toBe(hasProgram);
  });
});

describe("returnToCheckoutOwner", () => {
  const isRoot = process.getuid?.() === 0;
  test.skipIf(!isRoot)("as root: outputs in a checkout owned by someone else go back to that owner, symlinks untouched", () => {
    const base = mkdtempSync(join(tmpdir(), "checkout-"));
    const outside = mkdtempSync(join(tmpdir(), "outside-"));
    try {
      const owner = { uid: 65534, gid: 65534 };
      chownSync(base, owner.uid, owner.gid);
      mkdirSync(join(base, ".test-out", "sub"), { recursive: true });
      writeFileSync(join(base, ".test-out", "sub", "unit.xml"), "x");
      mkdirSync(join(base, "dist"));
      writeFileSync(join(outside, "file"), "x");
      symlinkSync(outside, join(base, "node_modules"));
      returnToCheckoutOwner(base, [".test-out", "dist", "node_modules", "absent"]);
      for (const p of [".test-out", ".test-out/sub", ".test-out/sub/unit.xml", "dist"]) {
        expect({ p, uid: statSync(join(base, p)).uid, gid: statSync(join(base, p)).gid }).toEqual({ p, ...owner });
      }
      expect(statSync(join(outside, "file")).uid).toBe(0);
      expect(statSync(outside).uid).toBe(0);
    } finally {
      rmSync(base, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    }
  });
  test.skipIf(!isRoot)("as root in root's own checkout (CI): nothing changes", () => {
    const base = mkdtempSync(join(tmpdir(), "checkout-"));
    try {
      mkdirSync(join(base, "dist"));
      chownSync(join(base, "dist"), 65534, 65534);
      returnToCheckoutOwner(base, ["dist"]);
      expect(statSync(join(base, "dist")).uid).toBe(65534);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
