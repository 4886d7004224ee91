/**
 * JSON text exactly as Go's `encoding/json` writes it:
 * - `MarshalIndent(v, "", "    ")`: 4-space indentation, `"key": value`, empty arrays and objects
 *   as `[]` / `{}`, no trailing newline;
 * - HTML-safe escaping: `<`, `>`, `&` become `\u003c`, `\u003e`, `\u0026`; U+2028 and U+2029 become
 *   `\u2028` / `\u2029`; `\n`, `\r`, `\t`, `\b`, `\f` use their short escapes and other control
 *   characters `\u00XX`; a lone UTF-16 surrogate (which Go's decoder would already have replaced)
 *   is written as U+FFFD;
 * - numbers: integers in decimal, other values with the same exponent thresholds as Go (1e-6, 1e21).
 *
 * Objects keep their insertion order (Go struct order); use {@link sortKeysDeep} for Go maps, whose
 * keys are written sorted.
 */

const INDENT = "    ";

/** Go's escaping of one string, including the surrounding quotes. */
export function goJsonString(s: string): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc: string | undefined;
    if (c < 0x20) {
      esc = SHORT_ESCAPES[c] ?? `\\u00${c.toString(16).padStart(2, "0")}`;
    } else if (c === 0x22) {
      esc = '\\"';
    } else if (c === 0x5c) {
      esc = "\\\\";
    } else if (c === 0x3c) {
      esc = "\\u003c";
    } else if (c === 0x3e) {
      esc = "\\u003e";
    } else if (c === 0x26) {
      esc = "\\u0026";
    } else if (c === 0x2028 || c === 0x2029) {
      esc = `\\u${c.toString(16)}`;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      const next = s.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++; // a valid pair: copied as is
        continue;
      }
      esc = "\ufffd";
    }
    if (esc !== undefined) {
      out += s.slice(start, i) + esc;
      start = i + 1;
    }
  }
  return out + s.slice(start) + '"';
}

const SHORT_ESCAPES: Readonly<Record<number, string>> = {
  0x08: "\\b",
  0x09: "\\t",
  0x0a: "\\n",
  0x0c: "\\f",
  0x0d: "\\r",
};

/** Go's float64 formatting (`strconv.FormatFloat(f, 'f' or 'e', -1, 64)` with json's thresholds). */
export function goJsonNumber(n: number): string {
  if (!Number.isFinite(n)) throw new TypeError(`json: unsupported value: ${String(n)}`);
  if (Object.is(n, -0)) return "-0";
  // JS switches to exponent notation at the same magnitudes Go's encoder does, and both print
  // the shortest round-tripping digits with a one-digit exponent where possible ("1e-7", "1e+21").
  return String(n);
}

/** `json.Marshal`: compact text. `undefined` object members are omitted. */
export function goJsonMarshal(value: unknown): string {
  return write(value, undefined, "");
}

/** `json.MarshalIndent(value, "", "    ")`. */
export function goJsonMarshalIndent(value: unknown): string {
  return write(value, INDENT, "");
}

function write(value: unknown, indent: string | undefined, prefix: string): string {
  if (value === null || value === undefined) return "null";
  switch (typeof value) {
    case "string":
      return goJsonString(value);
    case "number":
      return goJsonNumber(value);
    case "bigint":
      return value.toString();
    case "boolean":
      return value ? "true" : "false";
    case "object":
      break;
    default:
      throw new TypeError(`json: unsupported type: ${typeof value}`);
  }
  const inner = indent === undefined ? "" : prefix + indent;
  const nl = indent === undefined ? "" : "\n";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    const items = value.map((v: unknown) => inner + write(v, indent, inner));
    return `[${nl}${items.join(`,${nl}`)}${nl}${indent === undefined ? "" : prefix}]`;
  }
  const members: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined) continue;
    members.push(`${inner}${goJsonString(k)}:${indent === undefined ? "" : " "}${write(v, indent, inner)}`);
  }
  if (members.length === 0) return "{}";
  return `{${nl}${members.join(`,${nl}`)}${nl}${indent === undefined ? "" : prefix}}`;
}

/** Go's map key order: byte-wise over the UTF-8 encoding. */
function compareGoKeys(a: string, b: string): number {
  if (a === b) return 0;
  const ea = utf8.encode(a);
  const eb = utf8.encode(b);
  const n = Math.min(ea.length, eb.length);
  for (let i = 0; i < n; i++) {
    if (ea[i] !== eb[i]) return ea[i]! - eb[i]!;
  }
  return ea.length - eb.length;
}

const utf8 = new TextEncoder();

/**
 * A deep copy whose objects have their keys sorted as Go writes a `map[string]interface{}`
 * (what upstream's 1.x `Result.MarshalJSON` round-trips through). `undefined` members are dropped.
 */
export function sortKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  entries.sort(([a], [b]) => compareGoKeys(a, b));
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) out[k] = sortKeysDeep(v);
  return out;
}
