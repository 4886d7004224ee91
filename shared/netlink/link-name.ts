/**
 * Which strings the kernel accepts as a link name (linux net/core/dev.c `dev_valid_name`): 1 to
 * IFNAMSIZ-1 bytes, not `.` or `..`, and no `/`, `:` or white space byte (the kernel's `isspace`:
 * tab, line feed, vertical tab, form feed, carriage return, space, and 0xa0). A NUL byte ends the
 * name early in the kernel, so a string holding one names a different link.
 */
import { IFNAMSIZ } from "./constants/if-tun.ts";

/** Bytes the kernel's `isspace` accepts (lib/ctype.c: `_S`). */
const KERNEL_SPACE = new Set([0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0]);

/** Why no link can have `name`, or undefined when one can. */
export function linkNameProblem(name: string): string | undefined {
  if (name === "") return "is empty";
  const bytes = new TextEncoder().encode(name);
  if (bytes.includes(0)) return "contains a NUL byte";
  if (bytes.byteLength >= IFNAMSIZ) return `is longer than ${IFNAMSIZ - 1} bytes`;
  if (name === "." || name === "..") return 'is "." or ".."';
  if (name.includes("/")) return 'contains "/"';
  if (name.includes(":")) return 'contains ":"';
  if (bytes.some((b) => KERNEL_SPACE.has(b))) return "contains white space";
  return undefined;
}
