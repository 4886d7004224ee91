/**
 * A full node: what one more pod costs as pods accumulate. The node is filled with live pods of the
 * conflist of pods.ts up to each of LIVE_LEVELS (through the agent, in bursts, untimed; what
 * outlives a call — host-local's files, the iptables chains and rules, the bridge — is the same
 * for ours and Go, so any implementation can network a pod next to them), and at each level one
 * more pod's ADD chain and then its DEL chain are timed with standalone, resident and Go in turn
 * (ABBA, a round of warm-up at each level). The fill is torn down at the end, untimed.
 */
import { join } from "node:path";
import { addNetnsBatch, AGENT_SETTLE_MS, chainAdd, chainDel, ContainerNetns, delNetnsBatch, dirOf, leftoverReservations, log } from "./lib.ts";
import { addPods, delPods, FIRST_HOST_PORT, IMPL_STYLE, podChain, POD_IMPLS, POD_NETWORK, type Pod, type PodImpl, type PodNetwork } from "./pods.ts";
import { waitForQuiet } from "./proc.ts";
import { env, push, type Samples, type Scenario } from "./scenario.ts";
import { alternation, median, ratio } from "./stats.ts";
import { svgCharts, type LineSeries } from "./svg.ts";

/** The numbers of live pods at which one more pod is timed. */
export const LIVE_LEVELS = [0, 100, 250, 500] as const;
const FULL = LIVE_LEVELS.at(-1)!;
/** At most this many pods are networked (or torn down) at once while filling (or emptying) the node. */
const FILL_BURST = 250;
/** The host ports of the timed pods start here (the live pods' from FIRST_HOST_PORT). */
const TIMED_HOST_PORT = 30000;

const COMMANDS = ["add", "del"] as const;
type Command = (typeof COMMANDS)[number];

/** The chart: per-pod ADD and DEL time against the live pods, a line per implementation and command. */
export function perPodCostChart(s: Samples, caption: string): string {
  const series: LineSeries[] = POD_IMPLS.flatMap((impl) =>
    COMMANDS.map((cmd) => ({
      ...IMPL_STYLE[impl],
      label: `${IMPL_STYLE[impl].label} ${cmd.toUpperCase()}`,
      dash: cmd === "add" ? ("solid" as const) : ("dashed" as const),
      points: LIVE_LEVELS.map((level) => [level, median(s[`${cmd} ${level}`]?.[impl] ?? [])] as const).filter(([, ms]) => Number.isFinite(ms)),
    })),
  );
  return svgCharts([{ title: "One more pod on a node with live pods: its ADD and DEL chain", xLabel: "live pods on the node", yLabel: "time of the pod's chain (ms)", series }], caption);
}

/**
 * The metrics: "add <level>" and "del <level>" per implementation (ms of the pod's chain, every
 * level), and "add 500/0 <impl>", "del 500/0 <impl>" for standalone and resident: the series of
 * the implementation at the full level next to "empty-node", the same implementation's at 0 (the
 * table's target compares them).
 */
export const livePods: Scenario = async (ctx) => {
  const s: Samples = {};
  const net: PodNetwork = { bridge: "cnilive0", subnet: "10.100.0.0/21", dataDir: join(ctx.state, "ipam-live") };
  const live: Pod[] = [];
  const netnsName = (p: Pod) => p.netns.slice("/run/netns/".length);
  let timedPort = TIMED_HOST_PORT;
  try {
    for (const level of LIVE_LEVELS) {
      while (live.length < level) {
        const pods = Array.from({ length: Math.min(FILL_BURST, level - live.length) }, (_, k): Pod => {
          const i = live.length + k;
          return { id: `live-${i}`, netns: `/run/netns/live-${i}`, hostPort: FIRST_HOST_PORT + i };
        });
        addNetnsBatch(pods.map(netnsName));
        live.push(...pods);
        await addPods(ctx, "resident", net, pods);
      }
      // What the fill left running (the agent's deferred work, the kernel's) is over before timing.
      await Bun.sleep(AGENT_SETTLE_MS);
      await waitForQuiet(`the pods next to ${level} live pods`);
      log(`live-pods: ${live.length} live pods`);
      for (let round = -1; round < ctx.rounds; round++) {
        for (const impl of alternation(POD_IMPLS, round)) {
          const tag = `lp-${level}-${impl}-${round + 1}`;
          const ns = new ContainerNetns(tag);
          try {
            const chain = podChain(net, timedPort++);
            const e = env(ctx, impl, tag, ns.path);
            const add = chainAdd(dirOf(ctx.dirs, impl), POD_NETWORK, chain, e);
            const del = chainDel(dirOf(ctx.dirs, impl), POD_NETWORK, chain, e, add.result);
            if (round >= 0) {
              push(s, `add ${level}`, impl, add.ms);
              push(s, `del ${level}`, impl, del);
            }
          } finally {
            ns.remove();
          }
        }
      }
    }
    for (let i = 0; i < live.length; i += FILL_BURST) await delPods(ctx, "resident", net, live.slice(i, i + FILL_BURST));
  } finally {
    if (live.length > 0) delNetnsBatch(live.map(netnsName));
  }
  for (const impl of ["standalone", "resident"] as const) {
    for (const cmd of COMMANDS) {
      for (const ms of s[`${cmd} ${FULL}`]?.[impl] ?? []) push(s, `${cmd} ${FULL}/0 ${impl}`, impl, ms);
      for (const ms of s[`${cmd} 0`]?.[impl] ?? []) push(s, `${cmd} ${FULL}/0 ${impl}`, "empty-node", ms);
    }
  }
  const left = leftoverReservations(join(net.dataDir, POD_NETWORK));
  const caption = `make bench, ${new Date().toISOString().slice(0, 10)}: medians of ${ctx.rounds} round(s) per implementation and level`;
  return {
    samples: s,
    checks: { "add 0": { ok: left === 0, text: `every call ok, no reservation left (${left})` } },
    report: livePodsReport(s),
    charts: { "per-pod-cost.svg": perPodCostChart(s, caption) },
  };
};

/** Medians per level and implementation, and each implementation's full/empty ratio. */
function livePodsReport(s: Samples): string[] {
  const m = (cmd: Command, level: number, impl: PodImpl) => median(s[`${cmd} ${level}`]?.[impl] ?? []);
  const lines = ["", `live-pods: one more pod's chain (bridge+portmap+firewall+tuning) next to N live pods, ms, medians (ADD / DEL):`];
  lines.push(`  ${"live pods".padEnd(10)} ${POD_IMPLS.map((impl) => impl.padStart(20)).join("")}`);
  for (const level of LIVE_LEVELS) {
    lines.push(`  ${String(level).padEnd(10)} ${POD_IMPLS.map((impl) => `${m("add", level, impl).toFixed(1)} / ${m("del", level, impl).toFixed(1)}`.padStart(20)).join("")}`);
  }
  const r = (cmd: Command, impl: PodImpl) => ratio(m(cmd, FULL, impl), m(cmd, 0, impl)).toFixed(2);
  lines.push(`  ${`${FULL}/0`.padEnd(10)} ${POD_IMPLS.map((impl) => `${r("add", impl)} / ${r("del", impl)}`.padStart(20)).join("")}`);
  return lines;
}
