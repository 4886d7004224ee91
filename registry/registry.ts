/**
 * The plugins this executable contains: CNI type name → the spec versions it accepts, a lazy
 * loader of its spec, and a lazy loader of what it owns on the node beyond a call (the operator's
 * only knowledge of plugins: operator/ imports the registry, never a plugin). Each is a dynamic
 * import, which `bun build --splitting` turns into its
 * own chunk: a process deserialises only the code of the plugin it runs (and what that plugin
 * imports), keeping start-up small. The versions are repeated here so that VERSION, the most
 * frequent call, is answered without loading any plugin code (registry.test.ts checks that they
 * equal each spec's own list).
 *
 * And one plugin call, as a plugin process and a thread of the resident agent both run it
 * ({@link runPluginCall}): the plugin's spec, then skel's protocol engine with the call's
 * environment and streams, and this build's plugins for its delegations to run in-process. Nothing
 * here imports agent/ or cli/: they import this.
 */
import type { PluginIO } from "../shared/cni/types.ts";
import type { PluginSpec } from "../shared/cni/types.ts";
import { ALL_VERSIONS, versionsFrom } from "../shared/cni/version.ts";
import type { PluginOwnership, PluginOwnerships } from "../shared/node-state/ownership.ts";
import { mark } from "../shared/sys/phases.ts";
import type { TelemetryHost } from "../shared/telemetry/call.ts";
import { buildVersion } from "./version.ts";

export interface PluginEntry {
  /** The spec versions the plugin accepts: its spec's `versions`. */
  readonly versions: readonly string[];
  readonly load: () => Promise<PluginSpec>;
  /**
   * What the plugin owns on the node beyond a call (state per attachment, firewall state, nf_tables
   * tables), for `cni-plugins inspect`, `gc` and `reload`; absent: nothing.
   */
  readonly owns?: () => Promise<PluginOwnership>;
}

export const PLUGINS: Readonly<Record<string, PluginEntry>> = {
  bandwidth: {
    versions: versionsFrom("0.3.0"),
    load: async () => (await import("../meta/bandwidth/bandwidth.ts")).bandwidthPlugin,
    owns: async () => (await import("../meta/bandwidth/owns.ts")).bandwidthOwnership,
  },
  bridge: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../plugins/bridge/bridge.ts")).bridgePlugin,
    owns: async () => (await import("../plugins/bridge/owns.ts")).bridgeOwnership,
  },
  "cluster-local": {
    versions: ALL_VERSIONS,
    load: async () => (await import("../ipam/cluster-local/cluster-local.ts")).clusterLocalPlugin,
    owns: async () => (await import("../ipam/cluster-local/owns.ts")).clusterLocalOwnership,
  },
  dhcp: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../ipam/dhcp/dhcp.ts")).dhcpPlugin,
    owns: async () => (await import("../ipam/dhcp/owns.ts")).dhcpOwnership,
  },
  dummy: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../plugins/dummy/dummy.ts")).dummyPlugin,
  },
  firewall: {
    versions: versionsFrom("0.4.0"),
    load: async () => (await import("../meta/firewall/firewall.ts")).firewallPlugin,
    owns: async () => (await import("../meta/firewall/owns.ts")).firewallOwnership,
  },
  "host-device": {
    versions: ALL_VERSIONS,
    load: async () => (await import("../plugins/host-device/host-device.ts")).hostDevicePlugin,
  },
  "host-local": {
    versions: ALL_VERSIONS,
    load: async () => (await import("../ipam/host-local/host-local.ts")).hostLocalPlugin,
    owns: async () => (await import("../ipam/host-local/owns.ts")).hostLocalOwnership,
  },
  ipvlan: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../plugins/ipvlan/ipvlan.ts")).ipvlanPlugin,
  },
  loopback: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../plugins/loopback/loopback.ts")).loopbackPlugin,
  },
  macvlan: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../plugins/macvlan/macvlan.ts")).macvlanPlugin,
  },
  portmap: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../meta/portmap/portmap.ts")).portmapPlugin,
    owns: async () => (await import("../meta/portmap/owns.ts")).portmapOwnership,
  },
  ptp: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../plugins/ptp/ptp.ts")).ptpPlugin,
    owns: async () => (await import("../plugins/ptp/owns.ts")).ptpOwnership,
  },
  sbr: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../meta/sbr/sbr.ts")).sbrPlugin,
  },
  static: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../ipam/static/static.ts")).staticPlugin,
  },
  tap: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../plugins/tap/tap.ts")).tapPlugin,
  },
  tuning: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../meta/tuning/tuning.ts")).tuningPlugin,
    owns: async () => (await import("../meta/tuning/owns.ts")).tuningOwnership,
  },
  vlan: {
    versions: ALL_VERSIONS,
    load: async () => (await import("../plugins/vlan/vlan.ts")).vlanPlugin,
  },
  vrf: {
    versions: versionsFrom("0.3.1"),
    load: async () => (await import("../meta/vrf/vrf.ts")).vrfPlugin,
  },
};

/** Names of every plugin in this build, sorted. */
export function pluginNames(): string[] {
  return Object.keys(PLUGINS).sort();
}

/** The registry entry of a CNI type, or undefined when this build does not contain it. */
export function pluginEntry(name: string): PluginEntry | undefined {
  return Object.hasOwn(PLUGINS, name) ? PLUGINS[name] : undefined;
}

/** The descriptions, loaded once: they are constants of the build (no call's state). */
let ownerships: Promise<PluginOwnerships> | undefined;

/** What each plugin of this build that owns something beyond a call owns, by CNI type. */
export function pluginOwnerships(): Promise<PluginOwnerships> {
  ownerships ??= Promise.all(
    Object.entries(PLUGINS)
      .filter(([, e]) => e.owns !== undefined)
      .map(async ([name, e]) => [name, await e.owns!()] as const),
  ).then((pairs) => new Map(pairs));
  return ownerships;
}

/** The spec for a CNI type, or undefined when this build does not contain it. */
export function lookupPlugin(name: string): Promise<PluginSpec> | undefined {
  return pluginEntry(name)?.load();
}

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
 * streams: the process's own, or a request of the resident agent; its invocations' metrics and
 * spans go to `telemetry` (shared/telemetry/call.ts) when given. Returns the exit status.
 */
export async function runPluginCall(name: string, io: PluginIO, telemetry?: TelemetryHost): Promise<number> {
  const entry = pluginEntry(name);
  if (entry === undefined) throw new Error(`no plugin ${JSON.stringify(name)} in this build`);
  const [spec, skel] = await Promise.all([entry.load(), import("../shared/cni/skel.ts")]);
  mark("plugin loaded");
  return skel.runPlugin(spec, io, { buildVersion: buildVersion(), plugins: lookupPlugin, ...(telemetry === undefined ? {} : { telemetry }) });
}
