/**
 * The plugins this executable contains: CNI type name → lazy loader of its spec. Each plugin is a
 * dynamic import, which `bun build --splitting` turns into its own chunk: a process deserialises
 * only the code of the plugin it runs (and what that plugin imports), keeping start-up small.
 */
import type { PluginSpec } from "../shared/cni/types.ts";

export const PLUGINS: Readonly<Record<string, () => Promise<PluginSpec>>> = {
  bandwidth: async () => (await import("../meta/bandwidth/bandwidth.ts")).bandwidthPlugin,
  bridge: async () => (await import("../plugins/bridge/bridge.ts")).bridgePlugin,
  dhcp: async () => (await import("../ipam/dhcp/dhcp.ts")).dhcpPlugin,
  dummy: async () => (await import("../plugins/dummy/dummy.ts")).dummyPlugin,
  firewall: async () => (await import("../meta/firewall/firewall.ts")).firewallPlugin,
  "host-device": async () => (await import("../plugins/host-device/host-device.ts")).hostDevicePlugin,
  "host-local": async () => (await import("../ipam/host-local/host-local.ts")).hostLocalPlugin,
  ipvlan: async () => (await import("../plugins/ipvlan/ipvlan.ts")).ipvlanPlugin,
  loopback: async () => (await import("../plugins/loopback/loopback.ts")).loopbackPlugin,
  macvlan: async () => (await import("../plugins/macvlan/macvlan.ts")).macvlanPlugin,
  portmap: async () => (await import("../meta/portmap/portmap.ts")).portmapPlugin,
  ptp: async () => (await import("../plugins/ptp/ptp.ts")).ptpPlugin,
  sbr: async () => (await import("../meta/sbr/sbr.ts")).sbrPlugin,
  static: async () => (await import("../ipam/static/static.ts")).staticPlugin,
  tap: async () => (await import("../plugins/tap/tap.ts")).tapPlugin,
  tuning: async () => (await import("../meta/tuning/tuning.ts")).tuningPlugin,
  vlan: async () => (await import("../plugins/vlan/vlan.ts")).vlanPlugin,
  vrf: async () => (await import("../meta/vrf/vrf.ts")).vrfPlugin,
};

/** Names of every plugin in this build, sorted. */
export function pluginNames(): string[] {
  return Object.keys(PLUGINS).sort();
}

/** The spec for a CNI type, or undefined when this build does not contain it. */
export function lookupPlugin(name: string): Promise<PluginSpec> | undefined {
  const load = Object.hasOwn(PLUGINS, name) ? PLUGINS[name] : undefined;
  return load?.();
}
