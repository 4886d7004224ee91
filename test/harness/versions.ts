/**
 * The CNI spec version table for version-matrix tests (upstream's `AllSpecVersions` pattern), kept
 * independent of shared/cni/version.ts so the tests do not check the code against itself.
 */

export const ALL_SPEC_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const;
export type SpecVersion = (typeof ALL_SPEC_VERSIONS)[number];

/** What the Debian 1.1.1 Go plugins support (no 1.1.0). */
export const GO_REFERENCE_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"] as const;

const order = (v: string): number => ALL_SPEC_VERSIONS.indexOf(v as SpecVersion);

/** Result shape family of a version: "0.2" (`ip4`/`ip6`), "0.4" (`ips[].version`) or "1.0". */
export function resultFamily(v: string): "0.2" | "0.4" | "1.0" {
  if (order(v) <= order("0.2.0")) return "0.2";
  if (order(v) <= order("0.4.0")) return "0.4";
  return "1.0";
}

export const hasCheck = (v: string): boolean => order(v) >= order("0.4.0");
export const hasStatusAndGc = (v: string): boolean => order(v) >= order("1.1.0");
/** Cached result passed as prevResult on DEL (libcni). */
export const hasPrevResultOnDel = (v: string): boolean => order(v) >= order("0.4.0");
