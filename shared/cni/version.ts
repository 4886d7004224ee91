/**
 * CNI spec versions: the supported list, Go-compatible parsing and comparison (`pkg/version`), and
 * the thresholds that gate CHECK (0.4.0) and STATUS/GC (1.1.0).
 */
import { DecodingError } from "./errors.ts";
import { goQuote } from "./go-quote.ts";

/** Every spec version this suite speaks, ascending. */
export const ALL_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const;

/** The version results are built in and VERSION reports. */
export const CURRENT_VERSION = "1.1.0";

/** The VERSION answer: library version plus the versions a plugin supports, one line. */
export function versionText(versions: readonly string[]): string {
  return `${JSON.stringify({ cniVersion: CURRENT_VERSION, supportedVersions: versions })}\n`;
}

/**
 * Versions from `min` (one of ALL_VERSIONS) on, for plugins such as bandwidth and firewall. A
 * slice, not a comparison: registry/registry.ts calls it at start-up, where the first regular
 * expression would cost a compile (docs/performance.md).
 */
export function versionsFrom(min: (typeof ALL_VERSIONS)[number]): readonly string[] {
  const i = ALL_VERSIONS.indexOf(min);
  if (i < 0) throw new RangeError(`versionsFrom: unknown version ${min}`);
  return ALL_VERSIONS.slice(i);
}

/** Parses `major[.minor[.micro]]` like upstream `version.ParseVersion`; errors are code 6. */
export function parseVersion(v: string): [number, number, number] {
  const parts = v.split(".");
  if (parts.length >= 4) throw new DecodingError(`invalid version ${JSON.stringify(v)}: too many parts`);
  const names = ["major", "minor", "micro"] as const;
  const nums: [number, number, number] = [0, 0, 0];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (!/^[+-]?\d+$/.test(p)) {
      throw new DecodingError(
        `failed to convert ${names[i]} version part ${JSON.stringify(p)}: strconv.Atoi: parsing ${JSON.stringify(p)}: invalid syntax`,
      );
    }
    nums[i] = Number.parseInt(p, 10);
  }
  return nums;
}

/** a >= b; throws DecodingError when either does not parse. */
export function versionGte(a: string, b: string): boolean {
  const x = parseVersion(a);
  const y = parseVersion(b);
  for (let i = 0; i < 3; i++) {
    if (x[i]! !== y[i]!) return x[i]! > y[i]!;
  }
  return true;
}

/** The result family a version belongs to: "020" (0.1/0.2), "040" (0.3.x/0.4.0), "100" (1.x). */
export type ResultFamily = "020" | "040" | "100";

export function resultFamily(version: string): ResultFamily | undefined {
  switch (version) {
    case "":
    case "0.1.0":
    case "0.2.0":
      return "020";
    case "0.3.0":
    case "0.3.1":
    case "0.4.0":
      return "040";
    case "1.0.0":
    case "1.1.0":
      return "100";
    default:
      return undefined;
  }
}

/** Go `%q` of a string slice: `["0.1.0" "0.2.0"]`. */
export function goQuoteList(list: readonly string[]): string {
  return `[${list.map(goQuote).join(" ")}]`;
}
