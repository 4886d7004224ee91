/**
 * `make bench`: our plugins next to the Go reference binaries (/usr/lib/cni, Debian's
 * containernetworking-plugins 1.1.1), measured in one run, as a runtime calls them (environment +
 * config on stdin, one process per call, only the plugin processes timed). Prints the progress on
 * stderr and, at the end, one table: every figure, ours next to its reference, the ratio, the
 * target of issue 11, and whether it was met. docs/performance.md explains the scenarios.
 *
 *   bun test/bench/run.ts [--rounds N] [--only scenario,scenario] [--no-realtime]
 *
 * Isolation: the driver runs in a private mount namespace (its /run/netns is a tmpfs of its own)
 * and a throwaway network namespace; each scenario runs as a worker in a further fresh network
 * namespace (`unshare -n`), so the bridges, nat tables (including the kube-proxy-sized one) and
 * container namespaces it makes never reach the real host. Root only.
 *
 * Noise: within a scenario ours and Go alternate round by round (ABBA), every figure is a median,
 * and each scenario takes at least three rounds, so a change of load on a shared machine hits both.
 * The workers also run with the real-time round-robin policy (`chrt -r 1`, inherited by every
 * plugin process they start, ours and Go alike), so that other work on the machine delays the
 * measured processes as little as possible; `--no-realtime` runs them as ordinary processes.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { log, normalisePageCache, sh } from "./lib.ts";
import { cleanState, SCENARIOS, type ScenarioOutput } from "./scenarios.ts";
import { median } from "./stats.ts";
import { formatTable, type Row, type Target } from "./table.ts";

const ROOT = resolve(import.meta.dir, "../..");
const OURS = resolve(process.env.CNI_BENCH_OURS ?? join(ROOT, "dist/bin"));
const GO = resolve(process.env.CNI_BENCH_GO ?? "/usr/lib/cni");
const INNER = "CNI_BENCH_INNER";

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const ROUNDS = Number(argValue("--rounds") ?? 7);
const REALTIME = !process.argv.includes("--no-realtime");

/** Scenario → rounds (ours and Go each run once per round). */
function plan(): [string, number][] {
  const only = argValue("--only")?.split(",");
  const all: [string, number][] = [
    ["version", ROUNDS],
    ["loopback", ROUNDS],
    ["bridge", ROUNDS * 2],
    ["concurrent", Math.max(3, Math.ceil(ROUNDS / 2))],
    ["host-local-5000", ROUNDS],
    ["host-local-20000", Math.max(3, Math.ceil(ROUNDS / 2))],
    ["host-local-taken-5000", ROUNDS],
    ["chain5", ROUNDS],
    ["kube-nft", Math.max(3, Math.ceil(ROUNDS / 2))],
    ["kube-legacy", Math.max(3, Math.ceil(ROUNDS / 2))],
    ["kube-nftables", Math.max(3, Math.ceil(ROUNDS / 2))],
    ["memory", Math.max(3, Math.ceil(ROUNDS / 2))],
    ["phases", ROUNDS],
  ];
  return only === undefined ? all : all.filter(([id]) => only.includes(id));
}

/** The compile flags of the plugins' binary (the Makefile's COMPILE_FLAGS), for the hello-world. */
function compileFlags(): string[] {
  const fromEnv = process.env.CNI_BENCH_COMPILE_FLAGS;
  if (fromEnv !== undefined && fromEnv.trim() !== "") return fromEnv.trim().split(/\s+/);
  const line = readFileSync(join(ROOT, "Makefile"), "utf8")
    .split("\n")
    .find((l) => l.startsWith("COMPILE_FLAGS :="));
  if (line === undefined) throw new Error("COMPILE_FLAGS not found in the Makefile");
  return line.slice("COMPILE_FLAGS :=".length).trim().split(/\s+/);
}

function buildHello(state: string): string {
  const out = join(state, "hello");
  sh([process.execPath, "build", ...compileFlags(), join(import.meta.dir, "hello.ts"), "--outfile", out]);
  return out;
}

/** Worker: runs one scenario in this (fresh) network namespace and prints its output as JSON. */
async function worker(id: string, rounds: number, hello: string): Promise<void> {
  sh(["ip", "link", "set", "lo", "up"]);
  const scenario = SCENARIOS[id];
  if (scenario === undefined) throw new Error(`unknown scenario ${id}`);
  const state = mkdtempSync(join(tmpdir(), `cni-bench-${id}-`));
  try {
    const out = await scenario({ dirs: { ours: OURS, go: GO }, hello, rounds, state });
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    cleanState(state);
  }
}

function runWorker(id: string, rounds: number, hello: string): ScenarioOutput | string {
  const started = performance.now();
  log(`${id}: ${rounds} rounds`);
  const argv = ["unshare", "-n", process.execPath, import.meta.path, "--worker", id, "--rounds", String(rounds), "--hello", hello];
  const r = spawnSync(REALTIME ? "chrt" : argv[0]!, REALTIME ? ["-r", "1", ...argv] : argv.slice(1), {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, [INNER]: "1" },
    timeout: 20 * 60_000,
    maxBuffer: 64 << 20,
  });
  log(`${id}: done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  if (r.status !== 0) return `worker exited ${r.status ?? r.signal}${r.error ? ` (${r.error.message})` : ""}`;
  const last = r.stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(last) as ScenarioOutput;
  } catch {
    return `worker printed no result: ${last.slice(0, 200)}`;
  }
}

interface RowSpec {
  metric: string;
  scenario: string;
  target: Target;
  unit?: Row["unit"];
  /** Reference implementation (default go). */
  reference?: "go" | "hello";
}

const R = (max: number): Target => ({ kind: "ratio", max });
const NONE: Target = { kind: "none" };

/** Which rows each scenario's metrics become, with the targets of issue 11. */
const ROWS: Readonly<Record<string, RowSpec[]>> = {
  "kube-nft": [
    { metric: "add", scenario: "kube node, iptables-nft: bridge(ipMasq)+portmap+firewall ADD", target: R(0.5) },
    { metric: "del", scenario: "kube node, iptables-nft: bridge(ipMasq)+portmap+firewall DEL", target: R(0.5) },
  ],
  "kube-legacy": [
    { metric: "add", scenario: "kube node, iptables-legacy: bridge(ipMasq)+portmap+firewall ADD", target: R(0.5) },
    { metric: "del", scenario: "kube node, iptables-legacy: bridge(ipMasq)+portmap+firewall DEL", target: R(0.5) },
  ],
  "kube-nftables": [
    { metric: "add", scenario: "kube node, ours nftables backends (Go: iptables-nft) ADD", target: R(0.5) },
    { metric: "del", scenario: "kube node, ours nftables backends (Go: iptables-nft) DEL", target: R(0.5) },
  ],
  "host-local-5000": [{ metric: "add", scenario: "host-local ADD, 5,000 reservations", target: R(0.5) }],
  "host-local-20000": [{ metric: "add", scenario: "host-local ADD, 20,000 reservations", target: R(0.3) }],
  "host-local-taken-5000": [
    { metric: "add", scenario: "host-local ADD, first 5,000 addresses taken, no last_reserved_ip", target: R(0.3) },
    { metric: "del", scenario: "host-local DEL after it (store changed by another writer)", target: NONE },
  ],
  chain5: [
    { metric: "add", scenario: "bridge+portmap+firewall+tuning+bandwidth ADD", target: R(0.7) },
    { metric: "del", scenario: "bridge+portmap+firewall+tuning+bandwidth DEL", target: R(0.7) },
  ],
  bridge: [
    { metric: "add", scenario: "bridge+host-local ADD", target: R(1.0) },
    { metric: "del", scenario: "bridge+host-local DEL", target: R(0.8) },
  ],
  concurrent: [
    { metric: "add", scenario: "50 concurrent bridge+host-local ADDs (total)", target: R(1.0) },
    { metric: "del", scenario: "50 concurrent bridge+host-local DELs (total)", target: NONE },
  ],
  loopback: [{ metric: "add", scenario: "loopback ADD", target: NONE }],
  version: [
    { metric: "version", scenario: "VERSION (process start)", target: NONE },
    { metric: "version", scenario: "VERSION vs compiled Bun hello-world", target: { kind: "within", max: 1 }, reference: "hello" },
  ],
};

const MEMORY_KINDS = [
  "VERSION",
  "loopback ADD",
  "host-local ADD",
  "bridge(ipMasq)+host-local ADD",
  "bridge(ipMasq)+host-local DEL",
  "portmap ADD",
  "firewall ADD",
  "tuning ADD",
  "bandwidth ADD",
];

function memoryRows(out: ScenarioOutput): Row[] {
  const m = (metric: string, impl: "ours" | "go" | "hello") => median(out.samples[metric]?.[impl] ?? []);
  const rows: Row[] = [];
  const floor = m("peak hello-world", "hello");
  rows.push({ scenario: "peak RSS, compiled Bun hello-world (floor)", unit: "MB", ours: floor, reference: Number.NaN, target: NONE });
  rows.push({ scenario: "private anon, compiled Bun hello-world", unit: "MB", ours: m("anon hello-world", "hello"), reference: Number.NaN, target: NONE });
  for (const kind of MEMORY_KINDS) {
    rows.push({ scenario: `peak RSS, ${kind}`, unit: "MB", ours: m(`peak ${kind}`, "ours"), reference: m(`peak ${kind}`, "go"), target: NONE });
    rows.push({ scenario: `private anon, ${kind}`, unit: "MB", ours: m(`anon ${kind}`, "ours"), reference: m(`anon ${kind}`, "go"), target: NONE });
  }
  rows.push({
    scenario: "peak RSS, bridge(ipMasq)+host-local ADD vs floor",
    unit: "MB",
    ours: m("peak bridge(ipMasq)+host-local ADD", "ours"),
    reference: floor,
    referenceLabel: "hello",
    target: { kind: "within", max: 5 },
  });
  return rows;
}

function rowsFor(id: string, out: ScenarioOutput | string): Row[] {
  if (id === "phases") return [];
  if (id === "memory") {
    if (typeof out === "string") return [{ scenario: "memory per call kind", unit: "MB", ours: Number.NaN, reference: Number.NaN, target: NONE, error: out }];
    return memoryRows(out);
  }
  return (ROWS[id] ?? []).map((spec): Row => {
    const base = { scenario: spec.scenario, unit: spec.unit ?? "ms", target: spec.target };
    if (typeof out === "string") return { ...base, ours: Number.NaN, reference: Number.NaN, error: out };
    const xs = out.samples[spec.metric] ?? {};
    const ref = spec.reference ?? "go";
    const check = out.checks?.[spec.metric];
    return {
      ...base,
      ours: median(xs.ours ?? []),
      reference: median(xs[ref] ?? []),
      referenceLabel: ref === "hello" ? "hello" : "Go",
      ...(check === undefined ? {} : { check }),
    };
  });
}

/** The phase breakdown (ours only), medians per phase. */
function phaseReport(out: ScenarioOutput | string): string[] {
  if (typeof out === "string") return [`phases: ${out}`];
  const lines = ["", "bridge(ipMasq)+host-local ADD of ours, per phase (CNI_PHASES=1, medians):"];
  for (const [phase, xs] of Object.entries(out.samples)) {
    lines.push(`  ${phase.padEnd(46)} ${median(xs.ours ?? []).toFixed(1).padStart(7)} ms`);
  }
  return lines;
}

async function main(): Promise<number> {
  const workerId = argValue("--worker");
  if (workerId !== undefined) {
    await worker(workerId, ROUNDS, argValue("--hello") ?? "");
    return 0;
  }
  if (process.env[INNER] !== "1") {
    // Private mount namespace (for a private /run/netns) and a throwaway network namespace.
    const r = spawnSync("unshare", ["-m", "-n", process.execPath, import.meta.path, ...process.argv.slice(2)], {
      stdio: "inherit",
      env: { ...process.env, [INNER]: "1" },
    });
    return r.status ?? 1;
  }
  sh(["mount", "--make-rprivate", "/"]);
  sh(["mkdir", "-p", "/run/netns"]);
  sh(["mount", "-t", "tmpfs", "tmpfs", "/run/netns"]);
  for (const dir of [OURS, GO]) if (!existsSync(join(dir, "bridge"))) throw new Error(`no plugins in ${dir}`);
  const state = mkdtempSync(join(tmpdir(), "cni-bench-"));
  try {
    const hello = buildHello(state);
    normalisePageCache([OURS, GO], [hello]);
    const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
    log(`ours ${OURS}, Go ${GO}, ${navigator.hardwareConcurrency} CPUs, load ${load}`);
    const rows: Row[] = [];
    const report: string[] = [];
    for (const [id, rounds] of plan()) {
      const out = runWorker(id, rounds, hello);
      rows.push(...rowsFor(id, out));
      if (typeof out !== "string") report.push(...(out.report ?? []));
      if (id === "phases") report.push(...phaseReport(out));
    }
    const endLoad = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
    process.stdout.write(`${report.join("\n")}\n\n`);
    process.stdout.write(
      `make bench (rounds=${ROUNDS}; ${REALTIME ? "real-time priority" : "ordinary priority"}; load ${load} at start, ` +
        `${endLoad} at end; medians; Go = ${GO}):\n`,
    );
    process.stdout.write(formatTable(rows));
    return rows.some((r) => r.error !== undefined) ? 1 : 0;
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}

process.exit(await main());
