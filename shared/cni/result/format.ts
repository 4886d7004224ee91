/**
 * The exact text a plugin prints for its result (upstream `types.PrintResult`): converted to the
 * config's version, Go JSON, 4-space indentation, no trailing newline.
 */
import { PARSED_FROM, type Result } from "../types.ts";
import { resultFamily } from "../version.ts";
import { convertResult, type VersionedResult } from "./convert.ts";
import { copyDns } from "./common.ts";
import { goJsonMarshalIndent } from "./go-json.ts";
import { v020Json } from "./v020.ts";
import { v040Json } from "./v040.ts";
import { copyV100, v100Json } from "./v100.ts";
import type { ResultV020, ResultV040, ResultV100 } from "./wire.ts";

/** The JSON value of a versioned result, in the layout its version prints. */
export function versionedJson(r: VersionedResult): unknown {
  switch (resultFamily(r.cniVersion)) {
    case "020":
      return v020Json(r as ResultV020);
    case "040":
      return v040Json(r as ResultV040);
    default:
      return v100Json(r as ResultV100);
  }
}

/** Converts the current-type `result` to `toVersion` ("" means 0.1.0) and returns the text to print. */
export function formatResult(result: Result, toVersion: string): string {
  const from = result[PARSED_FROM];
  if (from !== undefined && resultFamily(from) === "020" && resultFamily(toVersion) === "020" && !hasIPs(result)) {
    // A 0.1/0.2 prevResult without IPs printed at 0.1/0.2: upstream relabels it without converting,
    // so it prints `{"cniVersion": …, "dns": {}}` instead of refusing "no valid IP addresses".
    const empty: ResultV020 = { cniVersion: toVersion === "" ? "0.1.0" : toVersion };
    const dns = copyDns(result.dns);
    if (dns) empty.dns = dns;
    return goJsonMarshalIndent(v020Json(empty));
  }
  return goJsonMarshalIndent(versionedJson(convertResult(result, toVersion)));
}

function hasIPs(result: Result): boolean {
  return (result.ips?.length ?? 0) > 0;
}

/**
 * Upstream loopback's quirk: the 1.x shape (sorted keys, `"dns": {}` when empty)
 * labelled `label`, without conversion. An empty label is upstream's one exception: the result is
 * really converted to 0.1.0.
 */
export function formatResultRelabelled(result: Result, label: string): string {
  if (label === "") return formatResult(result, "");
  return goJsonMarshalIndent(v100Json(copyV100(result, label)));
}
