/**
 * What a plugin owns on the node beyond the call that made it, as the registry describes each
 * plugin (registry/registry.ts `owns`): the state it keeps per attachment (read by
 * `cni-plugins inspect` and `gc`), the firewall state it writes (put back by `cni-plugins reload`)
 * and the nf_tables tables it writes (whose deletion `reload --watch` notices). The operator knows
 * plugins only through this: a new plugin that keeps state describes it here, in its own folder.
 */
import type { FirewallPartsOf } from "../firewall/reapply.ts";
import type { HostReaders, NetworkState } from "./network-state.ts";

/**
 * When a state source runs: `discover` sources name attachments (reservations, leases, devices);
 * `match` sources only recognise attachments another place named (files without a network name),
 * so they run after the firewall rules have been read.
 */
export type StatePhase = "discover" | "match";

/** Where a plugin keeps state per attachment, and how to read it for one network. */
export interface StateSource {
  readonly phase: StatePhase;
  /**
   * Adds what the node holds for `st.network` to `st` (through `st.read`/`st.readLater`, so a place
   * that cannot be read is a problem of the report, not a failure). `configs`: the plugin objects
   * of the network that name this plugin, as their `type` or, for an IPAM plugin, their `ipam.type`.
   */
  read(st: NetworkState, configs: readonly Record<string, unknown>[], r: HostReaders): void | Promise<void>;
}

/** A plugin object's `ipam` object, or undefined. */
export function ipamOf(plugin: Record<string, unknown>): Record<string, unknown> | undefined {
  const ipam = plugin.ipam;
  return typeof ipam === "object" && ipam !== null && !Array.isArray(ipam) ? (ipam as Record<string, unknown>) : undefined;
}

export interface PluginOwnership {
  /** The state the plugin keeps per attachment. */
  readonly state?: StateSource;
  /** What `cni-plugins reload` puts back for a live attachment of the plugin. */
  readonly firewallParts?: FirewallPartsOf;
  /** The nf_tables tables the plugin writes to, as `<family> <table>`. */
  readonly nftTables?: readonly string[];
}

/** What each plugin of a build owns, by CNI type (registry/registry.ts `pluginOwnerships`). */
export type PluginOwnerships = ReadonlyMap<string, PluginOwnership>;
