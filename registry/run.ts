/**
 * One plugin call, as a plugin process and a thread of the resident agent both run it: the plugin's
 * spec from the registry, then skel's protocol engine with the call's environment and streams, and
 * this build's plugins for its delegations to run in-process. Nothing here imports agent/ or cli/:
 * they import this.
 */
import type { PluginIO } from "../shared/cni/skel.ts";
import { mark } from "../shared/sys/phases.ts";
import { lookupPlugin, pluginEntry } from "./registry.ts";
import { buildVersion } from "./version.ts";

/**
 * The plugin a process started with `argv` runs: the last component of argv[0] when it names a
 * plugin of this build (`dhcp daemon` is the lease daemon, not a call), else undefined.
 */
export function pluginNameOf(argv: readonly string[]): string | undefined {
  const argv0 = argv[0] ?? "";
  const name = argv0.slice(argv0.lastIndexOf("/") + 1);
  if (name === "dhcp" && argv[1] === "daemon") return undefined;
  return pluginEntry(name) === undefined ? undefined : name;
}

/**
 * Runs one call of the plugin `name` (a plugin of this build) with `io` as its environment and
 * streams: the process's own, or a request of the resident agent. Returns the exit status.
 */
export async function runPluginCall(name: string, io: PluginIO): Promise<number> {
  const entry = pluginEntry(name);
  if (entry === undefined) throw new Error(`no plugin ${JSON.stringify(name)} in this build`);
  const [spec, skel] = await Promise.all([entry.load(), import("../shared/cni/skel.ts")]);
  mark("plugin loaded");
  return skel.runPlugin(spec, io, { buildVersion: buildVersion(), plugins: lookupPlugin });
}
