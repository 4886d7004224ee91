/**
 * Kernel parameters under /proc/sys, synchronously (so they can be used inside a withNetNS
 * window: /proc/sys/net follows the calling thread's netns).
 *
 * Names follow upstream's rule (pkg/utils/sysctl): the separator is whichever of `.` or `/`
 * appears first; with dots, `.` and `/` are swapped, so `net.ipv4.conf.eth0/1.rp_filter` names
 * the interface `eth0.1`. Writes carry no trailing newline; reads are trimmed.
 */

import { ENOENT, SyscallError } from "../sys/errno.ts";
import { readTextFile, writeFile } from "../sys/file.ts";

const PROC_SYS = "/proc/sys/";

/** Invalid sysctl name (empty, absolute, or with `..`/empty path elements). */
export class SysctlNameError extends TypeError {
  override name = "SysctlNameError";
}

export interface SysctlOptions {
  /** Treat a missing key as success (get returns undefined, set does nothing); for IPv6 keys on hosts without IPv6. */
  ignoreMissing?: boolean;
}

/** The /proc/sys path of a dotted or slashed sysctl name. */
export function sysctlPath(name: string): string {
  let rel = name;
  for (const c of name) {
    if (c === ".") {
      rel = name.replace(/[./]/g, (x) => (x === "." ? "/" : "."));
      break;
    }
    if (c === "/") break;
  }
  const parts = rel.split("/");
  if (rel === "" || parts.some((p) => p === "" || p === "." || p === "..")) {
    throw new SysctlNameError(`invalid sysctl name ${JSON.stringify(name)}`);
  }
  return PROC_SYS + rel;
}

/** The failure of any step of `op` on `path`, reported as `op` (open for reads, write for writes). */
function asOp(op: string, path: string, err: unknown): unknown {
  if (!(err instanceof SyscallError)) return err;
  return new SyscallError(op, err.errno, JSON.stringify(path), { cause: err });
}

function readValue(path: string): string {
  try {
    return readTextFile(path).trim();
  } catch (err) {
    throw asOp("open", path, err);
  }
}

/** Reads a sysctl, trimmed. Throws SyscallError (ENOENT for a missing key). */
export function sysctlGet(name: string): string;
export function sysctlGet(name: string, opts: SysctlOptions & { ignoreMissing: true }): string | undefined;
export function sysctlGet(name: string, opts?: SysctlOptions): string | undefined;
export function sysctlGet(name: string, opts: SysctlOptions = {}): string | undefined {
  const path = sysctlPath(name);
  try {
    return readValue(path);
  } catch (err) {
    if (opts.ignoreMissing === true && err instanceof SyscallError && err.errno === ENOENT) return undefined;
    throw err;
  }
}

/**
 * Sets a sysctl: reads it first and skips the write when the trimmed current value already equals
 * `value` (so an unchanged key never needs write access); writes `value` without a newline.
 */
export function sysctlSet(name: string, value: string, opts: SysctlOptions = {}): void {
  const path = sysctlPath(name);
  let current: string;
  try {
    current = readValue(path);
  } catch (err) {
    if (opts.ignoreMissing === true && err instanceof SyscallError && err.errno === ENOENT) return;
    throw err;
  }
  if (current === value.trim()) return;
  try {
    writeFile(path, value);
  } catch (err) {
    throw asOp("write", path, err);
  }
}
