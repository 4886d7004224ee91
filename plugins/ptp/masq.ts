/**
 * ptp's use of the shared ipMasq layer (shared/firewall/ipmasq.ts): one masquerade target per
 * attachment, keyed by network name + container ID (+ ifname for the nftables comments), so
 * teardown never needs the container's addresses.
 */
import type { CmdArgs, IPConfig } from "../../shared/cni/types.ts";
import { systemFirewallDrivers } from "../../shared/firewall/backend.ts";
import { checkIPMasq, gcIPMasq, parseMasqBackend, setupIPMasq, teardownIPMasq } from "../../shared/firewall/ipmasq.ts";
import type { PtpConfig } from "./config.ts";

/** "iptables", "nftables", or undefined for the default choice. Throws on an unknown name. */
export type MasqBackend = ReturnType<typeof parseMasqBackend>;

/** The backend named by `ipMasqBackend` (throws `unknown ipmasq backend "<x>"`). */
export function masqBackendOf(conf: PtpConfig): MasqBackend {
  return parseMasqBackend(conf.ipMasqBackend);
}

/** Masquerades traffic from every result address leaving its subnet. */
export function setupMasq(conf: PtpConfig, args: CmdArgs, ips: readonly IPConfig[], backend: MasqBackend): void {
  setupIPMasq(
    { network: conf.name, containerID: args.containerID, ifName: args.ifName, ips: ips.map((i) => i.address) },
    backend,
    systemFirewallDrivers(args.env, args.scope.lockWaiter),
  );
}

/**
 * Removes the attachment's masquerade rules from both backends; `ips` (CIDRs the container still
 * has) and the configured backend only narrow where to look first.
 */
export function teardownMasq(conf: PtpConfig, args: CmdArgs, ips: readonly string[] | undefined): void {
  teardownIPMasq({
    network: conf.name,
    containerID: args.containerID,
    ifName: args.ifName,
    backend: conf.ipMasqBackend,
    ...(ips !== undefined && ips.length > 0 ? { ips: [...ips] } : {}),
  }, systemFirewallDrivers(args.env, args.scope.lockWaiter));
}

/** CHECK: the attachment's masquerade rules exist for `ips` (CIDRs). */
export function checkMasq(conf: PtpConfig, args: CmdArgs, ips: readonly string[]): void {
  checkIPMasq(
    { network: conf.name, containerID: args.containerID, ifName: args.ifName, ips: [...ips] },
    masqBackendOf(conf),
    systemFirewallDrivers(args.env, args.scope.lockWaiter),
  );
}

/**
 * GC (beyond upstream ptp): drops this network's masquerade rules, in both backends, of attachments
 * the runtime no longer lists (see gcIPMasq).
 */
export function gcMasq(conf: PtpConfig, args: CmdArgs, keep: readonly { containerID: string; ifName: string }[]): void {
  gcIPMasq(conf.name, keep, systemFirewallDrivers(args.env, args.scope.lockWaiter));
}
