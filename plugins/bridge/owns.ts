/**
 * What bridge owns beyond a call (the registry's description, shared/node-state/ownership.ts): the
 * masquerade rules of `ipMasq` and the spoof-check rules of `macspoofchk`, which
 * `cni-plugins reload` puts back (reload.ts).
 */
import { MASQUERADE_TABLES } from "../../shared/firewall/ipmasq-steps.ts";
import type { PluginOwnership } from "../../shared/node-state/ownership.ts";
import { bridgeFirewallParts } from "./reload.ts";
import { SPOOFCHECK_TABLE } from "./spoofcheck.ts";

export const bridgeOwnership: PluginOwnership = {
  firewallParts: bridgeFirewallParts,
  nftTables: [...MASQUERADE_TABLES, `bridge ${SPOOFCHECK_TABLE}`],
};
