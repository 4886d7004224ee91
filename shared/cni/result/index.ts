/**
 * CNI results: printing in any spec version, version conversion, and parsing prevResult and delegate
 * output back into the current type.
 */
export { formatResult, formatResultRelabelled, versionedJson } from "./format.ts";
export { convertResult, convertVersioned, registerConverter, toCurrent } from "./convert.ts";
export type { Converter, VersionedResult } from "./convert.ts";
export { createResult, parsePrevResult, parseResult, prevResultOf } from "./prevresult.ts";
export { goJsonMarshal, goJsonMarshalIndent, goJsonString, sortKeysDeep } from "./go-json.ts";
export type { ResultV020, V020IPConfig } from "./v020.ts";
export type { ResultV040, V040IPConfig, V040Interface } from "./v040.ts";
export type { ResultV100 } from "./v100.ts";
export { canonicalCIDR, canonicalIP } from "./ip-text.ts";
export type { CanonicalCIDR } from "./ip-text.ts";
export { cidrField, dnsFromWire, dnsSchema, ipField, routeFromWire, routeSchema } from "./common.ts";
