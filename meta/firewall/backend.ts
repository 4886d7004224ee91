/** What the firewall plugin's backends implement, and what one invocation hands them. */
import type { FirewallFeature } from "../../shared/firewall/backend.ts";
import type { IPFamily } from "../../shared/ip/addr.ts";
import type { FirewallConf, IngressPolicy } from "./config.ts";
import type { HostAddress } from "./target.ts";

export interface FirewallTarget {
  conf: FirewallConf;
  containerID: string;
  ifName: string;
  /** prevResult's addresses (empty when there is no prevResult). */
  addrs: HostAddress[];
  /** The validated ingress policy; "open" on DEL. */
  policy: IngressPolicy;
  /** The bridge for same-bridge / isolated (undefined for open). */
  bridge: string | undefined;
  /** Families the ingress policy applies to (upstream findProtos). */
  policyFamilies: IPFamily[];
}

/** The plugin in the iptables or nftables backend. */
export type FirewallRules = FirewallFeature<FirewallTarget>;

/** The plugin in the firewalld backend: the same operations, answered over D-Bus. */
export type FirewalldRules = FirewallFeature<FirewallTarget, FirewallTarget, void, "firewalld">;

/** The plugin in any of its backends. */
export type FirewallBackend = FirewallRules | FirewalldRules;
