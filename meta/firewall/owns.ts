/**
 * What the firewall plugin owns beyond a call (the registry's description,
 * shared/node-state/ownership.ts): the per-address rules (iptables filter, or its nftables table)
 * or firewalld zone membership, and the ingress policy's rules, which `cni-plugins reload` puts
 * back (reload.ts).
 */
import type { PluginOwnership } from "../../shared/node-state/ownership.ts";
import { systemFirewallDeps } from "./firewall.ts";
import { NFT_TABLE } from "./nftables-backend.ts";
import { firewallPartsWith } from "./reload.ts";

export const firewallOwnership: PluginOwnership = {
  firewallParts: firewallPartsWith(systemFirewallDeps),
  nftTables: ["ip filter", "ip6 filter", `inet ${NFT_TABLE}`],
};
