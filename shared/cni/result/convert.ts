/**
 * Result version conversion (upstream `types/internal/convert` and the converters each result type
 * registers). Converters are registered per (from family, to family) and a
 * second registration for the same pair is rejected, as libcni does.
 */
import { InternalError } from "../errors.ts";
import type { Result } from "../types.ts";
import { CURRENT_VERSION, resultFamily, type ResultFamily } from "../version.ts";
import { v020FromV040, v020Relabel } from "./v020.ts";
import { v040FromV020, v040Relabel } from "./v040.ts";
import { copyV100, v100FromV040, v100ToV040 } from "./v100.ts";
import type { ResultV020, ResultV040, ResultV100 } from "./wire.ts";

/** A result in one concrete wire version; `cniVersion` says which. */
export type VersionedResult = ResultV020 | ResultV040 | ResultV100;

export type Converter = (from: VersionedResult, toVersion: string) => VersionedResult;

const INTERMEDIATE_040 = "0.4.0";

let registry: Map<string, Converter> | undefined;

function key(from: ResultFamily, to: ResultFamily): string {
  return `${from}>${to}`;
}

/** Adds a converter; registering a pair twice is a programming error. */
export function registerConverter(from: ResultFamily, to: ResultFamily, fn: Converter): void {
  const converters = (registry ??= new Map());
  if (converters.has(key(from, to))) {
    throw new InternalError(`converter already registered for ${from} to ${to}`);
  }
  converters.set(key(from, to), fn);
}

/** The built-in converters, registered on first use (no work at module load). */
function converters(): Map<string, Converter> {
  if (registry === undefined) {
    registerConverter("020", "020", (r, v) => v020Relabel(r as ResultV020, v));
    registerConverter("020", "040", (r, v) => v040FromV020(r as ResultV020, v));
    registerConverter("020", "100", (r, v) => v100FromV040(v040FromV020(r as ResultV020, INTERMEDIATE_040), v));
    registerConverter("040", "020", (r, v) => v020FromV040(r as ResultV040, v));
    registerConverter("040", "040", (r, v) => v040Relabel(r as ResultV040, v));
    registerConverter("040", "100", (r, v) => v100FromV040(r as ResultV040, v));
    registerConverter("100", "020", (r, v) => v020FromV040(v100ToV040(r as ResultV100, INTERMEDIATE_040), v));
    registerConverter("100", "040", (r, v) => v100ToV040(r as ResultV100, v));
    registerConverter("100", "100", (r, v) => copyV100(r as ResultV100, v));
  }
  return registry!;
}

/**
 * Converts a versioned result to `toVersion` ("" means 0.1.0). The same version returns `from`
 * itself, as upstream does. Unknown versions fail with upstream's message (code 999).
 */
export function convertVersioned(from: VersionedResult, toVersion: string): VersionedResult {
  const to = toVersion === "" ? "0.1.0" : toVersion;
  if (from.cniVersion === to) return from;
  const fromFamily = resultFamily(from.cniVersion);
  const toFamily = resultFamily(to);
  const fn = fromFamily && toFamily ? converters().get(key(fromFamily, toFamily)) : undefined;
  if (fn === undefined) {
    throw new InternalError(`no converter for CNI result version ${from.cniVersion} to ${to}`);
  }
  return fn(from, to);
}

/**
 * The current-type result converted to `toVersion` ("" means 0.1.0). `result.cniVersion` is
 * ignored: a {@link Result} is always the current (1.1.0) type.
 */
export function convertResult(result: Result, toVersion: string): VersionedResult {
  return convertVersioned(copyV100(result, CURRENT_VERSION), toVersion);
}

/** Any versioned result brought up to the current type (upstream `NewResultFromResult`). */
export function toCurrent(from: VersionedResult): Result {
  const current = convertVersioned(from, CURRENT_VERSION) as ResultV100;
  return copyV100(current, CURRENT_VERSION);
}
