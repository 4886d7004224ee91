/** The interface every firewall backend implements, and what one invocation hands it. */
import type { IPFamily } from "../../shared/ip/ip.ts";
import type { BackendName, FirewallConf, IngressPolicy } from "./config.ts";
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

export interface FirewallBackend {
  readonly name: BackendName;
  add(t: FirewallTarget): Promise<void> | void;
  /** Throws describing the first missing piece. */
  check(t: FirewallTarget): Promise<void> | void;
  /** Idempotent; never fails because something is already gone. */
  del(t: FirewallTarget): Promise<void> | void;
  /** Removes state of `network` that belongs to no attachment in `keep` (where the backend can tell). */
  gc(network: string, keep: readonly { containerID: string; ifName: string }[]): Promise<void> | void;
}
