/**
 * The exact text a plugin prints for its result (upstream `types.PrintResult`): converted to the
 * config's version, Go JSON, 4-space indentation, no trailing newline.
 */
import type { Result } from "../types.ts";
import { resultFamily } from "../version.ts";
import { convertResult, type VersionedResult } from "./convert.ts";
import { goJsonMarshalIndent } from "./go-json.ts";
import { v020Json, type ResultV020 } from "./v020.ts";
import { v040Json, type ResultV040 } from "./v040.ts";
import { copyV100, v100Json, type ResultV100 } from "./v100.ts";

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
  return goJsonMarshalIndent(versionedJson(convertResult(result, toVersion)));
}

/**
 * Upstream loopback's quirk (upstream-matrix §1.8): the 1.x shape (sorted keys, empty dns omitted)
 * labelled `label`, without conversion. An empty label is upstream's one exception: the result is
 * really converted to 0.1.0.
 */
export function formatResultRelabelled(result: Result, label: string): string {
  if (label === "") return formatResult(result, "");
  return goJsonMarshalIndent(v100Json(copyV100(result, label)));
}
