/**
 * Config decoding with Go `encoding/json` semantics, driven by a small schema:
 * - object keys match fields case-insensitively (an exact-case match is preferred), unknown keys are
 *   ignored, and for duplicate keys the last one wins (JSON.parse already does that for exact twins);
 * - `null` leaves the field unset;
 * - a type mismatch fails the whole decode with Go's wording, which names the field:
 *   `json: cannot unmarshal string into Go struct field NetConf.mtu of type int`.
 *
 * Schemas infer their TypeScript output type, so a plugin declares its wire config once:
 * ```ts
 * const NetConf = t.object("NetConf", { mtu: t.int(), bridge: t.string(), ipam: t.raw() });
 * const conf = decode(NetConf, json); // { mtu?: number; bridge?: string; ipam?: unknown }
 * ```
 */
import { spanEnd, spanStart } from "../sys/phases.ts";
import { phaseEnd, phaseStart } from "../telemetry/invocation.ts";
import { InvalidConfigError } from "./errors.ts";

/** A decoder for one JSON value; `path` is the Go-style field path used in error messages. */
export interface Schema<T> {
  readonly goType: string;
  decode(value: unknown, ctx: DecodeContext): T;
}

export interface DecodeContext {
  /** Go struct name of the enclosing object, e.g. "NetConf". */
  struct: string;
  /** Field path inside the top-level struct, e.g. "ipam.ranges". */
  path: string;
}

/** Output type of a schema. */
export type Infer<S> = S extends Schema<infer T> ? T : never;

type Fields = Record<string, Schema<unknown>>;
type ObjectOf<F extends Fields> = { [K in keyof F]?: Infer<F[K]> };

/** The error Go's decoder reports for a type mismatch; code 7 (the field is named). */
export class ConfigTypeError extends InvalidConfigError {
  override name = "ConfigTypeError";
  readonly field: string;
  constructor(jsonKind: string, ctx: DecodeContext, goType: string) {
    const where = ctx.path === "" ? `Go value` : `Go struct field ${ctx.struct}.${ctx.path}`;
    super(`json: cannot unmarshal ${jsonKind} into ${where} of type ${goType}`);
    this.field = ctx.path;
  }
}

/** Go's name for the kind of a JSON value, as used in UnmarshalTypeError. */
export function jsonKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return `number ${formatGoNumber(value)}`;
  if (typeof value === "boolean") return "bool";
  return typeof value; // "string" | "object"
}

function formatGoNumber(n: number): string {
  return String(n);
}

function mismatch(value: unknown, ctx: DecodeContext, goType: string): never {
  throw new ConfigTypeError(jsonKind(value).split(" ")[0]!, ctx, goType);
}

function child(ctx: DecodeContext, key: string): DecodeContext {
  return { struct: ctx.struct, path: ctx.path === "" ? key : `${ctx.path}.${key}` };
}

function integer(goType: string, min: number, max: number): Schema<number> {
  return {
    goType,
    decode(value, ctx) {
      if (typeof value !== "number") mismatch(value, ctx, goType);
      if (!Number.isInteger(value) || value < min || value > max) {
        throw new ConfigTypeError(`number ${formatGoNumber(value)}`, ctx, goType);
      }
      return value;
    },
  };
}

/** Schema constructors, named after the Go types they mirror. */
export const t = {
  string(): Schema<string> {
    return {
      goType: "string",
      decode(value, ctx) {
        if (typeof value !== "string") mismatch(value, ctx, "string");
        return value;
      },
    };
  },
  /**
   * A `string` that names a file or directory: beyond Go, a NUL byte (which no path can hold, and
   * which Go would pass on to a failing syscall) is refused up front, naming the field (code 7).
   */
  path(): Schema<string> {
    return {
      goType: "string",
      decode(value, ctx) {
        if (typeof value !== "string") mismatch(value, ctx, "string");
        if (value.includes("\0")) throw new InvalidConfigError(`invalid ${ctx.path}: a path cannot contain a NUL byte`);
        return value;
      },
    };
  },
  bool(): Schema<boolean> {
    return {
      goType: "bool",
      decode(value, ctx) {
        if (typeof value !== "boolean") mismatch(value, ctx, "bool");
        return value;
      },
    };
  },
  /** Go `int` (64-bit here; JS safe-integer range). */
  int(): Schema<number> {
    return integer("int", Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  },
  /** Go `uint64` (JS safe-integer range). */
  uint64(): Schema<number> {
    return integer("uint64", 0, Number.MAX_SAFE_INTEGER);
  },
  uint32(): Schema<number> {
    return integer("uint32", 0, 0xffffffff);
  },
  uint16(): Schema<number> {
    return integer("uint16", 0, 0xffff);
  },
  float64(): Schema<number> {
    return {
      goType: "float64",
      decode(value, ctx) {
        if (typeof value !== "number") mismatch(value, ctx, "float64");
        return value;
      },
    };
  },
  /** Any JSON value, kept as parsed (Go `interface{}` / `json.RawMessage`). */
  raw(): Schema<unknown> {
    return { goType: "interface {}", decode: (value) => value };
  },
  array<T>(of: Schema<T>): Schema<T[]> {
    const goType = `[]${of.goType}`;
    return {
      goType,
      decode(value, ctx) {
        if (!Array.isArray(value)) mismatch(value, ctx, goType);
        const out: T[] = [];
        for (const item of value) {
          // Go leaves a null element as the zero value; we keep arrays dense by skipping nothing:
          out.push(item === null ? (undefined as T) : of.decode(item, ctx));
        }
        return out;
      },
    };
  },
  map<T>(of: Schema<T>): Schema<Record<string, T>> {
    const goType = `map[string]${of.goType}`;
    return {
      goType,
      decode(value, ctx) {
        if (typeof value !== "object" || value === null || Array.isArray(value)) mismatch(value, ctx, goType);
        const out: Record<string, T> = {};
        for (const [k, v] of Object.entries(value)) {
          if (v === null) continue;
          out[k] = of.decode(v, child(ctx, k));
        }
        return out;
      },
    };
  },
  /**
   * A Go struct. `goName` is its type as Go prints it (`main.IPAMConfig`, or just `IPAMConfig`):
   * the whole name when the struct itself has the wrong JSON type, the name without its package
   * for fields directly inside it (Go reports the innermost struct's name with the full path from
   * the top: `IPAMConfig.ipam.priority`).
   */
  object<F extends Fields>(goName: string, fields: F): Schema<ObjectOf<F>> & { fields: F } {
    const exact = new Map<string, string>();
    const folded = new Map<string, string>();
    for (const key of Object.keys(fields)) {
      exact.set(key, key);
      if (!folded.has(key.toLowerCase())) folded.set(key.toLowerCase(), key);
    }
    const structName = goName.slice(goName.lastIndexOf(".") + 1);
    return {
      goType: goName,
      fields,
      decode(value, ctx) {
        if (typeof value !== "object" || value === null || Array.isArray(value)) mismatch(value, ctx, goName);
        // Go names the innermost struct and the full field path: `Range.ipam.ranges.subnet`.
        const here = { struct: structName, path: ctx.path };
        const out: Record<string, unknown> = {};
        for (const [key, v] of Object.entries(value)) {
          const field = exact.get(key) ?? folded.get(key.toLowerCase());
          if (field === undefined) continue;
          if (v === null) {
            delete out[field];
            continue;
          }
          out[field] = fields[field]!.decode(v, child(here, field));
        }
        return out as ObjectOf<F>;
      },
    };
  },
  /** A value parsed from a JSON string by `parse` (IP, CIDR, MAC); `parse` throws to reject. */
  parsed<T>(goType: string, parse: (s: string, ctx: DecodeContext) => T): Schema<T> {
    return {
      goType,
      decode(value, ctx) {
        if (typeof value !== "string") mismatch(value, ctx, goType);
        return parse(value, ctx);
      },
    };
  },
};

/** Decodes a parsed JSON value with a top-level struct schema. */
export function decode<T>(schema: Schema<T>, value: unknown): T {
  const started = spanStart();
  const phase = phaseStart();
  try {
    return schema.decode(value, { struct: "", path: "" });
  } finally {
    phaseEnd("config", phase);
    spanEnd("decode", started);
  }
}

/** Looks a key up in a JSON object the way Go does: exact match first, then case-insensitively. */
export function getField(obj: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(obj, name)) return obj[name];
  const lower = name.toLowerCase();
  let found: unknown = undefined;
  for (const [k, v] of Object.entries(obj)) {
    if (k.toLowerCase() === lower) found = v;
  }
  return found;
}

/** True for a plain JSON object. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
