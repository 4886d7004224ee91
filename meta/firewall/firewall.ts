/**
 * firewall: a chained meta plugin that lets the container's addresses through the host firewall
 * (upstream plugins/meta/firewall, HEAD). It creates no interface; it reads prevResult and returns
 * it unchanged.
 *
 * Backends: `iptables` (CNI-FORWARD / CNI-ADMIN chains, per-address ACCEPT rules), `firewalld`
 * (addresses bound to a zone over D-Bus) and, beyond upstream, `nftables` (our own
 * `inet cni_plugins_firewall` table). Without `backend`: firewalld when it owns its name on the
 * system bus, else the shared default (shared/firewall/backend.ts: iptables, or nftables on an
 * nft-only host). `ingressPolicy` `same-bridge` / `isolated` isolates bridges from each other (and,
 * for `isolated`, the ports of one bridge too) with Docker-style CNI-ISOLATION-STAGE-1/2 chains —
 * in iptables for the iptables and firewalld backends (as upstream), in nftables for nftables.
 * What differs from upstream on purpose is listed in DIFFERENCES.md (firewall).
 */
import { nodeAddresses } from "../../shared/iface/node-addresses.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { annotate } from "../../shared/error/annotate.ts";
import { validAttachmentsOf } from "../../shared/cni/netconf.ts";
import { prevResultFrom } from "../../shared/cni/result/prevresult.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { versionsFrom } from "../../shared/cni/version.ts";
import type { AttachmentKey } from "../../shared/firewall/attachment-lock.ts";
import { chooseBackend, lockOf, type BackendName, type FirewallDrivers, type FirewallPluginDeps } from "../../shared/firewall/backend.ts";
import { systemFirewallPluginDeps } from "../../shared/firewall/system.ts";
import type { FirewallBackend, FirewalldRules, FirewallRules, FirewallTarget } from "./backend.ts";
import { loadFirewallConfig, parseIngressPolicy, validateAdminChain, type FirewallBackendName, type FirewallConf } from "./config.ts";
import { systemBusAddress } from "../../shared/dbus/system-bus.ts";
import { firewalldBackend, isFirewalldRunning } from "./firewalld-backend.ts";
import { addIsolationIptables, iptablesFirewall } from "./iptables-backend.ts";
import { collectFirewall } from "./gc.ts";
import { nftablesFirewall } from "./nftables-backend.ts";
import { FIREWALL_STATE_DIR, forgetAttachment, recordAttachment, recordOf } from "./records.ts";
import { bridgeNameFor, hostAddresses, policyFamilies } from "./target.ts";

/** What the plugin talks to besides the drivers of each call; tests pass fakes. */
export interface FirewallDeps extends FirewallPluginDeps {
  /** The firewalld backend for a bus address. */
  firewalld(address: string): FirewalldRules;
  /** Upstream isFirewalldRunning. */
  firewalldRunning(address: string): Promise<boolean>;
  /** Where the iptables and firewalld backends record their attachments' addresses (records.ts). */
  stateDir: string;
  /** Addresses configured in any network namespace of the node (GC leaves their rules alone). */
  nodeAddresses(): ReadonlyMap<string, string>;
}

export const systemFirewallDeps: FirewallDeps = {
  ...systemFirewallPluginDeps,
  firewalld: firewalldBackend,
  firewalldRunning: isFirewalldRunning,
  stateDir: FIREWALL_STATE_DIR,
  nodeAddresses,
};

/** The plugin in each rule-writing backend, over `d`. */
export function firewallFeatures(d: FirewallDrivers): Record<BackendName, FirewallRules> {
  return { iptables: iptablesFirewall(d.iptables), nftables: nftablesFirewall(d.nftables) };
}

/** The requested backend's name; without one, firewalld when it runs, else the shared default over `d`. */
export async function backendName(requested: FirewallBackendName | undefined, args: CmdArgs, deps: FirewallDeps, d: FirewallDrivers): Promise<FirewallBackendName> {
  if (requested === "firewalld" || (requested === undefined && (await deps.firewalldRunning(systemBusAddress(args.env))))) return "firewalld";
  return chooseBackend(requested, d);
}

/** The requested backend; without one, firewalld when it runs, else the shared default over `d`. */
export async function selectBackend(requested: FirewallBackendName | undefined, args: CmdArgs, deps: FirewallDeps, d: FirewallDrivers): Promise<FirewallBackend> {
  const name = await backendName(requested, args, deps, d);
  return name === "firewalld" ? deps.firewalld(systemBusAddress(args.env)) : firewallFeatures(d)[name];
}

/** The lock's key of one invocation's attachment (shared/firewall/attachment-lock.ts). */
function attachmentOf(conf: FirewallConf, args: CmdArgs): AttachmentKey {
  return { network: conf.name, containerID: args.containerID, ifName: args.ifName };
}

/** What the backends act on; `withPolicy`: with the config's ingress policy (ADD), else "open". */
export function target(conf: FirewallConf, args: CmdArgs, prev: Result | undefined, withPolicy: boolean): FirewallTarget {
  const addrs = hostAddresses(prev);
  const policy = withPolicy ? parseIngressPolicy(conf.ingressPolicy) : "open";
  return {
    conf,
    containerID: args.containerID,
    ifName: args.ifName,
    addrs,
    policy,
    bridge: policy !== "open" && prev !== undefined ? bridgeNameFor(policy, prev) : undefined,
    policyFamilies: policyFamilies(addrs),
  };
}

export function makeFirewallPlugin(deps: FirewallDeps): PluginSpec {
  /** The validated config and prevResult of ADD and CHECK. */
  function load(args: CmdArgs): { conf: FirewallConf; prev: Result } {
    const conf = loadFirewallConfig(args);
    validateAdminChain(conf.adminChain);
    const prev = prevResultFrom(args);
    if (prev === undefined) throw new InternalError("missing prevResult from earlier plugin");
    return { conf, prev };
  }

  async function add(args: CmdArgs): Promise<Result> {
    const { conf, prev } = load(args);
    const t = target(conf, args, prev, true);
    const d = deps.drivers(args);
    const backend = await selectBackend(conf.backend, args, deps, d);
    // Recorded first: a setup that half-applies leaves rules GC can still attribute.
    if (backend.backend !== "nftables" && t.addrs.length > 0) {
      const record = { network: conf.name, containerID: args.containerID, ifName: args.ifName, backend: backend.backend, zone: conf.zone, addrs: t.addrs };
      annotate(`failed to record the attachment under ${deps.stateDir}`, () => recordAttachment(deps.stateDir, record));
    }
    const lock = lockOf(d);
    // firewalld's setup holds the lock only until it starts waiting for D-Bus (attachment-lock.ts).
    await lock.whileAdding(attachmentOf(conf, args), () => backend.setup(t));
    // As upstream, the ingress policy of the firewalld backend is enforced with iptables.
    if (backend.backend === "firewalld" && t.policy !== "open") lock.whileAdding(attachmentOf(conf, args), () => addIsolationIptables(d.iptables, t));
    return prev;
  }

  async function check(args: CmdArgs): Promise<void> {
    const { conf, prev } = load(args);
    const backend = await selectBackend(conf.backend, args, deps, deps.drivers(args));
    const problems = await backend.check(target(conf, args, prev, false));
    if (problems.length > 0) throw new InternalError(problems.join("; "));
  }

  async function del(args: CmdArgs): Promise<void> {
    const conf = loadFirewallConfig(args, { forDel: true });
    const d = deps.drivers(args);
    const backend = await selectBackend(conf.backend, args, deps, d);
    const record = recordOf(deps.stateDir, conf.name, args.containerID, args.ifName);
    const t = target(conf, args, prevResultFrom(args), false);
    // Without prevResult, the addresses ADD recorded for this backend.
    if (t.addrs.length === 0 && record?.backend === backend.backend) t.addrs = record.addrs;
    // A backend whose tools are gone has nothing left to remove; firewalld's teardown holds the lock
    // only until it starts waiting for D-Bus (attachment-lock.ts).
    await lockOf(d).whileDeleting(attachmentOf(conf, args), () => (backend.available() ? backend.teardown(t, true) : undefined));
    forgetAttachment(deps.stateDir, conf.name, args.containerID, args.ifName);
  }

  async function gc(args: CmdArgs): Promise<void> {
    const conf = loadFirewallConfig(args, { forDel: true });
    const keep = validAttachmentsOf(args.config);
    if (keep === undefined) return; // absent or malformed: collect nothing
    const firewalld = (): FirewalldRules => deps.firewalld(systemBusAddress(args.env));
    await collectFirewall(conf, keep, { features: firewallFeatures(deps.drivers(args)), firewalld, stateDir: deps.stateDir, nodeAddresses: deps.nodeAddresses });
  }

  return {
    name: "firewall",
    versions: versionsFrom("0.4.0"),
    add,
    check,
    del,
    status: () => {},
    gc,
  };
}

export const firewallPlugin: PluginSpec = makeFirewallPlugin(systemFirewallDeps);
