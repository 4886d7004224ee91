/** What portmap's backends (iptables-backend.ts, nftables-backend.ts) implement, and what one call hands them. */
import type { FirewallFeature } from "../../shared/firewall/backend.ts";
import type { CIDR, IPFamily } from "../../shared/ip/ip.ts";
import type { PortmapConfig } from "./config.ts";

/** What a DNAT rule forwards, as read back from the rules. */
export interface ForwardedPort {
  protocol: string;
  hostPort: number;
  /** Destination restriction ("" = any local address). */
  hostIP: string;
}

/** A port another container already forwards. */
export interface ForeignPort extends ForwardedPort {
  owner: string;
}

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
