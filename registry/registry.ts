/**
 * The plugins this executable contains: CNI type name → the spec versions it accepts and a lazy
 * loader of its spec. Each plugin is a dynamic import, which `bun build --splitting` turns into its
 * own chunk: a process deserialises only the code of the plugin it runs (and what that plugin
 * imports), keeping start-up small. The versions are repeated here so that VERSION, the most
 * frequent call, is answered without loading any plugin code (registry.test.ts checks that they
 * equal each spec's own list).
 */
import { ALL_VERSIONS, versionsFrom } from "../shared/cni/version.ts";
import type { PluginSpec } from "../shared/cni/types.ts";

export interface PluginEntry {
  /** The spec versions the plugin accepts: its spec's `versions`. */
  readonly versions: readonly string[];
  readonly load: () => Promise<PluginSpec>;
}

export const PLUGINS: Readonly<Record<string, PluginEntry>> = {
  bandwidth: { versions: versionsFrom("0.3.0"), load: async () => (await import("../meta/bandwidth/bandwidth.ts")).bandwidthPlugin },
  bridge: { versions: ALL_VERSIONS, load: async () => (await import("../plugins/bridge/bridge.ts")).bridgePlugin },
  "cluster-local": { versions: ALL_VERSIONS, load: async () => (await import("../ipam/cluster-local/cluster-local.ts")).clusterLocalPlugin },
  dhcp: { versions: ALL_VERSIONS, load: async () => (await import("../ipam/dhcp/dhcp.ts")).dhcpPlugin },
  dummy: { versions: ALL_VERSIONS, load: async () => (await import("../plugins/dummy/dummy.ts")).dummyPlugin },
  firewall: { versions: versionsFrom("0.4.0"), load: async () => (await import("../meta/firewall/firewall.ts")).firewallPlugin },
  "host-device": { versions: ALL_VERSIONS, load: async () => (await import("../plugins/host-device/host-device.ts")).hostDevicePlugin },
  "host-local": { versions: ALL_VERSIONS, load: async () => (await import("../ipam/host-local/host-local.ts")).hostLocalPlugin },
  ipvlan: { versions: ALL_VERSIONS, load: async () => (await import("../plugins/ipvlan/ipvlan.ts")).ipvlanPlugin },
  loopback: { versions: ALL_VERSIONS, load: async () => (await import("../plugins/loopback/loopback.ts")).loopbackPlugin },
  macvlan: { versions: ALL_VERSIONS, load: async () => (await import("../plugins/macvlan/macvlan.ts")).macvlanPlugin },
  portmap: { versions: ALL_VERSIONS, load: async () => (await import("../meta/portmap/portmap.ts")).portmapPlugin },
  ptp: { versions: ALL_VERSIONS, load: async () => (await import("../plugins/ptp/ptp.ts")).ptpPlugin },
  sbr: { versions: ALL_VERSIONS, load: async () => (await import("../meta/sbr/sbr.ts")).sbrPlugin },
  static: { versions: ALL_VERSIONS, load: async () => (await import("../ipam/static/static.ts")).staticPlugin },
  tap: { versions: ALL_VERSIONS, load: async () => (await import("../plugins/tap/tap.ts")).tapPlugin },
  tuning: { versions: ALL_VERSIONS, load: async () => (await import("../meta/tuning/tuning.ts")).tuningPlugin },
  vlan: { versions: ALL_VERSIONS, load: async () => (await import("../plugins/vlan/vlan.ts")).vlanPlugin },
  vrf: { versions: versionsFrom("0.3.1"), load: async () => (await import("../meta/vrf/vrf.ts")).vrfPlugin },
};

/** Names of every plugin in this build, sorted. */
export function pluginNames(): string[] {
  return Object.keys(PLUGINS).sort();
}

/** The registry entry of a CNI type, or undefined when this build does not contain it. */
export function pluginEntry(name: string): PluginEntry | undefined {
  return Object.hasOwn(PLUGINS, name) ? PLUGINS[name] : undefined;
}

/** The spec for a CNI type, or undefined when this build does not contain it. */
export function lookupPlugin(name: string): Promise<PluginSpec> | undefined {
  return pluginEntry(name)?.load();
}
