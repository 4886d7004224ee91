/**
 * A node's pods as a runtime networks them through libcni: one conflist, bridge (ipMasq, gateway,
 * host-local) → portmap (one host port per pod) → firewall → tuning. ADD runs the plugins in
 * order, each given the previous result as prevResult; DEL runs them in reverse, each given the
 * ADD's final result (libcni's cached result). Pods of a wave are networked at once (waves.ts).
 */
import { callAsync, dirOf, FIREWALL, pluginConfig, portmap, TUNING, type CallEnv, type ChainPlugin, type Impl } from "./lib.ts";
import { env, type ScenarioContext } from "./scenario.ts";
import type { Dash, Marker } from "./svg.ts";
import { runWave, type Wave } from "./waves.ts";

/** The implementations a node's pods are measured with (the old link layout is left out). */
export const POD_IMPLS = ["standalone", "resident", "go"] as const satisfies readonly Impl[];
export type PodImpl = (typeof POD_IMPLS)[number];

/** How each implementation is drawn: a colour, and a dash and a marker that tell it apart without colour. */
export const IMPL_STYLE: Readonly<Record<PodImpl, { label: string; colour: string; dash: Dash; marker: Marker }>> = {
  resident: { label: "resident (agent)", colour: "#0072B2", dash: "solid", marker: "circle" },
  standalone: { label: "standalone", colour: "#D55E00", dash: "dashed", marker: "square" },
  go: { label: "Go 1.1.1", colour: "#009E73", dash: "dotted", marker: "triangle" },
};

/** The first host port of a wave's pods (pod i publishes FIRST_HOST_PORT + i). */
export const FIRST_HOST_PORT = 20000;

/** The conflist's name. */
export const POD_NETWORK = "pods";

/** Where a node's pods are attached: the bridge, the range their addresses come from, host-local's store. */
export interface PodNetwork {
  bridge: string;
  /** Big enough for every pod a scenario keeps at once (a /21: 2,046 addresses). */
  subnet: string;
  dataDir: string;
}

/** The conflist's plugins for a pod whose container port 80 is published on `hostPort`. */
export function podChain(net: PodNetwork, hostPort: number): ChainPlugin[] {
  const bridge: ChainPlugin = {
    type: "bridge",
    conf: { bridge: net.bridge, isGateway: true, ipMasq: true, ipam: { type: "host-local", ranges: [[{ subnet: net.subnet }]], dataDir: net.dataDir } },
  };
  return [bridge, portmap(hostPort), FIREWALL, TUNING];
}

/** One pod: its container id, its network namespace, its host port, and its ADD's result once networked. */
export interface Pod {
  id: string;
  netns: string;
  hostPort: number;
  result?: unknown;
}

/** A pod's ADD chain; returns the CPU time of its calls and the final result. */
async function addChain(dir: string, plugins: readonly ChainPlugin[], e: CallEnv): Promise<{ cpuMs: number; value: unknown }> {
  let cpuMs = 0;
  let result: unknown;
  for (const p of plugins) {
    const r = await callAsync(dir, p.type, "ADD", e, pluginConfig(POD_NETWORK, p, result));
    cpuMs += r.cpuMs;
    result = JSON.parse(r.stdout);
  }
  return { cpuMs, value: result };
}

/** A pod's DEL chain, in reverse, each plugin given `result`; returns the CPU time of its calls. */
async function delChain(dir: string, plugins: readonly ChainPlugin[], e: CallEnv, result: unknown): Promise<{ cpuMs: number; value: undefined }> {
  let cpuMs = 0;
  for (const p of [...plugins].reverse()) cpuMs += (await callAsync(dir, p.type, "DEL", e, pluginConfig(POD_NETWORK, p, result))).cpuMs;
  return { cpuMs, value: undefined };
}

/** Networks every pod at once with `impl`; each pod keeps its result for its DEL. */
export async function addPods(ctx: ScenarioContext, impl: Impl, net: PodNetwork, pods: readonly Pod[]): Promise<Wave<unknown>> {
  const wave = await runWave(pods.length, (i) => addChain(dirOf(ctx.dirs, impl), podChain(net, pods[i]!.hostPort), env(ctx, impl, pods[i]!.id, pods[i]!.netns)));
  wave.values.forEach((result, i) => (pods[i]!.result = result));
  return wave;
}

/** Tears every pod down at once with `impl`, each DEL chain given the pod's ADD result. */
export async function delPods(ctx: ScenarioContext, impl: Impl, net: PodNetwork, pods: readonly Pod[]): Promise<Wave<undefined>> {
  return runWave(pods.length, (i) => {
    const pod = pods[i]!;
    if (pod.result === undefined) throw new Error(`pod ${pod.id} has no ADD result to delete with`);
    return delChain(dirOf(ctx.dirs, impl), podChain(net, pod.hostPort), env(ctx, impl, pod.id, pod.netns), pod.result);
  });
}
