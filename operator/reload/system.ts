/**
 * `cni-plugins reload` on the real node: the plugins whose firewall state it restores, the
 * firewall lock and deletion marks of shared/firewall/attachment-lock.ts, the host's tools and
 * namespaces, and the watcher's sources.
 */
import { readdirSync, readFileSync } from "node:fs";
import { clearDeletionMark, deletionMarks, deletionMarkTime, tryLockFirewall } from "../../shared/firewall/attachment-lock.ts";
import { systemFirewallDrivers } from "../../shared/firewall/system.ts";
import { hostIptablesMode } from "../../shared/firewall/iptables/system.ts";
import type { FirewallPartsOf } from "../../shared/firewall/reapply.ts";
import type { PluginOwnerships } from "../../shared/node-state/ownership.ts";
import { exists, statIfExists } from "../../shared/sys/file.ts";
import { systemNamespaceView } from "../liveness.ts";
import { loadNetworks } from "../networks.ts";
import { watchFirewalld } from "./firewalld-events.ts";
import { watchNftables } from "./nftables-events.ts";
import { reloadPass, type ReloadDeps } from "./pass.ts";
import type { ReloadWatchDeps } from "./watch.ts";

/** The plugins of `owners` that write firewall state, by CNI type. */
export function firewallParts(owners: PluginOwnerships): Record<string, FirewallPartsOf> {
  const parts: Record<string, FirewallPartsOf> = {};
  for (const [name, owns] of owners) if (owns.firewallParts !== undefined) parts[name] = owns.firewallParts;
  return parts;
}

/** The nf_tables tables the plugins of `owners` write to, as `<family> <table>`. */
export function watchedTables(owners: PluginOwnerships): ReadonlySet<string> {
  return new Set([...owners.values()].flatMap((owns) => owns.nftTables ?? []));
}

/**
 * The node's ReloadDeps: `confDir` for cache entries without a config, `plugins` the CNI types of
 * this build (a type not among them is reported as not ours), `owners` what they own.
 */
export function systemReloadDeps(confDir: string, plugins: readonly string[], owners: PluginOwnerships): ReloadDeps {
  const parts = firewallParts(owners);
  return {
    readDir: (p) => readdirSync(p),
    readFile: (p) => readFileSync(p, "utf8"),
    mtimeMs: (p) => {
      const st = statIfExists(p);
      return st === undefined ? undefined : Number(st.mtimeNs) / 1e6;
    },
    exists,
    confNetwork: (name) => loadNetworks(confDir).networks.find((n) => n.name === name),
    view: systemNamespaceView,
    // Each pass gets drivers of its own: the iptables variant is detected afresh.
    drivers: (env) => systemFirewallDrivers(env),
    parts,
    ours: (type) => plugins.includes(type),
    tryLock: () => tryLockFirewall(),
    deletionMarkTime: (a) => deletionMarkTime(a),
    deletionMarks: () => deletionMarks(),
    clearDeletionMark: (a) => clearDeletionMark(a),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    now: () => Date.now(),
  };
}

/** The watcher's dependencies on the real node (see systemReloadDeps). */
export function systemReloadWatchDeps(confDir: string, plugins: readonly string[], owners: PluginOwnerships): ReloadWatchDeps {
  const deps = systemReloadDeps(confDir, plugins, owners);
  const tables = watchedTables(owners);
  return {
    pass: (opts) => reloadPass(opts, deps),
    watchNftables: (onChange, log, signal) => watchNftables(tables, onChange, log, signal),
    watchFirewalld: (address, onChange, log, signal) => watchFirewalld(address, onChange, log, signal),
    iptablesMode: hostIptablesMode,
  };
}
