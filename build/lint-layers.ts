/**
 * Layering rules, checked by `make lint` after `tsc --noEmit`:
 * - plugins/, ipam/, meta/ import only shared/ or their own folder;
 * - shared/ imports nothing from plugins/, ipam/, meta/ or build/;
 * - inside shared/, a module imports only modules of a lower rank (SHARED_RANK below; tests exempt),
 *   so the layers read bottom-up: error → ip, sys, undo → netns, dbus → netlink, sysctl → cni → firewall,
 *   ipam → iface, node-state;
 * - only shared/sys imports bun:ffi;
 * - only shared/cni/invoke.ts and shared/firewall/exec.ts spawn processes (test/ and build/ exempt);
 * - no static import of node:fs, node:path or node:child_process in what a plugin process loads
 *   (plugin code, and ON_EVERY_CALL of cli/; each costs a plugin process milliseconds and megabytes
 *   at load, docs/performance.md): files go through shared/sys/file.ts (STATIC_NODE_IMPORT_OK lists
 *   the exceptions);
 * - no async/await in shared/netns, shared/netlink, shared/sysctl;
 * - plugin code (plugins/, ipam/, meta/, registry/, and shared/ but for shared/sys/phases.ts, a per-process
 *   profiling switch) never reads process.env, process.stdout or process.stdin, nor writes to file
 *   descriptor 2 or the console: an invocation's environment and stderr come in CmdArgs, because
 *   the resident agent serves many invocations in one process (the dhcp daemon is exempt: it is a
 *   process of its own or a part of the agent, never an invocation; cli/, agent/ and operator/ own
 *   their process, PROCESS_OWNERS);
 * - the folders above the plugins import downwards only (UPPER_FOLDERS): cli → agent, operator →
 *   registry → plugins/, ipam/, meta/ → shared/;
 * - each shared package declares its public face in its index.ts: from outside the package a file
 *   imports only modules the index re-exports from, and only the names it re-exports; every other
 *   file of the package is private to it (tests exempt). The public module is imported itself, never
 *   the index: through a barrel, a call would load the whole package (measured: a standalone
 *   loopback ADD 6-7 ms slower);
 * - test support modules (`testing.ts`) are imported only by tests;
 * - no file imports itself through others (no import cycle), and no import chain is longer than
 *   MAX_IMPORT_CHAIN files (tests exempt for both): counted over every kind of
 *   import (static, dynamic, `require`, type-only), from any file of the folders above down to a
 *   file that imports nothing of the tree. A deep chain is a house whose floors each know the one
 *   below only through the next; the way down is a type in a leaf module (shared/cni/types.ts,
 *   shared/cni/result/wire.ts), a dependency passed in instead of imported (the registry's plugins
 *   into agent/ and operator/), or a module split by what its importers need.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");

/**
 * The order of shared/'s modules: each may import only modules of a strictly lower rank.
 * error: the annotate helper; ip: pure address math; sys: libc; undo: teardown steps and ADD's
 * rollback over them (generic: the firewall layer uses them without the CNI protocol engine); netns;
 * metrics: counters, gauges and histograms in the Prometheus formats (pure; the agent serves them);
 * telemetry: what a call records of itself (phases, spans, IPAM usage) and the OTLP exporter;
 * dbus: the system bus (where it is, firewalld's names; the client loaded only when a bus is used);
 * netlink and sysctl: the kernel; cni: the protocol (config, results, errors → codes, delegation,
 * the IPAM teardown step); firewall: iptables/nftables; ipam: what the allocating IPAM plugins
 * share (ranges, candidates, their config and result); iface: configuring interfaces for plugins
 * (kernel + CNI results); node-state: what a plugin owns on the node beyond a call, as the registry
 * describes it (for the operator).
 */
const SHARED_RANK: Readonly<Record<string, number>> = {
  error: 0,
  metrics: 0,
  telemetry: 0,
  ip: 1,
  sys: 1,
  dbus: 2,
  undo: 1,
  netns: 2,
  netlink: 3,
  sysctl: 3,
  cni: 4,
  firewall: 5,
  ipam: 5,
  iface: 6,
  "node-state": 6,
};
/**
 * The folders above the plugins, top down, and what each may import besides itself: cli (the
 * executable's entry and commands) → agent, operator → registry (the plugins this build contains,
 * and how a call runs one) → the plugins → shared. Nothing imports cli; nothing below the registry
 * imports it.
 */
const UPPER_FOLDERS: Readonly<Record<string, readonly string[]>> = {
  cli: ["agent", "operator", "registry", "shared"],
  agent: ["registry", "shared"],
  operator: ["registry", "shared"],
  registry: ["plugins", "ipam", "meta", "shared"],
};
const problems: string[] = [];

/** The longest import chain allowed, in files (see the header). */
const MAX_IMPORT_CHAIN = 15;
/** Every non-test file's imports of the tree, for the chain rule. */
const importGraph = new Map<string, string[]>();

/** Node modules that plugin processes load only on demand (`require` inside the function that needs it). */
const LAZY_NODE_MODULES = /^node:(fs|path|child_process)$/;
/** Files allowed a static import of them: not loaded on a plugin call, or not converted yet. */
const STATIC_NODE_IMPORT_OK = [
  /^shared\/cni\/call-log\.ts$/, // required by skel only when call logging is configured
  /\/testdata\//, // test fixtures
  /^ipam\/dhcp\/daemon\//, // the long-running DHCP daemon
  /^ipam\/dhcp\/dhcp\.ts$/, // not converted yet
  /^plugins\/host-device\/sysfs\.ts$/, // not converted yet
];

/** The shared package a file belongs to (`shared/<package>`), or undefined outside shared/. */
function packageOf(rel: string): string | undefined {
  return rel.startsWith("shared/") ? rel.split("/").slice(0, 2).join("/") : undefined;
}

interface PublicFace {
  /** Each public module: "all" when the index re-exports all of it (`export *`). */
  modules: Map<string, Set<string> | "all">;
  /** Every name the index re-exports. */
  names: Set<string>;
}
const faceCache = new Map<string, PublicFace>();
/**
 * A package's public face, from its index.ts: the modules it re-exports from and the names it
 * re-exports; every other file of the package is private.
 */
function publicFace(pkg: string): PublicFace {
  let face = faceCache.get(pkg);
  if (face === undefined) {
    face = { modules: new Map(), names: new Set() };
    let text = "";
    try {
      text = readFileSync(join(root, pkg, "index.ts"), "utf8");
    } catch {
      // no index.ts: nothing is public
    }
    for (const m of text.matchAll(/^export\s+(type\s+)?(\*(?:\s+as\s+\w+)?|\{[^}]*\})\s*from\s*"(\.[^"]+)"/gm)) {
      const file = relative(root, resolve(join(root, pkg), m[3]!));
      const known = face.modules.get(file);
      if (m[2]!.startsWith("*") || known === "all") {
        face.modules.set(file, "all");
        continue;
      }
      const names = known ?? new Set<string>();
      for (const item of m[2]!.slice(1, -1).split(",")) {
        const name = item.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0]!;
        if (name !== "") {
          names.add(name);
          face.names.add(name);
        }
      }
      face.modules.set(file, names);
    }
    faceCache.set(pkg, face);
  }
  return face;
}

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

const IMPORT = /(?:import|export)\s[^"']*?from\s*["']([^"']+)["']|require\(\s*["']([^"']+)["']\s*\)|import\(\s*["']([^"']+)["']\s*\)/g;

/** The folders whose code owns its process (or thread): it may read process.env and write to fd 2. */
const PROCESS_OWNERS = ["cli", "agent", "operator"];
/** Files of those folders that every plugin process loads (the node-module rule applies to them). */
const ON_EVERY_CALL = ["cli/entry.ts", "cli/dispatch.ts"];
/** Plugin code that may use process.env or fd 2 itself (see the header). */
const OWN_PROCESS = [/^shared\/sys\/phases\.ts$/, /^ipam\/dhcp\/daemon\//];

for (const top of ["plugins", "ipam", "meta", "shared", "agent", "registry", "cli", "operator"]) {
  let files: string[] = [];
  try {
    files = walk(join(root, top));
  } catch {
    continue;
  }
  for (const file of files) {
    const rel = relative(root, file);
    // Test support modules (`testing.ts`) may spawn helpers; only tests may import them.
    const isTest = rel.endsWith(".test.ts") || rel.endsWith("/testing.ts");
    const text = readFileSync(file, "utf8");
    const edges: string[] = [];
    if (!isTest) importGraph.set(rel, edges);
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2] ?? m[3] ?? "";
      if (spec === "bun:ffi" && !rel.startsWith("shared/sys/")) problems.push(`${rel}: imports bun:ffi outside shared/sys`);
      const staticValueImport = m[1] !== undefined && !/^(import|export)\s+type\s/.test(m[0]);
      const loadedOnCalls = !PROCESS_OWNERS.includes(top) || ON_EVERY_CALL.includes(rel);
      if (staticValueImport && !isTest && loadedOnCalls && LAZY_NODE_MODULES.test(spec) && !STATIC_NODE_IMPORT_OK.some((ok) => ok.test(rel))) {
        problems.push(`${rel}: imports ${spec} statically (use shared/sys/file.ts)`);
      }
      if (!spec.startsWith(".")) continue;
      if (!isTest && /(^|\/)testing\.ts$/.test(spec)) problems.push(`${rel}: imports test support ${spec}`);
      const target = relative(root, resolve(dirname(file), spec));
      edges.push(target);
      const targetTop = target.split("/")[0]!;
      if (top === "shared" && ["plugins", "ipam", "meta", "build"].includes(targetTop)) {
        problems.push(`${rel}: shared/ must not import ${target}`);
      }
      const targetPackage = packageOf(target);
      if (targetPackage !== undefined && packageOf(rel) !== targetPackage && !isTest && target === `${targetPackage}/index.ts`) {
        problems.push(`${rel}: imports ${target}; import the public module that defines the names (through the index a call would load the whole package)`);
      } else if (targetPackage !== undefined && packageOf(rel) !== targetPackage && !isTest) {
        // Across packages: only a public module (one the package's index.ts re-exports from), and of
        // it only the names the index re-exports. The module is imported itself, not through the
        // index, so a call loads no more of the package than it uses.
        const face = publicFace(targetPackage);
        if (!face.modules.has(target)) problems.push(`${rel}: imports ${target}, private to ${targetPackage}/ (its index.ts does not re-export it)`);
        else if (face.modules.get(target) !== "all" && m[1] !== undefined) {
          const braces = /\{([^}]*)\}/.exec(m[0])?.[1] ?? "";
          for (const item of braces.split(",").map((x) => x.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0]!).filter((x) => x !== "")) {
            if (!face.names.has(item)) problems.push(`${rel}: imports ${item} of ${target}, which ${targetPackage}/index.ts does not re-export`);
          }
        }
      }
      if (top === "shared" && targetTop === "shared" && !isTest) {
        const from = rel.split("/")[1]!;
        const to = target.split("/")[1]!;
        const fromRank = SHARED_RANK[from];
        const toRank = SHARED_RANK[to];
        if (fromRank === undefined) problems.push(`${rel}: shared/${from} has no rank in SHARED_RANK`);
        else if (from !== to && (toRank === undefined || toRank >= fromRank)) {
          problems.push(`${rel}: shared/${from} (rank ${fromRank}) must not import shared/${to} (rank ${toRank ?? "none"})`);
        }
      }
      const mayImport = UPPER_FOLDERS[top];
      if (mayImport !== undefined) {
        const allowed = targetTop === top || mayImport.includes(targetTop);
        // Tests may set up real plugins (operator/reload/pass.test.ts runs each plugin's reload parts).
        if (!allowed && !isTest) problems.push(`${rel}: ${top}/ must not import ${target} (only ${[top, ...mayImport].join("/, ")}/)`);
        continue;
      }
      if (top !== "shared" && targetTop !== "shared") {
        const ownFolder = rel.split("/").slice(0, 2).join("/");
        if (!target.startsWith(ownFolder + "/") && !(isTest && targetTop === "test")) {
          problems.push(`${rel}: imports ${target} (only shared/ or its own folder)`);
        }
      }
    }
    if (isTest) continue;
    const spawns = /\b(spawnSync|execFileSync|execSync|Bun\.spawn|Bun\.spawnSync|child_process)\b/.test(text);
    if (spawns && rel !== "shared/cni/invoke.ts" && rel !== "shared/firewall/exec.ts") {
      problems.push(`${rel}: spawns processes (only shared/cni/invoke.ts and shared/firewall/exec.ts may)`);
    }
    if (/^shared\/(netns|netlink|sysctl)\//.test(rel) && /\b(async|await)\b/.test(text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, ""))) {
      problems.push(`${rel}: async/await in a netns-safe layer`);
    }
    if (!PROCESS_OWNERS.includes(top) && !OWN_PROCESS.some((ok) => ok.test(rel))) {
      const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
      if (/process\.(env|stdout|stdin|stderr|cwd)\b/.test(code)) problems.push(`${rel}: uses process.env/stdout/stdin/stderr/cwd (use CmdArgs; shared/sys getcwd for the thread's directory)`);
      if (/writeAllSync\(\s*2\b|console\.(log|error|warn|info)\(/.test(code) && rel !== "shared/cni/stdio.ts") {
        problems.push(`${rel}: writes to stderr itself (use CmdArgs.stderr)`);
      }
    }
  }
}

/**
 * The longest chain of imports starting at `file`. `path`: the files above it on the way here; an
 * import of one of them closes a cycle, which is reported (a chain's length means nothing then).
 */
const longestChains = new Map<string, readonly string[]>();
function longestChain(file: string, path: string[]): readonly string[] {
  const known = longestChains.get(file);
  if (known !== undefined) return known;
  path.push(file);
  let below: readonly string[] = [];
  for (const next of importGraph.get(file) ?? []) {
    if (!importGraph.has(next)) continue;
    const closes = path.indexOf(next);
    if (closes >= 0) {
      problems.push(`import cycle: ${[...path.slice(closes), next].join(" → ")}`);
      continue;
    }
    const chain = longestChain(next, path);
    if (chain.length > below.length) below = chain;
  }
  path.pop();
  const chain = [file, ...below];
  longestChains.set(file, chain);
  return chain;
}
let deepest: readonly string[] = [];
for (const file of importGraph.keys()) {
  const chain = longestChain(file, []);
  if (chain.length > deepest.length) deepest = chain;
}
if (deepest.length > MAX_IMPORT_CHAIN) {
  problems.push(`import chain of ${deepest.length} files (at most ${MAX_IMPORT_CHAIN}): ${deepest.join(" → ")}`);
}

if (problems.length > 0) {
  for (const p of problems) console.error(p);
  console.error(`lint-layers: ${problems.length} problem(s)`);
  process.exit(1);
}
console.error(`lint-layers: ok (deepest import chain: ${deepest.length} files)`);
