/**
 * The host's firewall tools, as every plugin that writes rules and the operator use them: the
 * detected iptables variant (iptables/system.ts), nft and the kernel's nf_tables
 * (nftables/system.ts), and the node's attachment lock (attachment-lock.ts).
 */
import type { LockWaiter } from "../sys/lock-waiter.ts";
import { attachmentLock } from "./attachment-lock.ts";
import type { FirewallDrivers, FirewallPluginDeps } from "./backend.ts";
import type { ToolEnv } from "./exec.ts";
import { systemIptables } from "./iptables/system.ts";
import { systemNft } from "./nftables/system.ts";

/**
 * The host's iptables (variant detected on first use) and nft, for one invocation with environment
 * `env`, and the node's attachment lock, whose waits end through `waiter` (the invocation's
 * CmdArgs.scope.lockWaiter; none in a plugin process or a command of its own).
 */
export function systemFirewallDrivers(env: ToolEnv, waiter?: LockWaiter): FirewallDrivers {
  return { iptables: systemIptables(env), nftables: systemNft(env), lock: attachmentLock(undefined, waiter) };
}

/** The host's tools for each call ({@link systemFirewallDrivers}). */
export const systemFirewallPluginDeps: FirewallPluginDeps = {
  drivers: (args) => systemFirewallDrivers(args.env, args.scope.lockWaiter),
};

