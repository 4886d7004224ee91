/**
 * bandwidth configuration (upstream plugins/meta/bandwidth PluginConf): the
 * four limits at the top level or, only when none of them is present, in
 * `runtimeConfig.bandwidth`.
 *
 * Rates are bits per second and bursts are bits (the kernel gets bytes: value / 8).
 *
 * Extension (not in upstream HEAD; see subnets.ts): `unshapedSubnets` / `shapedSubnets`, taken
 * from the top level when either key is there, else from `runtimeConfig.bandwidth` —
 * independently of where the limits come from, so a static subnet list combines with the limits a
 * runtime passes.
 */
import { t } from "../../shared/cni/decode.ts";
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import { lenientForDel, loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import { parseSubnetLists, type SubnetSelection } from "./subnets.ts";

const bandwidthFields = {
  ingressRate: t.uint64(),
  ingressBurst: t.uint64(),
  egressRate: t.uint64(),
  egressBurst: t.uint64(),
};

const subnetFields = {
  unshapedSubnets: t.array(t.string()),
  shapedSubnets: t.array(t.string()),
};

const bandwidthEntry = t.object("BandwidthEntry", { ...bandwidthFields, ...subnetFields });

const bandwidthSchema = t.object("PluginConf", {
  ...netConfFields,
  ...bandwidthFields,
  ...subnetFields,
  runtimeConfig: t.object("RuntimeConfig", { bandwidth: bandwidthEntry }),
});

/** One direction's limit, in the config's units. */
export interface Limit {
  /** bits per second */
  rate: number;
  /** bits */
  burst: number;
}

/** The limits in force for this invocation. */
export interface Bandwidth {
  /** Towards the container; undefined = not shaped. Where each direction is shaped: site.ts. */
  ingress: Limit | undefined;
  /** From the container; undefined = not shaped. */
  egress: Limit | undefined;
}

export interface BandwidthConfig {
  name: string;
  bandwidth: Bandwidth;
  /** Which destinations are shaped; `undefined` = all of them (the upstream TBF layout). */
  subnets: SubnetSelection | undefined;
}

const MAX_UINT32 = 0xffffffff;

/** Upstream validateRateAndBurst, same messages. */
export function validateRateAndBurst(rate: number, burst: number): void {
  if (burst === 0 && rate !== 0) throw new InvalidConfigError("if rate is set, burst must also be set");
  if (rate === 0 && burst !== 0) throw new InvalidConfigError("if burst is set, rate must also be set");
  if (Math.floor(burst / 8) >= MAX_UINT32) throw new InvalidConfigError("burst cannot be more than 4GB");
}

const KEYS = ["ingressRate", "ingressBurst", "egressRate", "egressBurst"] as const;

/**
 * Decodes and validates the config. The limits are validated on every command (as upstream); the
 * subnet lists not when loading for DEL (`forDel`: DEL, GC; invalid lists then count as none), so a
 * DEL always cleans up.
 */
export function loadBandwidthConfig(args: CmdArgs, opts: LoadOptions = {}): BandwidthConfig {
  const c = loadNetConf(bandwidthSchema, args);
  // Go: the embedded *BandwidthEntry is allocated as soon as one of its keys is present; only
  // otherwise is runtimeConfig.bandwidth used.
  const topLevel = KEYS.some((k) => c[k] !== undefined);
  const e = topLevel ? c : c.runtimeConfig?.bandwidth;
  const v = {
    ingressRate: e?.ingressRate ?? 0,
    ingressBurst: e?.ingressBurst ?? 0,
    egressRate: e?.egressRate ?? 0,
    egressBurst: e?.egressBurst ?? 0,
  };
  validateRateAndBurst(v.ingressRate, v.ingressBurst);
  validateRateAndBurst(v.egressRate, v.egressBurst);
  const lists = c.unshapedSubnets !== undefined || c.shapedSubnets !== undefined ? c : c.runtimeConfig?.bandwidth;
  const subnets = lenientForDel<SubnetSelection | undefined>(opts, undefined, () => parseSubnetLists(lists?.unshapedSubnets ?? [], lists?.shapedSubnets ?? []));
  return {
    name: c.name ?? "",
    bandwidth: {
      ingress: v.ingressRate > 0 && v.ingressBurst > 0 ? { rate: v.ingressRate, burst: v.ingressBurst } : undefined,
      egress: v.egressRate > 0 && v.egressBurst > 0 ? { rate: v.egressRate, burst: v.egressBurst } : undefined,
    },
    subnets,
  };
}
