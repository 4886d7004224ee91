/**
 * A rebooting node: N pods networked at once (the conflist of pods.ts, every pod's chain started
 * together, each chain's calls one after the other), then torn down at once, with each of
 * standalone, resident and Go in turn (ABBA over the rounds). Per wave: the time until every pod
 * was done and when each was, the CPU time of the wave, and, resident, the agent's peak resident
 * set. The pods' namespaces are made before and removed after, untimed.
 */
import { join } from "node:path";
import { addNetnsBatch, AGENT_SETTLE_MS, delNetnsBatch, leftoverReservations, log, sh, startAgent } from "./lib.ts";
import { addPods, delPods, FIRST_HOST_PORT, IMPL_STYLE, POD_IMPLS, POD_NETWORK, type Pod, type PodImpl, type PodNetwork } from "./pods.ts";
import { processCpuMs, waitForQuiet, watchPeakRss } from "./proc.ts";
import { push, type Samples, type Scenario, type ScenarioContext, type ScenarioOutput } from "./scenario.ts";
import { alternation, median } from "./stats.ts";
import { svgCharts, type LineSeries } from "./svg.ts";
import { doneOverTime, medianCompletions, type Wave } from "./waves.ts";

/** Where the burst's agent serves its metrics (in the worker's own network namespace). */
const METRICS_PORT = 19585;

/** One wave as measured: its time, its completions, its CPU (the agent's included), the agent's peak and refusals. */
interface MeasuredWave {
  wave: Wave<unknown>;
  cpuMs: number;
  agentPeakMiB?: number;
  /** How the peak was found: the kernel's VmHWM after a reset, or VmRSS sampled (proc.ts watchPeakRss). */
  peakMethod?: "VmHWM" | "sampled";
  /** Calls the agent refused (their shims ran the executable standalone), by reason. */
  refused?: Map<string, number>;
}

/** The agent's refusals so far, by reason (cni_agent_refusals_total, docs/observability.md). */
async function refusals(): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)).text();
  return refusalsIn(text);
}

/** The refusals by reason in a Prometheus text exposition; reasons at 0 are left out. */
export function refusalsIn(metrics: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of metrics.matchAll(/^cni_agent_refusals_total\{reason="([^"]+)"\} (\d+)$/gm)) if (Number(m[2]) > 0) out.set(m[1]!, Number(m[2]));
  return out;
}

/** after − before, per reason, zeros left out. */
function difference(after: ReadonlyMap<string, number>, before: ReadonlyMap<string, number>): Map<string, number> {
  return new Map([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)] as [string, number]).filter(([, v]) => v > 0));
}

/** "12 (busy 10, timeout 2)", or "0". */
function refusalText(refused: ReadonlyMap<string, number>): string {
  const total = [...refused.values()].reduce((a, b) => a + b, 0);
  return total === 0 ? "0" : `${total} (${[...refused].map(([k, v]) => `${k} ${v}`).join(", ")})`;
}

/**
 * Runs a wave once the machine is quiet; for resident also counts the agent's CPU time (its own and
 * its reaped children's, /proc/<pid>/stat, until AGENT_SETTLE_MS after the wave: its deferred
 * socket closes and its idle threads' garbage collection are part of the wave's cost) and its peak
 * resident set (proc.ts).
 */
async function measured(ctx: ScenarioContext, impl: PodImpl, what: string, run: () => Promise<Wave<unknown>>): Promise<MeasuredWave> {
  await waitForQuiet(`${impl}'s ${what}`);
  if (impl !== "resident") {
    const wave = await run();
    return { wave, cpuMs: wave.cpuMs };
  }
  const refusedBefore = await refusals();
  const cpuBefore = processCpuMs(ctx.agent.pid);
  const peak = watchPeakRss(ctx.agent.pid);
  const wave = await run();
  await Bun.sleep(AGENT_SETTLE_MS);
  const agentPeakMiB = peak.stop();
  const cpuMs = wave.cpuMs + processCpuMs(ctx.agent.pid) - cpuBefore;
  return { wave, cpuMs, agentPeakMiB, peakMethod: peak.method, refused: difference(await refusals(), refusedBefore) };
}

/** Lines of the node's nf_tables ruleset (iptables-nft's rules are in it): a wave's DEL must leave it as its ADD found it. */
function rulesetLines(): number {
  return sh(["nft", "list", "ruleset"]).split("\n").length;
}

/** The chart of a burst: pods done over time in the ADD wave and in the DEL wave, one line per implementation. */
export function burstChart(n: number, curves: Readonly<Record<"add" | "del", ReadonlyMap<PodImpl, readonly number[]>>>, caption: string): string {
  const series = (wave: "add" | "del"): LineSeries[] =>
    POD_IMPLS.flatMap((impl) => {
      const done = curves[wave].get(impl);
      return done === undefined ? [] : [{ ...IMPL_STYLE[impl], points: doneOverTime(done) }];
    });
  return svgCharts(
    [
      { title: `${n} pods started at once: ADD wave`, xLabel: "time since the wave started (s)", yLabel: "pods networked", series: series("add") },
      { title: `${n} pods torn down at once: DEL wave`, xLabel: "time since the wave started (s)", yLabel: "pods torn down", series: series("del") },
    ],
    caption,
  );
}

/**
 * N pods at once, ADD then DEL, `ctx.rounds` rounds. Metrics (per implementation): "add wave" and
 * "del wave" (ms until the last pod was done), "add cpu" and "del cpu" (CPU ms per pod), and for
 * resident "rss" (the agent's peak over both waves, MiB). Before the rounds each implementation
 * networks and tears down one pod, untimed, so the bridge and the plugins' top-level chains exist
 * for all alike.
 */
export function burst(n: number): Scenario {
  return async (worker) => {
    // An agent of its own, with its metrics on as shipped, for the count of the calls it refused.
    const agent = await startAgent(worker.dirs.ours, join(worker.state, "burst-agent", "plugins.sock"), ["--metrics-address", `127.0.0.1:${METRICS_PORT}`]);
    try {
      return await burstWith({ ...worker, agent }, n);
    } finally {
      await agent.stop();
    }
  };
}

/** Pods `tag`-0 … `tag`-(count-1), publishing FIRST_HOST_PORT + i, with their namespaces made for `use` and removed after it. */
async function withPods(tag: string, count: number, use: (pods: Pod[]) => Promise<void>): Promise<void> {
  const pods = Array.from({ length: count }, (_, i): Pod => ({ id: `${tag}-${i}`, netns: `/run/netns/${tag}-${i}`, hostPort: FIRST_HOST_PORT + i }));
  const names = pods.map((p) => p.netns.slice("/run/netns/".length));
  addNetnsBatch(names);
  try {
    await use(pods);
  } finally {
    delNetnsBatch(names);
  }
}

async function burstWith(ctx: ScenarioContext, n: number): Promise<ScenarioOutput> {
  const s: Samples = {};
  const problems: string[] = [];
  const refusalLines: string[] = [];
  const completions = { add: new Map<PodImpl, number[][]>(), del: new Map<PodImpl, number[][]>() };
  const net = (impl: PodImpl): PodNetwork => ({ bridge: "cnipods0", subnet: "10.100.0.0/21", dataDir: join(ctx.state, `ipam-burst-${impl}`) });
  for (const impl of POD_IMPLS) {
    await withPods(`bw-${impl}`, 1, async (pods) => {
      await addPods(ctx, impl, net(impl), pods);
      await delPods(ctx, impl, net(impl), pods);
    });
  }
  for (let round = 0; round < ctx.rounds; round++) {
    for (const impl of alternation(POD_IMPLS, round)) {
      await withPods(`b${n}-${impl}-${round}`, n, async (pods) => {
        const rules = rulesetLines();
        const add = await measured(ctx, impl, `ADD wave of ${n}`, () => addPods(ctx, impl, net(impl), pods));
        const del = await measured(ctx, impl, `DEL wave of ${n}`, () => delPods(ctx, impl, net(impl), pods));
        push(s, "add wave", impl, add.wave.ms);
        push(s, "del wave", impl, del.wave.ms);
        push(s, "add cpu", impl, add.cpuMs / n);
        push(s, "del cpu", impl, del.cpuMs / n);
        completions.add.set(impl, [...(completions.add.get(impl) ?? []), add.wave.completedAt]);
        completions.del.set(impl, [...(completions.del.get(impl) ?? []), del.wave.completedAt]);
        let agent = "";
        if (add.agentPeakMiB !== undefined && del.agentPeakMiB !== undefined) {
          push(s, "rss", impl, Math.max(add.agentPeakMiB, del.agentPeakMiB));
          const method = add.peakMethod === del.peakMethod ? add.peakMethod : `${add.peakMethod} and ${del.peakMethod}`;
          agent = `, agent peak ${Math.max(add.agentPeakMiB, del.agentPeakMiB).toFixed(1)} MiB (${method})`;
          refusalLines.push(`  round ${round}: calls the agent refused (run standalone by their shims), of ${4 * n} per wave: ADD ${refusalText(add.refused!)}, DEL ${refusalText(del.refused!)}`);
        }
        const left = leftoverReservations(join(net(impl).dataDir, POD_NETWORK));
        const ruleDiff = rulesetLines() - rules;
        if (left > 0 || ruleDiff !== 0) problems.push(`${impl} round ${round}: ${left} reservations left, ruleset ${ruleDiff >= 0 ? "+" : ""}${ruleDiff} lines after the DEL wave`);
        log(
          `burst-${n} ${impl} round ${round}: ADD wave ${(add.wave.ms / 1000).toFixed(1)} s, DEL wave ${(del.wave.ms / 1000).toFixed(1)} s, ` +
            `CPU per pod ${(add.cpuMs / n).toFixed(1)} / ${(del.cpuMs / n).toFixed(1)} ms${agent}`,
        );
      });
    }
  }
  const typical = (waves: Map<PodImpl, number[][]>) => new Map([...waves].map(([impl, rounds]) => [impl, medianCompletions(rounds)]));
  const curves = { add: typical(completions.add), del: typical(completions.del) };
  const caption = `make bench, ${new Date().toISOString().slice(0, 10)}: ${ctx.rounds} round(s) per implementation; a line is the median over the rounds of the k-th pod's completion`;
  return {
    samples: s,
    checks: { "add wave": { ok: problems.length === 0, text: "every call ok, no reservation or rule left" } },
    report: [...burstReport(n, s), ...refusalLines, ...problems.map((p) => `  ${p}`)],
    charts: { [`burst-${n}.svg`]: burstChart(n, curves, caption) },
  };
}

/** The burst's figures, medians per implementation, for the lines before the table. */
function burstReport(n: number, s: Samples): string[] {
  const m = (metric: string, impl: PodImpl) => median(s[metric]?.[impl] ?? []);
  const lines = ["", `burst-${n}: ${n} pods at once (bridge+portmap+firewall+tuning), medians:`];
  for (const impl of POD_IMPLS) {
    const rss = impl === "resident" ? `, agent peak ${m("rss", impl).toFixed(1)} MiB` : "";
    lines.push(
      `  ${impl.padEnd(10)} ADD wave ${(m("add wave", impl) / 1000).toFixed(2)} s, DEL wave ${(m("del wave", impl) / 1000).toFixed(2)} s, ` +
        `CPU per pod ${m("add cpu", impl).toFixed(1)} ms ADD, ${m("del cpu", impl).toFixed(1)} ms DEL${rss}`,
    );
  }
  return lines;
}
