/**
 * Native programs for the architecture this test process runs on, which is not always the
 * kernel's: the arm64 lane runs the arm64 Bun on an x86_64 host under qemu user-mode emulation
 * (`qemu-aarch64-static -L /usr/aarch64-linux-gnu bun test ...`). A child of that process that is
 * an arm64 program (this Bun again, a program compiled for arm64) must then be started through the
 * emulator explicitly: the kernel cannot run it, and no binfmt_misc handler is assumed. What the
 * emulator cannot do is named in aarch64-emulation.ts (QEMU_USER_LACKS).
 */
import { readFileSync } from "node:fs";
import { emulatorArgv } from "./aarch64-emulation.ts";

/** The kernel's name of this process's architecture (uname -m). */
const MACHINE: Readonly<Record<string, string>> = { x64: "x86_64", arm64: "aarch64" };

/** The architecture the kernel runs (/proc/sys/kernel/arch, which the emulator does not translate), or undefined when unknown. */
function kernelMachine(): string | undefined {
  try {
    return readFileSync("/proc/sys/kernel/arch", "utf8").trim();
  } catch {
    return undefined;
  }
}

/** The machine name (uname -m) of the architecture this process runs on. */
export const THIS_MACHINE = MACHINE[process.arch] ?? process.arch;

/** This process runs under user-mode emulation: the kernel's architecture is another one. */
export const EMULATED = ((k) => k !== undefined && k !== THIS_MACHINE)(kernelMachine());

/**
 * `argv`, a program of this process's architecture with its arguments, as a command that runs it
 * here: under emulation through the emulator the arm64 lane runs this process with
 * (aarch64-emulation.ts).
 */
export function nativeCommand(argv: readonly string[]): string[] {
  return EMULATED ? [...emulatorArgv(), ...argv] : [...argv];
}

/**
 * The C compiler command for this process's architecture: the system's `cc` on x86_64; on arm64
 * the Debian cross compiler's name (gcc-aarch64-linux-gnu, the native compiler's name too on an
 * arm64 host), linked statically so that the program needs no arm64 C library at run time.
 */
export function cCompiler(): string[] {
  return THIS_MACHINE === "aarch64" ? ["aarch64-linux-gnu-gcc", "-static"] : ["cc"];
}

/**
 * True, and says so on stderr, when this process is emulated and `suite` needs what the emulator
 * does not pass through to the kernel (`missing`, as it fails there): such a suite runs natively
 * only.
 */
export function skipWhenEmulated(suite: string, missing: string): boolean {
  if (EMULATED) console.warn(`[skip] ${suite}: ${missing}`);
  return EMULATED;
}
