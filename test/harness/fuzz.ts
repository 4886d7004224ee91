/**
 * Seeded, deterministic mutations of a plugin's network configuration for the fault battery
 * (test/integration/fault-battery.test.ts): wrong JSON types, huge and negative numbers, deep
 * nesting, NUL bytes (escaped inside a string, or raw in the text), duplicate keys, truncated text
 * and a 10 MB stdin. Each case says which CNI error code a failure must carry, when that is fixed
 * by the input alone (`expectCode`; undefined: any valid code). Pure: the same seed gives the same
 * cases.
 */

/** mulberry32: a small seeded PRNG; returns floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Mutation = "type" | "number" | "nest" | "deep" | "nul" | "rawnul" | "dup" | "truncate" | "huge";

export interface FuzzCase {
  /** Short description for the test log: mutation and path. */
  label: string;
  mutation: Mutation;
  /** The stdin bytes. */
  stdin: Uint8Array;
  /** The CNI code a failure must have when the input alone decides it (6 for text that is not JSON). */
  expectCode: number | undefined;
}

/** Go's decoder (and ours) refuses nesting deeper than this. */
const MAX_JSON_DEPTH = 10_000;
const WRONG_TYPES: unknown[] = [true, 42, "x", [], {}, null, 0.5, [1, "a"], { a: { b: 1 } }];
const BAD_NUMBERS: unknown[] = [-1, 0, -2147483649, 4294967296, 9007199254740993, 1e308, -1e308, 1.5];
const MARKER = "\u0001fuzz\u0001";

/** Every path (list of keys / indexes) in `v`, the root excluded. */
function pathsOf(v: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [];
  if (Array.isArray(v)) {
    v.forEach((x, i) => out.push([...prefix, i], ...pathsOf(x, [...prefix, i])));
  } else if (typeof v === "object" && v !== null) {
    for (const [k, x] of Object.entries(v)) out.push([...prefix, k], ...pathsOf(x, [...prefix, k]));
  }
  return out;
}

function setAt(root: unknown, path: (string | number)[], value: unknown): unknown {
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  at[path[path.length - 1]!] = value;
  return copy;
}

function getAt(root: unknown, path: (string | number)[]): unknown {
  let at = root as Record<string | number, unknown>;
  for (const key of path) at = at[key] as Record<string | number, unknown>;
  return at;
}

const encode = (s: string): Uint8Array => new TextEncoder().encode(s);

/**
 * `count` cases for `base` from generator `rand`. Mutations are drawn from `mutations`, paths from
 * every key and element of `base`.
 */
export function fuzzConfigs(base: Record<string, unknown>, rand: () => number, count: number, mutations: readonly Mutation[]): FuzzCase[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const paths = pathsOf(base);
  const text = JSON.stringify(base);
  const cases: FuzzCase[] = [];
  for (let i = 0; i < count; i++) {
    const mutation = pick(mutations);
    const path = pick(paths);
    const where = path.join(".");
    switch (mutation) {
      case "type":
      case "number": {
        const value = pick(mutation === "type" ? WRONG_TYPES : BAD_NUMBERS);
        cases.push({ label: `${mutation} ${where}=${JSON.stringify(value)}`, mutation, stdin: encode(JSON.stringify(setAt(base, path, value))), expectCode: undefined });
        break;
      }
      case "nest":
      case "deep": {
        const depth = mutation === "nest" ? 1 + Math.floor(rand() * 500) : MAX_JSON_DEPTH + 1 + Math.floor(rand() * 10_000);
        const nested = `${"[".repeat(depth)}${"]".repeat(depth)}`;
        const withMarker = JSON.stringify(setAt(base, path, MARKER));
        cases.push({
          label: `${mutation} ${where} depth ${depth}`,
          mutation,
          stdin: encode(withMarker.replace(JSON.stringify(MARKER), nested)),
          expectCode: mutation === "deep" ? 6 : undefined,
        });
        break;
      }
      case "nul": {
        const strings = paths.filter((p) => typeof getAt(base, p) === "string");
        const at = strings.length > 0 ? pick(strings) : path;
        const old = String(getAt(base, at) ?? "");
        const cut = Math.floor(rand() * (old.length + 1));
        const value = `${old.slice(0, cut)}\u0000${old.slice(cut)}`;
        cases.push({ label: `nul in ${at.join(".")}`, mutation, stdin: encode(JSON.stringify(setAt(base, at, value))), expectCode: undefined });
        break;
      }
      case "rawnul":
      case "truncate": {
        const cut = Math.floor(rand() * (text.length - 1));
        const bad = mutation === "rawnul" ? `${text.slice(0, cut)}\u0000${text.slice(cut)}` : text.slice(0, cut);
        cases.push({ label: `${mutation} at ${cut}`, mutation, stdin: encode(bad), expectCode: 6 });
        break;
      }
      case "dup": {
        // A top-level key repeated with a wrong value, before (the good one wins) or after (the bad one wins).
        const key = pick(Object.keys(base));
        const bad = JSON.stringify(pick([...WRONG_TYPES, ...BAD_NUMBERS]));
        const inner = text.slice(1, -1);
        const dup = `${JSON.stringify(key)}:${bad}`;
        const body = rand() < 0.5 ? `{${dup},${inner}}` : `{${inner},${dup}}`;
        cases.push({ label: `dup ${key}=${bad}`, mutation, stdin: encode(body), expectCode: undefined });
        break;
      }
      case "huge": {
        const pad = "x".repeat(10 * 1024 * 1024);
        cases.push({ label: "10 MB stdin (unknown key)", mutation, stdin: encode(JSON.stringify({ ...base, fuzzPad: pad })), expectCode: undefined });
        break;
      }
    }
  }
  return cases;
}
