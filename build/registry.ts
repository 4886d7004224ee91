/**
 * The plugins this executable contains: CNI type name → lazy loader of its spec. Each plugin module
 * is imported only when that plugin runs (or is delegated to), keeping start-up small.
 */
import type { PluginSpec } from "../shared/cni/types.ts";

export const PLUGINS: Readonly<Record<string, () => PluginSpec>> = {
  bandwidth: () => require("../meta/bandwidth/bandwidth.ts").bandwidthPlugin as PluginSpec,
  bridge: () => require("../plugins/bridge/bridge.ts").bridgePlugin as PluginSpec,
  dhcp: () => require("../ipam/dhcp/dhcp.ts").dhcpPlugin as PluginSpec,
  dummy: () => require("../plugins/dummy/dummy.ts").dummyPlugin as PluginSpec,
  firewall: () => require("../meta/firewall/firewall.ts").firewallPlugin as PluginSpec,
  "host-device": () => require("../plugins/host-device/host-device.ts").hostDevicePlugin as PluginSpec,
  "host-local": () => require("../ipam/host-local/host-local.ts").hostLocalPlugin as PluginSpec,
  ipvlan: () => require("../plugins/ipvlan/ipvlan.ts").ipvlanPlugin as PluginSpec,
  loopback: () => require("../plugins/loopback/loopback.ts").loopbackPlugin as PluginSpec,
  macvlan: () => require("../plugins/macvlan/macvlan.ts").macvlanPlugin as PluginSpec,
  portmap: () => require("../meta/portmap/portmap.ts").portmapPlugin as PluginSpec,
  ptp: () => require("../plugins/ptp/ptp.ts").ptpPlugin as PluginSpec,
  sbr: () => require("../meta/sbr/sbr.ts").sbrPlugin as PluginSpec,
  static: () => require("../ipam/static/static.ts").staticPlugin as PluginSpec,
  tap: () => require("../plugins/tap/tap.ts").tapPlugin as PluginSpec,
  tuning: () => require("../meta/tuning/tuning.ts").tuningPlugin as PluginSpec,
  vlan: () => require("../plugins/vlan/vlan.ts").vlanPlugin as PluginSpec,
  vrf: () => require("../meta/vrf/vrf.ts").vrfPlugin as PluginSpec,
};

/** Names of every plugin in this build, sorted. */
export function pluginNames(): string[] {
  return Object.keys(PLUGINS).sort();
}

/** The spec for a CNI type, or undefined when this build does not contain it. */
export function lookupPlugin(name: string): PluginSpec | undefined {
  const load = Object.hasOwn(PLUGINS, name) ? PLUGINS[name] : undefined;
  return load?.();
}
