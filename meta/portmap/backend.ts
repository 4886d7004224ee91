/** What portmap's backends (iptables-backend.ts, nftables-backend.ts) implement, and what one call hands them. */
import type { FirewallFeature } from "../../shared/firewall/backend.ts";
import type { IPFamily } from "../../shared/ip/addr.ts";
import type { CIDR } from "../../shared/ip/cidr.ts";
import type { ForeignPort, ForwardedPort, PortmapConfig } from "./config.ts";

/** ADD and CHECK: one container address (one IP family) and the config's mappings. */
export interface PortmapTarget {
  conf: PortmapConfig;
  containerID: string;
  container: CIDR;
  /** ADD: install the localnet guard (IPv4 with snat; see localnet.ts). */
  guard?: boolean;
  /** ADD: told the ports other containers forward on this family's host ports (see conflicts.ts). */
  foreign?(ports: readonly ForeignPort[]): void;
}

/**
 * DEL: names derive from network + container ID, so nothing else is needed. What the runtime still
 * passes narrows the work: the config's mappings (the rules ADD made can then be removed without
 * reading them first) and the container's IP families (from prevResult).
 */
export interface PortmapDelTarget {
  network: string;
  containerID: string;
  conf?: PortmapConfig;
  families?: readonly IPFamily[];
}

/** portmap in one backend; DEL reports the ports it unforwarded (for the UDP conntrack flush). */
export type PortmapFeature = FirewallFeature<PortmapTarget, PortmapDelTarget, ForwardedPort[]>;
