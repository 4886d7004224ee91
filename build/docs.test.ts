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
 * - README.md links docs/, and every relative link (and #anchor) in README.md and docs/ resolves.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
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

/** Table rows whose first cell is a code span: path → type cell. */
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
