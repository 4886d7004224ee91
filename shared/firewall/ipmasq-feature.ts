/**
 * What the masquerade of an attachment is, as ipmasq.ts hands it to each backend's feature
 * (ipmasq-iptables.ts, ipmasq-nftables.ts): types alone.
 */
import type { CIDR } from "../ip/cidr.ts";
import type { BackendName, FirewallFeature } from "./backend.ts";

export type MasqBackendName = BackendName;

export interface MasqTarget {
  network: string;
  containerID: string;
  ifName: string;
  /** CIDRs with host bits: "10.1.2.3/24", "fd00::3/64". */
  ips: string[];
}

/** One attachment's masquerade, as the backends see it (addresses parsed). */
export interface MasqInstance {
  network: string;
  containerID: string;
  ifName: string;
  ips: CIDR[];
}

/** What teardown knows: the addresses only when the container's interface could still be read. */
export type MasqDelTarget = Omit<MasqInstance, "ips"> & { ips?: CIDR[] };

/** ipMasq in one backend; teardown needs no addresses. */
export type MasqFeature = FirewallFeature<MasqInstance, MasqDelTarget>;
