/**
 * firewall: a chained meta plugin that lets the container's addresses through the host firewall
 * (upstream plugins/meta/firewall, HEAD; upstream-matrix §2.15). It creates no interface; it
 * reads prevResult and returns it unchanged.
 *
 * Backends: `iptables` (CNI-FORWARD / CNI-ADMIN chains, per-address ACCEPT rules), `firewalld`
 * (addresses bound to a zone over D-Bus) and, beyond upstream, `nftables` (our own
 * `inet cni_plugins_firewall` table). Without `backend`: firewalld when it owns its name on the
 * system bus, else iptables, else (an nft-only host) nftables.
 * `ingressPolicy` `same-bridge` / `isolated` isolates bridges from each other (and, for
 * `isolated`, the ports of one bridge too) with Docker-style CNI-ISOLATION-STAGE-1/2 chains —
 * in iptables for the iptables and firewalld backends (as upstream), in nftables for nftables.
 *
 * Deliberate differences from upstream (Go 1.1.1 / HEAD):
 * - an unknown `backend` is refused on ADD and CHECK (code 7); upstream silently auto-detects.
 *   DEL stays lenient and auto-detects;
 * - DEL ignores `ingressPolicy` entirely, so a bad value cannot block pod deletion (P24);
 * - DEL never fails because the bus, firewalld or a rule is already gone;
 * - iptables changes are one iptables-restore per IP family and call, through the iptables variant
 *   (legacy / nf_tables) that holds the host's rules; rules are identical, so Go and TypeScript
 *   plugins remove each other's rules;
 * - CHECK only reads: it does not (re)create missing chains as upstream does; firewalld CHECK also
 *   requires querySource to answer true (upstream ignores the answer);
 * - the `nftables` backend and its GC (rules are tagged with network/container/ifname hashes);
 * - an invalid `iptablesAdminChainName` or a bridge name unfit for a rule is refused with a clear error;
 * - with the iptables backend, the isolation comments are HEAD's (`… (ingressPolicy: same-bridge|isolated)`
 *   on shared rules); 1.1.1 wrote `… (ingressPolicy: same-bridge)` everywhere, so after mixing both,
 *   FORWARD holds two equivalent jumps to CNI-ISOLATION-STAGE-1 (harmless, as with HEAD).
 */
import { InternalError } from "../../shared/cni/errors.ts";
import { prevResultFrom, validAttachmentsOf } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { versionsFrom } from "../../shared/cni/version.ts";
import { systemIptables, type IptablesDriver } from "../../shared/firewall/iptables/driver.ts";
import { systemNft, type NftDriver } from "../../shared/firewall/nftables/driver.ts";
import type { FirewallBackend, FirewallTarget } from "./backend.ts";
import { loadFirewallConf, parseBackend, parseIngressPolicy, validateAdminChain, type BackendName, type FirewallConf } from "./config.ts";
import { firewalldBackend, isFirewalldRunning, systemBusAddress } from "./firewalld-backend.ts";
import { iptablesBackend } from "./iptables-backend.ts";
import { nftablesBackend } from "./nftables-backend.ts";
import { bridgeNameFor, hostAddresses, policyFamilies } from "./target.ts";

/** What the plugin talks to; tests pass fakes. */
export interface FirewallDeps {
  iptables(): IptablesDriver;
  nftables(): NftDriver;
  /** The firewalld backend for a bus address. */
  firewalld(address: string): FirewallBackend;
  /** Upstream isFirewalldRunning. */
  firewalldRunning(address: string): Promise<boolean>;
}

let hostIpt: IptablesDriver | undefined;
export const systemFirewallDeps: FirewallDeps = {
  iptables: () => (hostIpt ??= systemIptables()),
  nftables: () => systemNft,
  firewalld: firewalldBackend,
  firewalldRunning: isFirewalldRunning,
};

/** The backend to use: the requested one, else firewalld if running, iptables, or nftables on nft-only hosts. */
export async function chooseBackend(requested: BackendName | undefined, args: CmdArgs, deps: FirewallDeps): Promise<FirewallBackend> {
  const address = systemBusAddress(args.env);
  switch (requested) {
    case "iptables":
      return iptablesBackend(deps.iptables());
    case "nftables":
      return nftablesBackend(deps.nftables());
    case "firewalld":
      return deps.firewalld(address);
  }
  if (await deps.firewalldRunning(address)) return deps.firewalld(address);
  if (!deps.iptables().available() && deps.nftables().available()) return nftablesBackend(deps.nftables());
  return iptablesBackend(deps.iptables());
}

function target(conf: FirewallConf, args: CmdArgs, prev: Result | undefined, withPolicy: boolean): FirewallTarget {
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
  async function add(args: CmdArgs): Promise<Result> {
    const conf = loadFirewallConf(args);
    const requested = parseBackend(conf.backend);
    validateAdminChain(conf.adminChain);
    const prev = prevResultFrom(args);
    if (prev === undefined) throw new InternalError("missing prevResult from earlier plugin");
    const t = target(conf, args, prev, true);
    const backend = await chooseBackend(requested, args, deps);
    await backend.add(t);
    // As upstream, the ingress policy of the firewalld backend is enforced with iptables.
    if (backend.name === "firewalld" && t.policy !== "open") iptablesBackend(deps.iptables()).addIsolation(t);
    return prev;
  }

  async function check(args: CmdArgs): Promise<void> {
    const conf = loadFirewallConf(args);
    const requested = parseBackend(conf.backend);
    validateAdminChain(conf.adminChain);
    const prev = prevResultFrom(args);
    if (prev === undefined) throw new InternalError("missing prevResult from earlier plugin");
    const backend = await chooseBackend(requested, args, deps);
    await backend.check(target(conf, args, prev, false));
  }

  async function del(args: CmdArgs): Promise<void> {
    const conf = loadFirewallConf(args);
    const backend = await chooseBackend(parseBackend(conf.backend, true), args, deps);
    await backend.del(target(conf, args, prevResultFrom(args), false));
  }

  async function gc(args: CmdArgs): Promise<void> {
    const conf = loadFirewallConf(args);
    const keep = validAttachmentsOf(args.config);
    if (keep === undefined) return;
    // Only the nftables rules carry their owner; iptables rules and firewalld sources cannot be attributed.
    const nft = deps.nftables();
    if (nft.available()) await nftablesBackend(nft).gc(conf.name, keep);
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
