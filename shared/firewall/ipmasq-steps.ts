/**
 * ipMasq as the interface plugins that offer it (bridge, ptp) use it, with the same calls in both:
 *
 * - ADD refuses an unknown `ipMasqBackend` before it creates anything ({@link masqBackendOf}), and
 *   once the attachment has its addresses sets the rules up ({@link setupMasquerade}), marking
 *   {@link MASQUERADE_STEP} reached in its Undo first;
 * - DEL and ADD's rollback remove them with {@link masqueradeTeardownStep}, one of the plugin's
 *   teardown steps (shared/undo/teardown.ts);
 * - CHECK ({@link checkMasquerade}) and GC ({@link collectMasquerade}).
 *
 * Each does nothing when the config does not enable ipMasq. The rules themselves: ipmasq.ts.
 */
import type { ValidAttachment } from "../cni/types.ts";
import type { CmdArgs, IPConfig } from "../cni/types.ts";
import type { TeardownStep, Undo } from "../undo/teardown.ts";
import type { FirewallDrivers } from "./backend.ts";
import { checkIPMasq, gcIPMasq, parseMasqBackend, setupIPMasq, teardownIPMasq } from "./ipmasq.ts";
import type { MasqBackendName } from "./ipmasq-feature.ts";
import { MASQ_TABLE } from "./ipmasq-nftables.ts";

/**
 * The nf_tables tables the masquerade rules are written to (`<family> <table>`): iptables-nft's
 * `nat` of each family, and the nftables backend's own table. A plugin offering ipMasq names them
 * among the tables it writes (its owns.ts).
 */
export const MASQUERADE_TABLES: readonly string[] = ["ip nat", "ip6 nat", `inet ${MASQ_TABLE}`];

/** Name of the teardown step that removes the masquerade rules. */
export const MASQUERADE_STEP = "masquerade rules";

/** The call's attachment: CNI_CONTAINERID and CNI_IFNAME. */
type Attachment = Pick<CmdArgs, "containerID" | "ifName">;

/** What a plugin's config says about ipMasq. */
export interface MasqConfig {
  /** The network name (part of the rules' chain names and comments). */
  name: string;
  ipMasq: boolean;
  /** The raw `ipMasqBackend` (undefined or "": the default choice). */
  ipMasqBackend: string | undefined;
}

/** The backend `ipMasqBackend` names (throws `unknown ipmasq backend "<x>"`); undefined without ipMasq or for the default choice. */
export function masqBackendOf(conf: MasqConfig): MasqBackendName | undefined {
  return conf.ipMasq ? parseMasqBackend(conf.ipMasqBackend) : undefined;
}

/** The attachment's masquerade target for `ips` (CIDRs). */
function targetOf(conf: MasqConfig, args: Attachment, ips: readonly string[]): { network: string; containerID: string; ifName: string; ips: string[] } {
  return { network: conf.name, containerID: args.containerID, ifName: args.ifName, ips: [...ips] };
}

/**
 * ADD: masquerades traffic from each of `ips` leaving its subnet, in `backend` (from
 * {@link masqBackendOf}); `undo` learns first that the rules may exist.
 */
export function setupMasquerade(conf: MasqConfig, args: Attachment, ips: readonly IPConfig[], backend: MasqBackendName | undefined, d: FirewallDrivers, undo: Undo): void {
  if (!conf.ipMasq) return;
  undo.reached(MASQUERADE_STEP);
  setupIPMasq(targetOf(conf, args, ips.map((i) => i.address)), backend, d);
}

/**
 * DEL and ADD's rollback: removes the attachment's masquerade rules from every backend (ipmasq.ts
 * teardownIPMasq). The rules are keyed by network and container; `addressHint()` (the addresses
 * the container's interface still carries, read only when ipMasq is on) only narrows the work to
 * their IP families. An unknown `ipMasqBackend` is ignored: DEL must not fail on it.
 */
export function masqueradeTeardownStep(conf: MasqConfig, args: Attachment, d: FirewallDrivers, addressHint: () => string[]): TeardownStep {
  return {
    name: MASQUERADE_STEP,
    run: () => {
      if (!conf.ipMasq) return;
      const ips = addressHint();
      const target = { network: conf.name, containerID: args.containerID, ifName: args.ifName, backend: conf.ipMasqBackend };
      teardownIPMasq({ ...target, ...(ips.length > 0 ? { ips } : {}) }, d);
    },
  };
}

/** CHECK: the attachment's masquerade rules exist for `ips` (CIDRs); throws describing what is missing. */
export function checkMasquerade(conf: MasqConfig, args: Attachment, ips: readonly string[], d: FirewallDrivers): void {
  if (!conf.ipMasq) return;
  checkIPMasq(targetOf(conf, args, ips), parseMasqBackend(conf.ipMasqBackend), d);
}

/** GC: removes this network's masquerade rules, in both backends, of attachments not in `keep` (ipmasq.ts gcIPMasq). */
export function collectMasquerade(conf: MasqConfig, keep: readonly ValidAttachment[], d: FirewallDrivers): void {
  if (!conf.ipMasq) return;
  gcIPMasq(conf.name, keep, d);
}
