/**
 * What ptp owns beyond a call (the registry's description, shared/node-state/ownership.ts): the
 * masquerade rules of `ipMasq`, which `cni-plugins reload` puts back (reload.ts).
 */
import { MASQUERADE_TABLES } from "../../shared/firewall/ipmasq-steps.ts";
import type { PluginOwnership } from "../../shared/node-state/ownership.ts";
import { ptpFirewallParts } from "./reload.ts";

export const ptpOwnership: PluginOwnership = {
  firewallParts: ptpFirewallParts,
  nftTables: MASQUERADE_TABLES,
};
