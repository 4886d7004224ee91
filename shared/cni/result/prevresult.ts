/**
 * Reading results back in: a chained plugin's `prevResult` (upstream `version.ParsePrevResult`
 * in containernetworking/cni) and a delegate's stdout (upstream `invoke.ExecPluginWithResult` with its
 * `fixupResultVersion`). Both end in the current type, as plugins use them
 * (`current.NewResultFromResult`).
 */
import { decode, getField, isObject } from "../decode.ts";
import { CniError, DecodingError, messageOf } from "../errors.ts";
import { PARSED_FROM, type CmdArgs, type Result } from "../types.ts";
import { resultFamily } from "../version.ts";
import { FAMILY_VERSIONS } from "./common.ts";
import { toCurrent, type VersionedResult } from "./convert.ts";
import { sortKeysDeep } from "./go-json.ts";
import { v020FromWire, v020Schema } from "./v020.ts";
import { v040FromWire, v040Schema } from "./v040.ts";
import { v100FromWire, v100Schema } from "./v100.ts";

/** The config's `prevResult` (Go field match: exact key first, then case-insensitive), or undefined when absent or null. */
export function prevResultOf(config: Record<string, unknown>): unknown {
  const raw = getField(config, "prevResult");
  return raw === null ? undefined : raw;
}

/**
 * Upstream `convert.Create`: decodes `wire` with the result type that serves `version`, then checks
 * that the decoded `cniVersion` belongs to that type.
 */
export function createResult(version: string, wire: unknown): VersionedResult {
  const family = resultFamily(version);
  if (family === undefined) throw new Error(`unsupported CNI result version ${JSON.stringify(version)}`);
  let result: VersionedResult;
  switch (family) {
    case "020":
      result = v020FromWire(decode(v020Schema, wire));
      break;
    case "040":
      result = v040FromWire(decode(v040Schema, wire));
      break;
    case "100":
      result = v100FromWire(decode(v100Schema, wire));
      break;
  }
  const supported: readonly string[] = FAMILY_VERSIONS[family];
  if (!supported.includes(result.cniVersion)) {
    throw new Error(
      `result type supports [${supported.join(" ")}] but unmarshalled CNIVersion is ${JSON.stringify(result.cniVersion)}`,
    );
  }
  return result;
}

/**
 * Parses a config's `prevResult` and returns it in the current type.
 *
 * As upstream: a `CNIVersion` key (that exact spelling) set to the config's version is added when
 * missing or empty; since Go re-serialises the map with sorted keys, a lower-case `cniVersion` in the
 * prevResult still wins. The decoder is chosen by the **config** version and the prevResult's version
 * must belong to the same family. Failures are code 6 with upstream's `could not parse prevResult: `.
 */
export function parsePrevResult(raw: unknown, configVersion: string): Result {
  try {
    if (!isObject(raw)) {
      const kind = raw === undefined || raw === null ? "null" : Array.isArray(raw) ? "array" : typeof raw;
      throw new Error(`json: cannot unmarshal ${kind} into Go struct field NetConf.prevResult of type map[string]interface {}`);
    }
    const injected: Record<string, unknown> = { ...raw };
    if (!Object.hasOwn(injected, "CNIVersion") || injected.CNIVersion === "") injected.CNIVersion = configVersion;
    const versioned = createResult(configVersion, sortKeysDeep(injected));
    const result = toCurrent(versioned);
    // Not enumerable: it is bookkeeping for printing, not part of the result's value.
    Object.defineProperty(result, PARSED_FROM, { value: versioned.cniVersion, enumerable: false });
    return result;
  } catch (err) {
    throw new DecodingError(`could not parse prevResult: ${messageOf(err)}`, { cause: err });
  }
}

/**
 * Parses a delegate's (IPAM ADD) stdout into the current type. A result whose `cniVersion` is
 * missing, empty or not a string is taken to be in the config's version (libcni's fix-up,
 * containernetworking/cni#895). Failures are code 6.
 */
export function parseResult(text: string, configVersion: string): Result {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new DecodingError(`failed to unmarshal raw result: ${messageOf(err)} result ${text}`, { cause: err });
  }
  if (raw === null) raw = {};
  if (!isObject(raw)) {
    const kind = Array.isArray(raw) ? "array" : typeof raw === "boolean" ? "bool" : typeof raw;
    throw new DecodingError(
      `failed to unmarshal raw result: json: cannot unmarshal ${kind} into Go value of type map[string]interface {} result ${text}`,
    );
  }
  try {
    const own = raw.cniVersion;
    if (typeof own === "string" && own !== "") return toCurrent(createResult(own, raw));
    return toCurrent(createResult(configVersion, sortKeysDeep({ ...raw, cniVersion: configVersion })));
  } catch (err) {
    if (err instanceof CniError) throw err;
    throw new DecodingError(messageOf(err), { cause: err });
  }
}

/** The config's prevResult in the current type, or undefined when absent/null. */
export function prevResultFrom(args: CmdArgs): Result | undefined {
  const raw = getField(args.config, "prevResult");
  if (raw === undefined || raw === null) return undefined;
  return parsePrevResult(raw, args.cniVersion);
}
