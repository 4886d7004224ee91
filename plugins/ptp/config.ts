/**
 * ptp configuration (upstream plugins/main/ptp NetConf): the base NetConf plus `ipMasq`,
 * `ipMasqBackend` and `mtu`; beyond upstream (#492), `runtimeConfig.mac` (capability `mac`), read by
 * ADD with CNI_ARGS `MAC` ({@link runtimeContainerMac}).
 */
import { loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import { t } from "../../shared/cni/decode.ts";
import type { CmdArgs, DNS } from "../../shared/cni/types.ts";

const ptpSchema = t.object("NetConf", {
  ...netConfFields,
  ipMasq: t.bool(),
  ipMasqBackend: t.string(),
  mtu: t.int(),
  runtimeConfig: t.object("RuntimeConfig", { mac: t.string() }),
});

/** The validated, defaulted ptp configuration. */
export interface PtpConfig {
  /** Network name (ipMasq chain/comment input). */
  name: string;
  ipamType: string;
  ipMasq: boolean;
  /** Raw `ipMasqBackend` (validated by the firewall layer when ipMasq is used). */
  ipMasqBackend: string | undefined;
  /** MTU of both veth ends; 0 = kernel default. */
  mtu: number;
  /** `runtimeConfig.mac`, unvalidated (ADD resolves it with CNI_ARGS `MAC`; DEL ignores it). */
  runtimeMac: string | undefined;
  /** The config's `dns`, only when at least one field is set (upstream dnsConfSet). */
  dns: DNS | undefined;
}

/**
 * Upstream dnsConfSet: any present list (even empty) or a non-empty domain counts as "set", so
 * `{"nameservers": []}` replaces the IPAM DNS with an empty one.
 */
export function configuredDns(d: { nameservers?: string[]; domain?: string; search?: string[]; options?: string[] } | undefined): DNS | undefined {
  if (d === undefined) return undefined;
  const set = d.nameservers !== undefined || d.search !== undefined || d.options !== undefined || (d.domain ?? "") !== "";
  if (!set) return undefined;
  const out: DNS = {};
  if (d.nameservers !== undefined) out.nameservers = [...d.nameservers];
  if (d.domain !== undefined && d.domain !== "") out.domain = d.domain;
  if (d.search !== undefined) out.search = [...d.search];
  if (d.options !== undefined) out.options = [...d.options];
  return out;
}

/**
 * Decodes the config (`failed to load netconf: …`, code 7, on type errors). It checks no values
 * (ADD and CHECK check `ipMasqBackend`), so `forDel` has nothing to relax: upstream's DEL decodes
 * the config as strictly.
 */
export function loadPtpConfig(args: CmdArgs, _opts: LoadOptions = {}): PtpConfig {
  const c = loadNetConf(ptpSchema, args);
  return {
    name: c.name ?? "",
    ipamType: c.ipam?.type ?? "",
    ipMasq: c.ipMasq ?? false,
    ipMasqBackend: c.ipMasqBackend,
    mtu: c.mtu ?? 0,
    runtimeMac: c.runtimeConfig?.mac,
    dns: configuredDns(c.dns),
  };
}
