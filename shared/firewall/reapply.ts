/**
 * What `cni-plugins reload` (operator/reload, docs/operator.md) puts back for one live attachment,
 * as each plugin that writes firewall state describes it: a list of parts, each with CHECK's read
 * (`check`: the problems, empty when everything is in place) and ADD's own write (`setup`: the same
 * code ADD runs, so every rule is byte-identical to ADD's and DEL — ours or Go's — removes it).
 * Reload writes only what a check found missing, so a second run changes nothing.
 */
import type { CmdArgs, Result } from "../cni/types.ts";
import type { FirewallDrivers } from "./backend.ts";

/** A part written through iptables or nftables: synchronous, run under the firewall lock (attachment-lock.ts). */
export interface FirewallPart {
  /** What it is, for the report: "ipMasq (iptables)", "hostPorts IPv4 (nftables)", … */
  readonly what: string;
  readonly sync: true;
  check(): string[];
  setup(): void;
}

/**
 * A part written over D-Bus (the firewalld backend): asynchronous, so never run under the lock.
 * `undo` takes back a setup that raced the attachment's DEL (reload looks at the deletion mark
 * again once the setup is done).
 */
export interface AsyncFirewallPart {
  readonly what: string;
  readonly sync: false;
  check(): Promise<string[]>;
  setup(): Promise<void>;
  undo(): Promise<void>;
}

export type AnyFirewallPart = FirewallPart | AsyncFirewallPart;

/**
 * A plugin's parts for one attachment. `args` is the plugin's invocation as the runtime made it at
 * ADD (its config from the runtime's cache, with `runtimeConfig` and, after the first plugin, the
 * cached result as `prevResult`); `result` is the attachment's cached result; `d` the drivers to
 * read and write through.
 */
export type FirewallPartsOf = (args: CmdArgs, result: Result, d: FirewallDrivers) => AnyFirewallPart[] | Promise<AnyFirewallPart[]>;
