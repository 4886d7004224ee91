/**
 * What portmap owns beyond a call (the registry's description, shared/node-state/ownership.ts):
 * the forwarding rules (iptables nat and, with `snat`, filter; or its nftables table), which
 * `cni-plugins reload` puts back (reload.ts).
 */
import type { PluginOwnership } from "../../shared/node-state/ownership.ts";
import { NFT_TABLE } from "./nftables-backend.ts";
import { portmapFirewallParts } from "./reload.ts";

export const portmapOwnership: PluginOwnership = {
  firewallParts: portmapFirewallParts,
  nftTables: ["ip nat", "ip6 nat", "ip filter", "ip6 filter", `ip ${NFT_TABLE}`, `ip6 ${NFT_TABLE}`],
};
