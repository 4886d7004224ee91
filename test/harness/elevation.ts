/**
 * How `make test` run by a normal user gets root for its privileged lanes (integration, vm, e2e,
 * diff): ONE elevated child (`bun test/run.ts elevated <lanes>`) runs all of them, and its per-lane
 * totals (.test-out/<lane>.summary.json) are merged with the unit lane's. The method, in order:
 *
 * 1. `sudo`, when it needs no password now (`sudo -n true` succeeds);
 * 2. `sudo` asking for the password on the terminal, when there is one (`/dev/tty` opens) — asked
 *    up front (`sudo -v`), before the unit lane, so the rest runs unattended;
 * 3. the desktop's prompt (@vscode/sudo-prompt: /usr/bin/pkexec or /usr/bin/kdesudo) when there is
 *    a desktop session (DISPLAY or WAYLAND_DISPLAY);
 * 4. none: the lanes are reported as not run, with the command that runs them (`sudo make test`).
 *    They are not failures: the lanes that ran decide the exit status (a run that ran nothing
 *    exits 1).
 *
 * A root run in a checkout owned by someone else (the elevated child, `sudo make test`) hands its
 * outputs back to the checkout's owner (`returnToCheckoutOwner`), so that user's next `make test`
 * or `make build` finds no root-owned files.
 */
import { closeSync, existsSync, lstatSync, openSync, statSync } from "node:fs";
import { join } from "node:path";

/** The root lanes; "-agent": the same tests with a resident agent serving the plugin calls. */
export type PrivilegedLane = "integration" | "integration-agent" | "vm" | "e2e" | "e2e-agent" | "diff" | "diff-agent" | "arm64";

/** What this machine and session offer for getting root. */
export interface ElevationProbe {
  /** `sudo` is on PATH. */
  sudoInstalled: boolean;
  /** `sudo -n true` succeeded: no password needed (NOPASSWD, or a still-valid sudo timestamp). */
  sudoWithoutPassword: boolean;
  /** The process has a controlling terminal (`/dev/tty` opens), so sudo can ask for a password. */
  terminal: boolean;
  /** A desktop session (DISPLAY or WAYLAND_DISPLAY) and pkexec or kdesudo in /usr/bin. */
  desktopPrompt: boolean;
}

export type Elevation =
  | { method: "sudo"; asksPassword: boolean }
  | { method: "desktop" }
  | { method: "unavailable"; reason: string };

/** The elevation method for a probe (order in the module doc). */
export function chooseElevation(p: ElevationProbe): Elevation {
  if (p.sudoInstalled && p.sudoWithoutPassword) return { method: "sudo", asksPassword: false };
  if (p.sudoInstalled && p.terminal) return { method: "sudo", asksPassword: true };
  if (p.desktopPrompt) return { method: "desktop" };
  if (p.sudoInstalled) {
    return { method: "unavailable", reason: "sudo needs a password and there is no terminal to ask on, nor a desktop session" };
  }
  return { method: "unavailable", reason: "sudo is not installed and there is no desktop session for pkexec" };
}

/** The line printed right above the final totals when privileged lanes did not run. */
export function notRunLine(lanes: readonly PrivilegedLane[], reason: string, command: string): string {
  return `not run: ${lanes.join(", ")} (they need root; ${reason}); run them with: ${command}`;
}

/**
 * `env`'s variables whose names start with one of `prefixes` (except `exclude`), as NAME=VALUE: what
 * a child started through sudo, pkexec or the VM needs from ours (they reset the environment).
 */
export function forwardedEnv(
  env: Record<string, string | undefined>,
  prefixes: readonly string[],
  exclude: readonly string[],
): string[] {
  return Object.entries(env)
    .filter(([k, v]) => prefixes.some((p) => k.startsWith(p)) && !exclude.includes(k) && v !== undefined)
    .map(([k, v]) => `${k}=${v}`);
}

function hasControllingTerminal(): boolean {
  try {
    closeSync(openSync("/dev/tty", "r"));
    return true;
  } catch {
    return false;
  }
}

/** Probes this session (`env`: its PATH and display variables): `sudo -n true` (never prompts), /dev/tty. */
export function probeElevation(env: Record<string, string | undefined> = process.env): ElevationProbe {
  const sudo = Bun.which("sudo", { PATH: env.PATH ?? "" });
  const sudoWithoutPassword =
    sudo !== null && Bun.spawnSync([sudo, "-n", "true"], { stdin: "ignore", stdout: "ignore", stderr: "ignore" }).exitCode === 0;
  const sudoInstalled = sudo !== null;
  const desktop = Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
  return {
    sudoInstalled,
    sudoWithoutPassword,
    terminal: hasControllingTerminal(),
    desktopPrompt: desktop && (existsSync("/usr/bin/pkexec") || existsSync("/usr/bin/kdesudo")),
  };
}

/**
 * Chooses the method; for sudo with a password, asks for it now (`sudo -v` on the terminal), once.
 * A refused `sudo -v` (wrong password, no sudo rights) makes the lanes "not run".
 */
export function prepareElevation(lanes: readonly PrivilegedLane[], log: (text: string) => void): Elevation {
  const choice = chooseElevation(probeElevation());
  if (choice.method === "sudo" && choice.asksPassword) {
    log(`${lanes.join(", ")}: need root; asking sudo for your password now, once`);
    const v = Bun.spawnSync(["sudo", "-v"], { stdin: "inherit", stdout: "inherit", stderr: "inherit" });
    if (v.exitCode !== 0) return { method: "unavailable", reason: `sudo -v failed (exit ${v.exitCode}: wrong password, or no sudo rights)` };
  }
  return choice;
}

export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * Runs `argv` as root by `elevation` (sudo or the desktop prompt) with `env` (NAME=VALUE) in `cwd`;
 * the child's stdout goes to our stderr (its own totals line is not ours). Resolves with how it
 * ended, in words (`sudo exited 1`), for the report when the child never started.
 */
export async function runAsRoot(
  elevation: Exclude<Elevation, { method: "unavailable" }>,
  argv: readonly string[],
  env: readonly string[],
  cwd: string,
): Promise<string> {
  if (elevation.method === "sudo") {
    const proc = Bun.spawn(["sudo", ...(elevation.asksPassword ? [] : ["-n"]), "--", "env", ...env, ...argv], {
      cwd,
      stdin: "inherit",
      stdout: 2,
      stderr: "inherit",
    });
    await proc.exited;
    return `sudo exited ${proc.exitCode ?? proc.signalCode}`;
  }
  const { exec } = await import("@vscode/sudo-prompt");
  const command = `cd ${shellQuote(cwd)} && env ${[...env, ...argv].map(shellQuote).join(" ")}`;
  return new Promise((resolve) => {
    exec(
      command,
      { name: "CNI plugins tests", env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin" } },
      (error, stdout, stderr) => {
        if (stdout) process.stderr.write(stdout.toString());
        if (stderr) process.stderr.write(stderr.toString());
        resolve(error === undefined ? "the desktop prompt's command ended" : `desktop prompt: ${error.message}`);
      },
    );
  });
}

/**
 * As root in a checkout owned by someone else (an elevated child, `sudo make test`): gives the
 * directories `names` under `root` (never through a symlink) back to the checkout's owner. Root's
 * own checkouts (CI) are left as they are.
 */
export function returnToCheckoutOwner(root: string, names: readonly string[]): void {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = statSync(root);
  if (uid === 0) return;
  for (const name of names) {
    const dir = join(root, name);
    if (!existsSync(dir) || !lstatSync(dir).isDirectory()) continue;
    Bun.spawnSync(["find", "-P", dir, "(", "!", "-uid", String(uid), "-o", "!", "-gid", String(gid), ")", "-exec", "chown", "-h", `${uid}:${gid}`, "{}", "+"], {
      stdin: "ignore",
      stdout: "inherit",
      stderr: "inherit",
    });
  }
}
