/**
 * A libcni-style network list driver for a {@link Node}: ADD in order with each result as the next
 * prevResult, CHECK in order and DEL in reverse with the cached ADD result as prevResult. Plugin
 * configs are built by the shared harness's ConflistRunner.buildPluginConfig (name/cniVersion
 * injected, runtimeConfig from capabilities, Go-sorted keys), so both implementations get
 * byte-identical stdin.
 */
import { ConflistRunner, marshalSorted, type NetworkConfigList } from "../../harness/conflist.ts";
import type { PluginRun } from "../../harness/exec-plugin.ts";
import { runOnNode, type Node } from "./node.ts";

export interface Attachment {
  containerID: string;
  netns: string;
  ifName: string;
  args?: string;
  capabilityArgs?: Record<string, unknown>;
}

export interface StepRun {
  type: string;
  command: string;
  run: PluginRun;
}

export interface ChainOutcome {
  ok: boolean;
  /** The final result (ADD) when ok. */
  result: Record<string, unknown> | undefined;
  /** Every plugin run, in order. */
  steps: StepRun[];
  /** The failing step, when not ok. */
  failed: StepRun | undefined;
}

const builder = new ConflistRunner({ cacheDir: "/nonexistent" });

function stepOk(run: PluginRun): boolean {
  return run.status === 0 && run.signal === null;
}

/** Runs one CNI command over the list; `cached` is the ADD result for CHECK/DEL. */
export async function runChain(
  node: Node,
  binDir: string,
  list: NetworkConfigList,
  att: Attachment,
  command: "ADD" | "CHECK" | "DEL",
  cached?: Record<string, unknown>,
): Promise<ChainOutcome> {
  const plugins = command === "DEL" ? [...list.plugins].reverse() : list.plugins;
  const steps: StepRun[] = [];
  let prev: Record<string, unknown> | undefined = command === "ADD" ? undefined : cached;
  for (const plugin of plugins) {
    const type = String(plugin.type);
    const rt = {
      containerID: att.containerID,
      netns: att.netns,
      ifName: att.ifName,
      ...(att.capabilityArgs ? { capabilityArgs: att.capabilityArgs } : {}),
    };
    const conf = builder.buildPluginConfig(list, plugin, prev, rt);
    const run = await runOnNode(node, type, {
      command,
      containerID: att.containerID,
      netns: att.netns,
      ifName: att.ifName,
      ...(att.args !== undefined ? { args: att.args } : {}),
      config: marshalSorted(conf),
      binDir,
    });
    const step = { type, command, run };
    steps.push(step);
    if (!stepOk(run)) return { ok: false, result: undefined, steps, failed: step };
    if (command === "ADD") prev = run.json as Record<string, unknown>;
  }
  return { ok: true, result: command === "ADD" ? prev : undefined, steps, failed: undefined };
}

/** One line per failing step, for assertion messages. */
export function describeOutcome(o: ChainOutcome): string {
  if (o.ok) return "ok";
  const f = o.failed;
  if (f === undefined) return "failed";
  return `${f.type} ${f.command}: exit=${f.run.status} stdout=${f.run.stdout.trim()} stderr=${f.run.stderr.trim().slice(0, 500)}`;
}
