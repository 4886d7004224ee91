/**
 * What a scenario of `make bench` is: the context its worker gives it, the samples and checks it
 * returns (run.ts turns them into the final table), and the environment of a plugin call made in
 * it. The scenarios themselves are in scenarios.ts and the files it registers.
 */
import { dirOf, NO_AGENT_SOCKET, type CallEnv, type Dirs, type Impl } from "./lib.ts";
import type { Column } from "./table.ts";

export interface ScenarioContext {
  dirs: Dirs;
  /** The resident agent the worker started for this scenario (in its namespaces). */
  agent: { socket: string; pid: number };
  /** A compiled Bun hello-world built with the plugins' compile flags. */
  hello: string;
  rounds: number;
  /** A private scratch directory (host-local data, configs). */
  state: string;
}

/**
 * What a sample series measures: an implementation (lib.ts `Impl`), the compiled Bun hello-world,
 * or ours with host-local where the row compares another IPAM plugin of ours with it.
 */
export type Series = Column;

/** Samples per metric and per series. */
export type Samples = Record<string, Partial<Record<Series, number[]>>>;

export interface ScenarioOutput {
  samples: Samples;
  /** Pass/fail conditions (e.g. no duplicate address), by metric. */
  checks?: Record<string, { ok: boolean; text: string }>;
  /** Free-form lines printed before the table (e.g. the phase breakdown). */
  report?: string[];
  /** Charts drawn from the samples: file name (in docs/bench/) → SVG text; run.ts writes them. */
  charts?: Record<string, string>;
}

export type Scenario = (ctx: ScenarioContext) => ScenarioOutput | Promise<ScenarioOutput>;

export const BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export function push(s: Samples, metric: string, impl: Series, value: number): void {
  ((s[metric] ??= {})[impl] ??= []).push(value);
}

/** The socket the shims of `impl` are pointed at: the agent's for resident, none for the others. */
export function socketOf(ctx: ScenarioContext, impl: Impl): string {
  return impl === "resident" ? ctx.agent.socket : NO_AGENT_SOCKET;
}

/** The environment of a call of `impl` for container `id` in `netns` (interface eth0). */
export function env(ctx: ScenarioContext, impl: Impl, id: string, netns: string, extra: Partial<CallEnv> = {}): CallEnv {
  return {
    CNI_CONTAINERID: id,
    CNI_NETNS: netns,
    CNI_IFNAME: "eth0",
    CNI_PATH: dirOf(ctx.dirs, impl),
    PATH: BASE_PATH,
    CNI_PLUGINS_SOCKET: socketOf(ctx, impl),
    ...extra,
  };
}
