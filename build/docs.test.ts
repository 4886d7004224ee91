/**
 * The docs cannot drift from the code:
 * - every plugin in the registry has docs/plugins/<name>.md with the sections an operator needs, and
 *   no page documents a plugin that does not exist;
 * - every configuration field a plugin's config loader accepts (derived from the loaders by
 *   build/config-fields.ts, never listed here) is a row of the page's Configuration tables, with a
 *   type that matches what the loader accepts; the base fields every plugin shares are rows of
 *   docs/plugins/README.md's common table instead, which the page links to; and no row documents a
 *   field the loader does not accept;
 * - each page's example config uses only accepted fields and is valid JSON;
 * - each page's STATUS bullet names the code (50 or 51) of every STATUS check the plugin makes of
 *   its own — each check run in-process here — and no other, and says whether IPAM is asked;
 * - the per-call log page names the switches the code reads and the trace context it records;
 * - docs/install.md's tables of what each way of installing puts where are what `make install`,
 *   `make dist`, `make deb` and `cni-plugins install` really produce (file for file, every hard link
 *   by inode, contents against the build and deploy/systemd/), its sizes and glibc version are the
 *   build's, and every doc that names what a plugin name is a hard link to names the right file;
 * - README.md links docs/, and every relative link (and #anchor) in README.md and docs/ resolves.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { BINARY_NAME, SHIM_NAME, sameContent } from "../cli/install.ts";
import { TRACE_CONTEXT_ENV } from "../shared/cni/call-log.ts";
import { runPlugin } from "../shared/cni/skel.ts";
import { CALL_LOG_ENV, CALL_LOG_KEY } from "../shared/cni/call-log-switch.ts";
import { useFixtureCleanup } from "../test/harness/cleanup.ts";
import { makeTempDir } from "../test/harness/tempdir.ts";
import type { FieldInfo, FieldKind, PluginFields } from "./config-fields.ts";
import { lookupPlugin, pluginNames } from "../registry/registry.ts";
import { METRICS_PORT } from "../agent/flags.ts";
import { AgentMetrics } from "../agent/metrics.ts";
import { REFUSAL_REASONS } from "../agent/refusal.ts";
import { PHASES } from "../shared/telemetry/invocation.ts";
import { SCENARIOS } from "../test/bench/scenarios.ts";

const ROOT = resolve(import.meta.dir, "..");
const DOCS = join(ROOT, "docs");
const PLUGIN_DOCS = join(DOCS, "plugins");
const COMMON_ANCHOR = "README.md#common-fields";
const SECTIONS = ["## On the host and in the container", "## Configuration", "## CNI_ARGS and runtimeConfig", "## CHECK, DEL, GC and STATUS", "## Differences from upstream"];

/** Words a type cell may start with, per kind the loader accepts. */
const TYPE_WORDS: Record<FieldKind, string[]> = {
  string: ["string"],
  boolean: ["boolean"],
  number: ["integer", "number"],
  array: ["array"],
  object: ["object", "map"],
  any: ["any"],
};

function derivedFields(): PluginFields {
  const proc = Bun.spawnSync([process.execPath, join(import.meta.dir, "config-fields.ts")], { cwd: ROOT, stderr: "pipe" });
  if (proc.exitCode !== 0) throw new Error(`build/config-fields.ts failed: ${proc.stderr.toString()}`);
  return JSON.parse(proc.stdout.toString()) as PluginFields;
}

const fields = derivedFields();

/** The lines of the `## <title>` section (up to the next `## `). */
function section(text: string, title: string): string[] {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.trim() === title);
  if (start < 0) return [];
  const end = lines.findIndex((l, i) => i > start && l.startsWith("## "));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** Table rows whose first cell is a code span: that path → the second cell (a field's type, a file's description). */
function documentedRows(lines: string[]): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of lines) {
    const m = /^\|\s*`([^`]+)`\s*\|\s*([^|]*)\|/.exec(line);
    if (m) rows.set(m[1]!, m[2]!.trim());
  }
  return rows;
}

function typeProblems(rows: Map<string, string>, accepted: Record<string, FieldInfo>): string[] {
  const out: string[] = [];
  for (const [path, type] of rows) {
    const info = accepted[path];
    if (info === undefined) continue;
    const word = type.replace(/`/g, "").split(/[\s(,]/)[0]!.toLowerCase();
    if (!TYPE_WORDS[info.kind].includes(word)) out.push(`${path}: documented as "${type}", the loader accepts ${info.kind} (${TYPE_WORDS[info.kind].join(" or ")})`);
  }
  return out;
}

/** Dotted paths of an example object, following the accepted paths (maps and `any` are leaves). */
function examplePaths(value: Record<string, unknown>, accepted: Record<string, FieldInfo>, prefix = ""): string[] {
  const out: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    const path = prefix === "" ? key : `${prefix}.${key}`;
    out.push(path);
    const hasMembers = (p: string) => Object.keys(accepted).some((a) => a.startsWith(`${p}.`));
    if (Array.isArray(v)) {
      let p = `${path}[]`;
      let items: unknown[] = v;
      while (items.some(Array.isArray)) {
        items = items.flatMap((i) => (Array.isArray(i) ? i : []));
        p = `${p}[]`;
      }
      if (!hasMembers(p)) continue;
      for (const item of items) if (typeof item === "object" && item !== null) out.push(...examplePaths(item as Record<string, unknown>, accepted, p));
    } else if (typeof v === "object" && v !== null && hasMembers(path)) {
      out.push(...examplePaths(v as Record<string, unknown>, accepted, path));
    }
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The ```json blocks of a page, parsed. */
function jsonBlocks(text: string): unknown[] {
  return [...text.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!));
}

/** The plugin's own config objects in an example (a conflist entry, or the ipam section for IPAM plugins). */
function exampleConfigs(example: unknown, name: string, ipam: boolean): Record<string, unknown>[] {
  const entries = (typeof example === "object" && example !== null && Array.isArray((example as { plugins?: unknown }).plugins)
    ? (example as { plugins: Record<string, unknown>[] }).plugins
    : [example as Record<string, unknown>]);
  // the ipam section beyond its type belongs to the IPAM plugin's page
  if (!ipam) return entries.filter((e) => e.type === name).map((e) => (isObject(e.ipam) ? { ...e, ipam: { type: e.ipam.type } } : e));
  return entries.filter((e) => (e.ipam as { type?: unknown } | undefined)?.type === name).map((e) => ({ ipam: e.ipam }));
}

describe("docs/plugins", () => {
  test("one page per registered plugin, and no other page", () => {
    const pages = readdirSync(PLUGIN_DOCS).filter((f) => f.endsWith(".md") && f !== "README.md").map((f) => f.slice(0, -3));
    expect(pages.sort()).toEqual(pluginNames());
    expect(Object.keys(fields).sort()).toEqual(pluginNames());
  });

  for (const name of pluginNames()) {
    test(`${name}.md: sections, every accepted field with its type, only accepted fields, a valid example`, () => {
      const text = readFileSync(join(PLUGIN_DOCS, `${name}.md`), "utf8");
      const accepted = fields[name]!;
      const missingSections = SECTIONS.filter((s) => !text.split("\n").some((l) => l.trim() === s));
      expect(missingSections).toEqual([]);

      const rows = documentedRows(section(text, "## Configuration"));
      const own = Object.entries(accepted).filter(([, f]) => !f.common).map(([p]) => p);
      expect(own.filter((p) => !rows.has(p))).toEqual([]);
      expect([...rows.keys()].filter((p) => accepted[p] === undefined)).toEqual([]);
      expect(typeProblems(rows, accepted)).toEqual([]);
      if (Object.values(accepted).some((f) => f.common)) expect(text).toContain(`(${COMMON_ANCHOR})`);

      const isIpam = existsSync(join(ROOT, "ipam", name));
      const examples = jsonBlocks(section(text, "## Configuration").join("\n"));
      const configs = examples.flatMap((e) => exampleConfigs(e, name, isIpam));
      expect(configs.length).toBeGreaterThan(0);
      // (a loader that decodes no field at all, like loopback's, has nothing to compare against)
      if (Object.keys(accepted).length > 0) {
        expect(configs.flatMap((c) => examplePaths(c, accepted)).filter((p) => accepted[p] === undefined)).toEqual([]);
      }
    });
  }

  test("README.md: the common fields, documented once, with their types", () => {
    const text = readFileSync(join(PLUGIN_DOCS, "README.md"), "utf8");
    expect(text).toContain("## Common fields");
    const rows = documentedRows(section(text, "## Common fields"));
    const common: Record<string, FieldInfo> = {};
    for (const plugin of Object.values(fields)) for (const [p, f] of Object.entries(plugin)) if (f.common) common[p] = f;
    expect(Object.keys(common).length).toBeGreaterThan(0);
    expect(Object.keys(common).filter((p) => !rows.has(p))).toEqual([]);
    expect([...rows.keys()].filter((p) => common[p] === undefined)).toEqual([]);
    expect(typeProblems(rows, common)).toEqual([]);
    for (const name of pluginNames()) expect(text).toContain(`](${name}.md)`);
  });
});

/** One way a plugin's own STATUS check fails, run in-process, and the code it must give. */
interface StatusFailure {
  why: string;
  /** The plugin's fields (besides cniVersion, name, type); `dir` is a fresh directory. */
  config: (dir: string, network: string) => Record<string, unknown>;
  code: 50 | 51;
}

/**
 * Every check a plugin's STATUS makes of its own (SPEC.md "STATUS": 50 not available, 51 also
 * existing containers affected). A plugin not listed has none: its page says it is always
 * available, or only that IPAM's answer is passed on.
 */
const STATUS_FAILURES: Record<string, StatusFailure[]> = {
  "host-local": [
    {
      why: "no free address",
      config: (dir, network) => {
        // 10.99.0.0/30 with the gateway .1 has one address, .2: reserved
        mkdirSync(join(dir, network));
        writeFileSync(join(dir, network, "10.99.0.2"), "other\r\neth0");
        return { ipam: { type: "host-local", dataDir: dir, ranges: [[{ subnet: "10.99.0.0/30" }]] } };
      },
      code: 50,
    },
  ],
  dhcp: [{ why: "the daemon is gone", config: (dir) => ({ ipam: { type: "dhcp", daemonSocketPath: join(dir, "none.sock") } }), code: 51 }],
  "cluster-local": [
    {
      why: "etcd cannot be reached",
      config: () => ({ ipam: { type: "cluster-local", subnet: "10.99.0.0/24", etcd: { endpoints: ["http://127.0.0.1:1"], timeout: "300ms", node: "docs" } } }),
      code: 50,
    },
  ],
  bridge: [{ why: "the bridge name is a link that is not a bridge", config: () => ({ bridge: "lo" }), code: 51 }],
  macvlan: [{ why: "the master is missing", config: () => ({ master: "nosuchmaster0" }), code: 51 }],
  ipvlan: [{ why: "the master is missing", config: () => ({ master: "nosuchmaster0" }), code: 51 }],
  vlan: [{ why: "the master is missing", config: () => ({ master: "nosuchmaster0", vlanId: 7 }), code: 51 }],
};

/** Fields that let a plugin's own STATUS checks pass, so that only IPAM is left to ask. */
const STATUS_PASSING: Record<string, Record<string, unknown>> = {
  bridge: { bridge: "cnidocs0" },
  macvlan: { master: "lo" },
  ipvlan: { master: "lo" },
  vlan: { master: "lo", vlanId: 7 },
  "host-device": { device: "cnidocs0" },
};

/** STATUS of `name` in-process (no IPAM plugin can be found: CNI_PATH is empty of them); the error JSON, or undefined on success. */
async function statusOf(name: string, fields: Record<string, unknown>): Promise<{ code: number; msg: string } | undefined> {
  const spec = await lookupPlugin(name)!;
  const config = { cniVersion: "1.1.0", name: "docsnet", type: name, ...fields };
  let stdout = "";
  const status = await runPlugin(spec, {
    env: { CNI_COMMAND: "STATUS", CNI_PATH: join(makeTempDir("cni-docs-bin-"), "none") },
    readStdin: () => new TextEncoder().encode(JSON.stringify(config)),
    stdout: (t) => (stdout += t),
    stderr: () => {},
  });
  return status === 0 ? undefined : (JSON.parse(stdout) as { code: number; msg: string });
}

/** The `**STATUS:**` bullet of a page, as one line. */
function statusBullet(text: string): string {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.startsWith("- **STATUS:**"));
  if (start < 0) return "";
  let end = start + 1;
  while (end < lines.length && lines[end]!.startsWith("  ")) end++;
  return lines.slice(start, end).map((l) => l.trim()).join(" ");
}

describe("docs/plugins: STATUS", () => {
  useFixtureCleanup();

  for (const name of pluginNames()) {
    test(`${name}.md names the code of each STATUS check the plugin makes, and whether IPAM is asked`, async () => {
      const bullet = statusBullet(readFileSync(join(PLUGIN_DOCS, `${name}.md`), "utf8"));
      expect(bullet).not.toBe("");
      const failures = STATUS_FAILURES[name] ?? [];
      for (const f of failures) {
        const got = await statusOf(name, f.config(makeTempDir("cni-docs-status-"), "docsnet"));
        expect({ why: f.why, code: got?.code }).toEqual({ why: f.why, code: f.code });
      }
      const documented = [...new Set([...bullet.matchAll(/\bcode (5[01])\b/g)].map((m) => Number(m[1])))].sort();
      expect(documented).toEqual([...new Set(failures.map((f) => f.code))].sort());
      if (failures.length === 0 && !bullet.includes("IPAM")) expect(bullet).toContain("always available");
      const withIpam = await statusOf(name, { ...STATUS_PASSING[name], ipam: { type: "nosuchipam" } });
      const asksIpam = withIpam?.msg.includes('failed to find plugin "nosuchipam"') ?? false;
      expect({ asksIpam, documented: bullet.toLowerCase().includes("passed on to the ipam plugin") }).toEqual({ asksIpam, documented: asksIpam });
    });
  }
});

describe("docs/call-log.md", () => {
  test("names the environment variable and the config key the code reads", () => {
    const text = readFileSync(join(DOCS, "call-log.md"), "utf8");
    expect(text).toContain(`\`${CALL_LOG_ENV}\``);
    expect(text).toContain(`\`${CALL_LOG_KEY}\``);
  });

  test("names every trace context variable the log records, and its key", () => {
    const text = readFileSync(join(DOCS, "call-log.md"), "utf8");
    for (const [variable, key] of Object.entries(TRACE_CONTEXT_ENV)) {
      expect(text).toContain(`\`${variable}\``);
      expect(text).toContain(`\`${key}\``);
    }
  });
});

describe("docs/observability.md", () => {
  const text = readFileSync(join(DOCS, "observability.md"), "utf8");
  /** The rows of the table whose first cell is a code span, by that cell. */
  const rows = (header: string) => {
    const lines = section(text, header).filter((l) => /^\| `/.test(l));
    return new Map(lines.map((l) => [/^\| `([^`]+)`/.exec(l)![1]!, l.split("|").map((c) => c.trim())]));
  };

  test("a row for every metric the agent exposes, with its type and labels, and no other", () => {
    const exposed = new AgentMetrics(() => ({ inFlight: 0, threads: 0 }), 0).expose("prometheus");
    const families = new Map([...exposed.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    // (The section's subsection, the refusal reasons, has rows of its own.)
    const documented = new Map([...rows("## Metrics")].filter(([name]) => name.startsWith("cni_")));
    expect([...documented.keys()].sort()).toEqual([...families.keys()].sort());
    for (const [name, type] of families) expect(documented.get(name)![2], name).toBe(type);
    // Labels, as the samples show them once recorded.
    const m = new AgentMetrics(() => ({ inFlight: 0, threads: 0 }), 0);
    m.call({ plugin: "bridge", command: "ADD", code: 0, durationS: 0.01, phases: [["link", 0.001]], ipam: [{ plugin: "host-local", network: "n", range: "10.0.0.0/24", used: 1, free: 252 }] });
    m.standaloneReport("accepted");
    m.spansDropped(1, "timeout");
    const dhcp = m.dhcpEvents();
    dhcp.renewal(true);
    dhcp.failure("acquire");
    for (const line of m.expose("prometheus").split("\n")) {
      const sample = /^([a-z_]+?)(?:_bucket|_sum|_count)?\{([^}]*)\}/.exec(line);
      if (sample === null) continue;
      const labels = [...sample[2]!.matchAll(/(\w+)="/g)].map((l) => l[1]!).filter((l) => l !== "le");
      const row = documented.get(sample[1]!) ?? documented.get(sample[1]!.replace(/_(bucket|sum|count)$/, ""));
      expect(row?.[3]?.split(/,\s*/).filter((l) => l !== ""), line).toEqual(labels);
    }
  });

  test("every phase and every refusal reason has its row; the port is the flag's", () => {
    expect([...rows("## Phases").keys()]).toEqual([...PHASES]);
    expect([...rows("### Refusal reasons").keys()]).toEqual([...REFUSAL_REASONS]);
    expect(text).toContain(`**Port ${METRICS_PORT}**`);
  });
});

/** Runs a command in the checkout; its stdout, or an error with its output. */
function runInCheckout(argv: string[]): string {
  const proc = Bun.spawnSync(argv, { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) throw new Error(`${argv.join(" ")} exited ${proc.exitCode}: ${proc.stdout.toString()}${proc.stderr.toString()}`);
  return proc.stdout.toString();
}

function make(...args: string[]): string {
  return runInCheckout(["make", "--no-print-directory", ...args]);
}

/** The tables of a section's lines, each as its body rows (header and separator dropped). */
function tables(lines: string[]): string[][] {
  const out: string[][] = [];
  let current: string[] | undefined;
  for (const line of lines) {
    if (!line.startsWith("|")) {
      current = undefined;
      continue;
    }
    if (current === undefined) out.push((current = []));
    current.push(line);
  }
  return out.map((t) => t.slice(2));
}

/** A row of a table of files: a path (`<plugin>` and `<unit>` stand for each plugin and unit) and what the page says it is. */
interface FileRow {
  path: string;
  what: string;
}

function fileRows(rows: string[]): FileRow[] {
  return [...documentedRows(rows)].map(([path, what]) => ({ path, what }));
}

/** The one table of files in `## <title>` of docs/install.md. */
function installTable(title: string): FileRow[] {
  const found = tables(section(readFileSync(join(DOCS, "install.md"), "utf8"), title));
  expect(found.length).toBe(1);
  return fileRows(found[0]!);
}

/** The page's two tables of `## What is installed`: the plugin directory's names, and the systemd units. */
function whatIsInstalled(): { names: FileRow[]; units: FileRow[] } {
  const found = tables(section(readFileSync(join(DOCS, "install.md"), "utf8"), "## What is installed"));
  expect(found.length).toBe(2);
  return { names: fileRows(found[0]!), units: fileRows(found[1]!) };
}

/** Every path a row stands for. */
function expandRow(row: FileRow, units: readonly string[]): string[] {
  if (row.path.includes("<plugin>")) return pluginNames().map((n) => row.path.replace("<plugin>", n));
  if (row.path.includes("<unit>")) return units.map((u) => row.path.replace("<unit>", u));
  return [row.path];
}

/** Every file (anything but a directory) under `root`, as paths relative to it. */
function filesUnder(root: string, prefix = ""): string[] {
  return readdirSync(join(root, prefix)).flatMap((name) => {
    const rel = prefix === "" ? name : `${prefix}/${name}`;
    return lstatSync(join(root, rel)).isDirectory() ? filesUnder(root, rel) : [rel];
  });
}

const BUILT = join(ROOT, "dist", "bin");
const SYSTEMD_SOURCES = join(ROOT, "deploy", "systemd");

/**
 * What differs between a table of files and the tree `root` a way of installing produced: files
 * the table does not list or lists but are missing; a name said to be a hard link to a file that
 * does not share its inode, or a file whose link count is not what the table says; the executable
 * or the shim not the build's bytes; a unit not deploy/systemd/'s with its paths in the directory
 * the row names.
 */
function treeProblems(root: string, rows: FileRow[], units: readonly string[]): string[] {
  const problems: string[] = [];
  const documented = new Map<string, { row: FileRow; target: string }>();
  for (const row of rows) {
    const link = /hard link to `([^`]+)`/.exec(row.what)?.[1];
    for (const path of expandRow(row, units)) {
      const rel = path.replace(/^\//, "");
      documented.set(rel, { row, target: link === undefined ? rel : join(dirname(rel), link) });
    }
  }
  const found = filesUnder(root).sort();
  for (const rel of found) if (!documented.has(rel)) problems.push(`${rel}: installed, not in the table`);
  const groups = new Map<string, number>();
  for (const { target } of documented.values()) groups.set(target, (groups.get(target) ?? 0) + 1);
  for (const [rel, { row, target }] of documented) {
    const file = join(root, rel);
    if (!existsSync(file)) {
      problems.push(`${rel}: in the table, not installed`);
      continue;
    }
    const st = lstatSync(file);
    if (!existsSync(join(root, target)) || st.ino !== lstatSync(join(root, target)).ino) problems.push(`${rel}: not a hard link to ${target}`);
    if (st.nlink !== groups.get(target)) problems.push(`${rel}: ${st.nlink} names share its inode, the table says ${groups.get(target)}`);
    const name = basename(rel);
    if ((name === BINARY_NAME || name === SHIM_NAME) && !sameContent(file, join(BUILT, name))) problems.push(`${rel}: not the build's ${name}`);
    if (row.path.includes("<unit>")) {
      const dir = /its paths in `([^`]+)`/.exec(row.what)?.[1];
      const expected = readFileSync(join(SYSTEMD_SOURCES, name), "utf8").replaceAll("/opt/cni/bin/", `${dir}/`);
      if (dir === undefined || readFileSync(file, "utf8") !== expected) problems.push(`${rel}: not deploy/systemd/${name} with its paths in ${dir}`);
    }
  }
  return problems;
}

/** The newest GLIBC_x.y symbol version an ELF file needs. */
function newestGlibc(file: string): string {
  const versions = [...runInCheckout(["readelf", "--version-info", "--wide", file]).matchAll(/Name: GLIBC_(\d+(?:\.\d+)+)/g)].map((m) => m[1]!);
  expect(versions.length).toBeGreaterThan(0);
  const key = (v: string) => v.split(".").map(Number);
  return versions.sort((a, b) => {
    const [ka, kb] = [key(a), key(b)];
    for (let i = 0; i < Math.max(ka.length, kb.length); i++) if ((ka[i] ?? 0) !== (kb[i] ?? 0)) return (ka[i] ?? 0) - (kb[i] ?? 0);
    return 0;
  }).at(-1)!;
}

/** The glibc versions the table of `## Requirements` names ("glibc 2.17 or later"). */
function documentedGlibc(): string[] {
  const text = tables(section(readFileSync(join(DOCS, "install.md"), "utf8"), "## Requirements")).flat().join("\n");
  return [...text.matchAll(/glibc (\d+(?:\.\d+)+) or later/g)].map((m) => m[1]!);
}

/** The command `## What is installed` gives for turning the resident agent on (its one code block). */
function enableCommand(): string {
  const blocks = [...section(readFileSync(join(DOCS, "install.md"), "utf8"), "## What is installed").join("\n").matchAll(/```\n([\s\S]*?)\n```/g)];
  expect(blocks.length).toBe(1);
  return blocks[0]![1]!;
}

/**
 * `make <target>` into a temporary RELEASE_DIR: its one artifact (the file ending in `suffix`) and
 * a directory it was extracted into by the command `extract(artifact, tree)` gives.
 */
function madeRelease(target: string, suffix: string, extract: (artifact: string, tree: string) => string[]): { artifact: string; tree: string } {
  const release = makeTempDir(`cni-docs-${target}-`);
  make(target, `RELEASE_DIR=${release}`);
  const made = readdirSync(release).filter((f) => f.endsWith(suffix));
  expect(made.length).toBe(1);
  const artifact = join(release, made[0]!);
  const tree = makeTempDir(`cni-docs-${target}-tree-`);
  runInCheckout(extract(artifact, tree));
  return { artifact, tree };
}

/** Builds (or finds up to date) dist/bin; the unit names the page's unit table lists. */
function buildAndUnits(): string[] {
  make("build");
  return whatIsInstalled().units.map((u) => u.path);
}

describe("docs/performance.md", () => {
  const text = readFileSync(join(DOCS, "performance.md"), "utf8");

  test("every scenario of `make bench` has a row in the table of scenarios, and every row names a scenario", () => {
    const [table] = tables(section(text, "## Measuring: `make bench`"));
    expect(table).toBeDefined();
    const documented = table!.flatMap((row) => [...row.split("|")[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
    expect(documented.filter((name) => !(name in SCENARIOS))).toEqual([]);
    expect(Object.keys(SCENARIOS).filter((name) => !documented.includes(name))).toEqual([]);
  });

  test("every chart the bench draws into docs/bench/ is shown on the page (the links test checks that each shown one exists)", () => {
    const charts = readdirSync(join(DOCS, "bench")).filter((f) => f.endsWith(".svg"));
    expect(charts.length).toBeGreaterThanOrEqual(3);
    const shown = [...text.matchAll(/!\[[^\]]+\]\(bench\/([^)]+\.svg)\)/g)].map((m) => m[1]!);
    expect(charts.filter((c) => !shown.includes(c))).toEqual([]);
  });
});

describe("docs/install.md", () => {
  useFixtureCleanup();
  const TIMEOUT_MS = 600_000;

  test("What is installed: the plugin directory make build fills, the sizes, every plugin, the units of deploy/systemd/", () => {
    const units = buildAndUnits();
    const { names } = whatIsInstalled();
    expect(treeProblems(BUILT, names, units)).toEqual([]);
    // "about N MB" within a fifth either way; "under N MB" strictly
    const sizes: string[] = [];
    for (const row of names) {
      const size = statSync(join(BUILT, expandRow(row, units)[0]!)).size / 1e6;
      const about = Number(/about (\d+) MB/.exec(row.what)?.[1] ?? NaN);
      if (Math.abs(size - about) > about * 0.2) sizes.push(`${row.path}: ${size.toFixed(1)} MB, the page says about ${about} MB`);
      const under = Number(/under (\d+) MB/.exec(row.what)?.[1] ?? NaN);
      if (size >= under) sizes.push(`${row.path}: ${size.toFixed(1)} MB, the page says under ${under} MB`);
    }
    expect(sizes).toEqual([]);
    const plugins = names.find((r) => r.path === "<plugin>");
    expect([...plugins!.what.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((n) => n !== SHIM_NAME)).toEqual(pluginNames());
    expect([...units].sort()).toEqual(readdirSync(SYSTEMD_SOURCES).filter((f) => /\.(service|socket)$/.test(f)).sort());
  }, TIMEOUT_MS);

  test("From the checkout: make install DESTDIR=... installs exactly its table", () => {
    const units = buildAndUnits();
    const stage = makeTempDir("cni-docs-install-");
    make("install", `DESTDIR=${stage}`);
    expect(treeProblems(stage, installTable("## From the checkout"), units)).toEqual([]);
  }, TIMEOUT_MS);

  test("Release tarball: make dist's archive, extracted, is exactly its table; its README says how to turn the agent on", () => {
    const units = buildAndUnits();
    const { tree } = madeRelease("dist", ".tgz", (archive, into) => ["tar", "-C", into, "-xzf", archive]);
    expect(treeProblems(tree, installTable("## Release tarball"), units)).toEqual([]);
    expect(readFileSync(join(tree, "README.md"), "utf8")).toContain(enableCommand());
  }, TIMEOUT_MS);

  test("Debian package: make deb's package, extracted, is exactly its table; it depends on the glibc named", () => {
    const units = buildAndUnits();
    const { artifact, tree } = madeRelease("deb", ".deb", (pkg, into) => ["dpkg-deb", "-x", pkg, into]);
    expect(treeProblems(tree, installTable("## Debian package"), units)).toEqual([]);
    const depends = runInCheckout(["dpkg-deb", "-f", artifact, "Depends"]);
    for (const version of documentedGlibc()) expect(depends).toContain(`libc6 (>= ${version})`);
  }, TIMEOUT_MS);

  test("Kubernetes DaemonSet: cni-plugins install --dest writes exactly its table", () => {
    const units = buildAndUnits();
    const dest = join(makeTempDir("cni-docs-installer-"), "bin");
    runInCheckout([join(BUILT, BINARY_NAME), "install", "--dest", dest]);
    expect(treeProblems(dest, installTable("## Kubernetes DaemonSet"), units)).toEqual([]);
  }, TIMEOUT_MS);

  test("Requirements: the glibc named is the newest version the executable needs", () => {
    make("build");
    const documented = documentedGlibc();
    expect(documented.length).toBeGreaterThan(0);
    expect([...new Set(documented)]).toEqual([newestGlibc(join(BUILT, BINARY_NAME))]);
  }, TIMEOUT_MS);

  test("every doc that says what the plugin names are hard links to names the file make build links them to", () => {
    make("build");
    const inode = (name: string) => statSync(join(BUILT, name)).ino;
    const linkedTo = [BINARY_NAME, SHIM_NAME].filter((n) => pluginNames().every((p) => inode(p) === inode(n)));
    expect(linkedTo.length).toBe(1);
    const wrong: string[] = [];
    for (const file of [join(ROOT, "README.md"), join(ROOT, "deploy", "README.dist.md"), ...markdownFiles(DOCS)]) {
      const text = readFileSync(file, "utf8").replace(/\s+/g, " ");
      for (const m of text.matchAll(/hard links? to `([^`]+)`/g)) {
        if (basename(m[1]!) !== linkedTo[0]) wrong.push(`${relative(ROOT, file)}: "${m[0]}"`);
      }
    }
    expect(wrong).toEqual([]);
  }, TIMEOUT_MS);
});

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
function anchorsOf(markdown: string): Set<string> {
  const out = new Set<string>();
  let inCode = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) inCode = !inCode;
    const m = !inCode && /^#{1,6}\s+(.*)$/.exec(line);
    if (m) out.add(m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-"));
  }
  return out;
}

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? markdownFiles(p) : f.endsWith(".md") ? [p] : [];
  });
}

describe("links", () => {
  test("README.md links docs/ and the install guide", () => {
    const text = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(text).toContain("](docs/README.md)");
    expect(text).toContain("](docs/install.md)");
  });

  test("every relative link and anchor in README.md and docs/ resolves", () => {
    const broken: string[] = [];
    for (const file of [join(ROOT, "README.md"), ...markdownFiles(DOCS)]) {
      const text = readFileSync(file, "utf8").replace(/```[\s\S]*?```/g, "");
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const href = m[1]!;
        if (/^[a-z]+:/.test(href)) continue; // https:, mailto:
        const [path, anchor] = href.split("#") as [string, string | undefined];
        const target = path === "" ? file : resolve(dirname(file), path);
        const where = `${relative(ROOT, file)}: ${href}`;
        if (!target.startsWith(ROOT) || !existsSync(target)) broken.push(`${where} (no such file)`);
        else if (anchor !== undefined && !anchorsOf(readFileSync(target, "utf8")).has(anchor)) broken.push(`${where} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe("architecture recipes", () => {
  /** The file paths the recipes of docs/architecture.md name (backticked, with an extension). */
  function recipePaths(): string[] {
    const text = readFileSync(join(DOCS, "architecture.md"), "utf8");
    const start = text.indexOf("\n## Recipes\n");
    expect(start).toBeGreaterThan(0);
    const end = text.indexOf("\n## ", start + 1);
    const section = text.slice(start, end === -1 ? undefined : end);
    return [...section.matchAll(/`([\w.<>/-]+\.(?:ts|md|sh|json|c))`/g)].map((m) => m[1]!);
  }

  /** What a recipe's placeholders stand for: a plugin of the registry, a firewall backend. */
  const PLACEHOLDERS: Record<string, () => readonly string[]> = { "<name>": pluginNames, "<backend>": () => ["iptables", "nftables"] };

  test("every file a recipe names exists (a pattern: for at least one plugin or backend it stands for)", () => {
    const paths = recipePaths();
    expect(paths.length).toBeGreaterThanOrEqual(20);
    const expand = (p: string): string[] => {
      const hole = Object.keys(PLACEHOLDERS).find((h) => p.includes(h));
      return hole === undefined ? [p] : PLACEHOLDERS[hole]!().flatMap((v) => expand(p.replaceAll(hole, v)));
    };
    const missing = paths.filter((p) => !expand(p).some((c) => existsSync(join(ROOT, c))));
    expect(missing).toEqual([]);
  });
});
