/**
 * IP masquerade for bridge and ptp (`ipMasq`, `ipMasqBackend`): upstream
 * SetupIPMasqForNetworks / TeardownIPMasqForNetworks / GCIPMasqForNetwork with the same rules,
 * names and comments in both backends (ipmasq-iptables.ts, ipmasq-nftables.ts), so Go and
 * TypeScript plugins clean up each other's rules. Where this differs from upstream on purpose is
 * listed in DIFFERENCES.md (ipMasq).
 */
import { annotate } from "../error/annotate.ts";
import { InvalidConfigError } from "../cni/errors.ts";
import type { ValidAttachment } from "../cni/types.ts";
import { parseCIDR, type CIDR } from "../ip/cidr.ts";
import { chooseBackend, collectEverywhere, lockOf, teardownEverywhere, type BackendName, type FirewallDrivers } from "./backend.ts";
import { iptablesMasq } from "./ipmasq-iptables.ts";
import { nftablesMasq } from "./ipmasq-nftables.ts";
import type { MasqBackendName, MasqDelTarget, MasqFeature, MasqInstance, MasqTarget } from "./ipmasq-feature.ts";
import type { FirewallPart } from "./reapply.ts";

function features(d: FirewallDrivers): Record<BackendName, MasqFeature> {
  return { iptables: iptablesMasq(d.iptables), nftables: nftablesMasq(d.nftables) };
}

/** Validates the raw `ipMasqBackend` value ("" or undefined: default choice). */
export function parseMasqBackend(raw: string | undefined): MasqBackendName | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (raw === "iptables" || raw === "nftables") return raw;
  throw new InvalidConfigError(`unknown ipmasq backend ${JSON.stringify(raw)}`);
}

function instance(t: MasqTarget): MasqInstance {
  const ips = t.ips.map((s) => {
    const c = parseCIDR(s);
    if (c === null) throw new Error(`ipMasq: invalid address ${JSON.stringify(s)}`);
    return c;
  });
  return { network: t.network, containerID: t.containerID, ifName: t.ifName, ips };
}

/**
 * Masquerades traffic from `t.ips` leaving their subnets, in the chosen (or default) backend, under
 * the firewall lock (attachment-lock.ts).
 */
export function setupIPMasq(t: MasqTarget, backend: MasqBackendName | undefined, d: FirewallDrivers): void {
  const inst = instance(t);
  if (inst.ips.length === 0) return;
  lockOf(d).whileAdding(t, () => annotate(`failed to set up IP masquerade for ${t.network}`, () => features(d)[chooseBackend(backend, d)].setup(inst)));
}

/** reload's part for `t` (shared/firewall/reapply.ts): CHECK's read and ADD's write, in the backend ADD chose. */
export function ipMasqPart(t: MasqTarget, backend: MasqBackendName | undefined, d: FirewallDrivers): FirewallPart | undefined {
  const inst = instance(t);
  if (inst.ips.length === 0) return undefined;
  const name = chooseBackend(backend, d);
  const f = features(d)[name];
  return {
    what: `ipMasq (${name})`,
    sync: true,
    check: () => f.check(inst),
    setup: () => annotate(`failed to set up IP masquerade for ${t.network}`, () => f.setup(inst)),
  };
}

/**
 * Removes the attachment's masquerade rules from BOTH backends, idempotently and without needing
 * its addresses; when given, `ips` (the addresses the container still has) narrow the iptables work
 * to their IP families. `backend` (the raw `ipMasqBackend`; an unknown value is ignored, DEL must
 * not fail on it) only says where the rules most likely are. A backend whose tools are missing or
 * unsupported is skipped; other failures are reported together. Runs under the firewall lock,
 * after marking the attachment deleted (attachment-lock.ts).
 */
export function teardownIPMasq(
  t: { network: string; containerID: string; ifName: string; ips?: string[]; backend?: string | undefined },
  d: FirewallDrivers,
): void {
  const ips = t.ips?.map((s) => parseCIDR(s)).filter((c): c is CIDR => c !== null);
  const likely = t.backend === "iptables" || t.backend === "nftables" ? t.backend : undefined;
  const target: MasqDelTarget = { network: t.network, containerID: t.containerID, ifName: t.ifName, ...(ips?.length ? { ips } : {}) };
  lockOf(d).whileDeleting(t, () =>
    annotate(`failed to tear down IP masquerade for ${t.network}`, () => teardownEverywhere(Object.values(features(d)), target, chooseBackend(likely, d))),
  );
}

/** CHECK: the rules for `t.ips` exist in the backend in use; throws describing what is missing. */
export function checkIPMasq(t: MasqTarget, backend: MasqBackendName | undefined, d: FirewallDrivers): void {
  const inst = instance(t);
  if (inst.ips.length === 0) return;
  const problems = annotate(`failed to check IP masquerade for ${t.network}`, () => features(d)[chooseBackend(backend, d)].check(inst));
  if (problems.length) throw new Error(`IP masquerade for ${t.network} is incomplete: ${problems.join("; ")}`);
}

/**
 * Upstream GCIPMasqForNetwork: removes the network's masquerade rules that belong to no attachment
 * in `keep`, in nftables (by the instance comment) and, beyond upstream, in iptables (by the owner
 * comment of the POSTROUTING jumps; there the container ID alone is the key, as in the chain name).
 */
export function gcIPMasq(network: string, keep: readonly ValidAttachment[], d: FirewallDrivers): void {
  annotate(`failed to garbage-collect IP masquerade for ${network}`, () => collectEverywhere(Object.values(features(d)), network, keep));
}
