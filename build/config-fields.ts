/**
 * The configuration fields each plugin's config loader accepts, derived from the loaders themselves
 * (the `t.object` schemas of shared/cni/decode.ts), for the docs test (build/docs.test.ts): a field
 * the loader accepts must be on the plugin's page in docs/plugins/.
 *
 * `bun build/config-fields.ts` prints JSON: `{ "<plugin>": { "<path>": { kind, common } } }` with
 * paths like `ipam.ranges[][].subnet` (`[]` per array level) and kinds string, boolean, number,
 * array, object, any. `common` marks the fields of the base network configuration every plugin
 * shares (shared/cni/netconf.ts `netConfFields`), documented once in docs/plugins/README.md.
 *
 * How: before any plugin module is loaded, `t.object` is wrapped so that every object schema is
 * recorded with the file that created it and reports each decode call with its field path. A
 * plugin's schemas are those created under its directory (plugins/, ipam/ or meta/<name>/); the
 * roots among them are probed with sample JSON values. Which values a field accepts (a type
 * mismatch names the field) gives its kind; which object schema decodes a field gives its members,
 * through any wrapper a plugin puts around them. Runs in its own process because it must patch
 * decode.ts before the plugins load.
 */
import { statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { ConfigTypeError, t, type DecodeContext, type Schema } from "../shared/cni/decode.ts";

export type FieldKind = "string" | "boolean" | "number" | "array" | "object" | "any";
export interface FieldInfo {
  kind: FieldKind;
  common: boolean;
}
export type PluginFields = Record<string, Record<string, FieldInfo>>;

const ROOT = resolve(import.meta.dir, "..");
const PLUGIN_TOPS = ["plugins", "ipam", "meta"];

interface Recorded {
  schema: Schema<unknown> & { fields: Record<string, Schema<unknown>> };
  file: string;
}

const recorded: Recorded[] = [];
/** Decode calls seen during the current probe: which object schema ran at which path. */
let calls: { schema: Schema<unknown>; path: string }[] = [];

function creatorFile(): string {
  const frames = new Error().stack?.split("\n") ?? [];
  for (const frame of frames) {
    const m = /(\/[^\s():]+\.ts):\d+:\d+/.exec(frame);
    if (m && !m[1]!.endsWith("/shared/cni/decode.ts") && !m[1]!.endsWith("/build/config-fields.ts")) return relative(ROOT, m[1]!);
  }
  return "";
}

function instrument(): void {
  const original = t.object;
  (t as { object: typeof t.object }).object = ((goName: string, fields: Record<string, Schema<unknown>>) => {
    const schema = original(goName, fields);
    const decode = schema.decode;
    schema.decode = (value: unknown, ctx: DecodeContext) => {
      calls.push({ schema, path: ctx.path });
      return decode(value, ctx);
    };
    recorded.push({ schema, file: creatorFile() });
    return schema;
  }) as typeof t.object;
}

const SAMPLES: [FieldKind, unknown][] = [
  ["string", ""],
  ["number", 0],
  ["boolean", false],
  ["array", []],
  ["object", {}],
];

/** Decodes `value` with `root`; whether a type mismatch names `path`, and which objects ran there. */
function probe(root: Schema<unknown>, path: string, value: unknown): { mismatch: boolean; objects: Schema<unknown>[] } {
  calls = [];
  let mismatch = false;
  try {
    root.decode(value, { struct: "", path: "" });
  } catch (err) {
    if (err instanceof ConfigTypeError && err.field === path) mismatch = true;
  }
  const objects = calls.filter((c) => c.path === path).map((c) => c.schema);
  return { mismatch, objects };
}

function fieldsOf(schema: Schema<unknown>): Record<string, Schema<unknown>> | undefined {
  return recorded.find((r) => r.schema === schema)?.schema.fields;
}

interface Walk {
  root: Schema<unknown>;
  out: Record<string, FieldInfo>;
  /** Object schemas met below the root. */
  nested: Set<Schema<unknown>>;
  /** Whether a top-level member is one of the base fields every plugin shares. */
  isCommon: (name: string, schema: Schema<unknown>) => boolean;
}

/**
 * Adds the field at Go path `path` (`docPath` also marks array levels with `[]`) and its members.
 * `build` puts a sample at this position of a whole config for `w.root`.
 */
function walk(w: Walk, path: string, docPath: string, build: (v: unknown) => unknown, common: boolean): void {
  const accepted = SAMPLES.filter(([, v]) => !probe(w.root, path, build(v)).mismatch).map(([k]) => k);
  const kind: FieldKind =
    accepted.length === SAMPLES.length ? "any" : accepted.includes("object") ? "object" : accepted.includes("array") ? "array" : (accepted[0] ?? "any");
  if (docPath !== "" && !docPath.endsWith("[]")) w.out[docPath] = { kind, common };
  if (kind === "object") {
    const struct = path === "" ? w.root : probe(w.root, path, build({})).objects.find((o) => fieldsOf(o) !== undefined);
    if (struct === undefined) return; // a map: free keys
    if (path !== "") w.nested.add(struct);
    for (const [name, schema] of Object.entries(fieldsOf(struct)!)) {
      walk(
        w,
        path === "" ? name : `${path}.${name}`,
        docPath === "" ? name : `${docPath}.${name}`,
        (v) => build({ [name]: v }),
        path === "" ? w.isCommon(name, schema) : common,
      );
    }
  } else if (kind === "array") {
    const element = SAMPLES.filter(([, v]) => !probe(w.root, path, build([v])).mismatch).map(([k]) => k);
    if (element.length < SAMPLES.length && (element.includes("object") || element.includes("array"))) {
      walk(w, path, `${docPath}[]`, (v) => build([v]), common);
    }
  }
}

/** The plugin directory <top>/<name> of a registered plugin name. */
function pluginDir(name: string): string | undefined {
  const dirs = PLUGIN_TOPS.map((top) => join(top, name)).filter((d) => {
    try {
      return statSync(join(ROOT, d)).isDirectory();
    } catch {
      return false;
    }
  });
  return dirs.length === 1 ? dirs[0] : undefined;
}

export async function collect(): Promise<PluginFields> {
  instrument();
  const { PLUGINS, pluginNames } = await import("../registry/registry.ts");
  const { netConfFields } = await import("../shared/cni/netconf.ts");
  for (const name of pluginNames()) await PLUGINS[name]!.load();
  const base: Record<string, Schema<unknown>> = netConfFields;
  const isCommon = (name: string, schema: Schema<unknown>) => Object.hasOwn(base, name) && base[name] === schema;
  const result: PluginFields = {};
  for (const name of pluginNames()) {
    const dir = pluginDir(name);
    if (dir === undefined) throw new Error(`plugin ${name}: expected exactly one of ${PLUGIN_TOPS.map((t) => `${t}/${name}`).join(", ")}`);
    const walks = recorded
      .filter((r) => r.file.startsWith(`${dir}/`))
      .map((r): Walk => {
        const w: Walk = { root: r.schema, out: {}, nested: new Set(), isCommon };
        walk(w, "", "", (v) => v, false);
        return w;
      });
    const nested = new Set(walks.flatMap((w) => [...w.nested]));
    const out: Record<string, FieldInfo> = {};
    for (const w of walks.filter((x) => !nested.has(x.root))) Object.assign(out, w.out);
    result[name] = Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
  }
  return result;
}

if (import.meta.main) {
  process.stdout.write(`${JSON.stringify(await collect(), null, 2)}\n`);
}
