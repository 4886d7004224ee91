/**
 * tap configuration (upstream plugins/main/tap NetConf at HEAD): the base NetConf plus `multiQueue`,
 * `mtu`, `mac`, `owner`, `group`, `selinuxContext`, `bridge`, and the MAC from config `mac` <
 * CNI_ARGS `MAC` < `runtimeConfig.mac`. `args` is accepted and ignored.
 */
import { parseCniArgs } from "../../shared/cni/args.ts";
import { t } from "../../shared/cni/decode.ts";
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import { loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import { dnsFromWire } from "../../shared/cni/result/common.ts";
import type { CmdArgs, DNS } from "../../shared/cni/types.ts";
import { resolveContainerMac } from "../../shared/cni/container-mac.ts";

const tapSchema = t.object("NetConf", {
  ...netConfFields,
  multiQueue: t.bool(),
  mtu: t.int(),
  mac: t.string(),
  owner: t.uint32(),
  group: t.uint32(),
  selinuxContext: t.string(),
  bridge: t.string(),
  runtimeConfig: t.object("RuntimeConfig", { mac: t.string() }),
});

export interface TapConf {
  multiQueue: boolean;
  /** 0 = kernel default. */
  mtu: number;
  mac: string | undefined;
  owner: number | undefined;
  group: number | undefined;
  selinuxContext: string;
  /** Bridge inside the container netns to enslave the tap to ("" = none). */
  bridge: string;
  ipamType: string;
  dns: DNS | undefined;
}

/**
 * Decodes and validates the config (CNI_ARGS included, as upstream does on every verb); `forDel`
 * relaxes nothing: upstream's DEL loads the config as strictly.
 */
export function loadTapConfig(args: CmdArgs, _opts: LoadOptions = {}): TapConf {
  const c = loadNetConf(tapSchema, args);
  const env = parseCniArgs(args.args, ["MAC"]);
  const parsedMac = resolveContainerMac({ config: c.mac, cniArgs: env.MAC, runtimeConfig: c.runtimeConfig?.mac });
  const mtu = c.mtu ?? 0;
  if (mtu < 0) throw new InvalidConfigError(`invalid MTU ${mtu}`);
  return {
    multiQueue: c.multiQueue ?? false,
    mtu,
    mac: parsedMac,
    owner: c.owner,
    group: c.group,
    selinuxContext: c.selinuxContext ?? "",
    bridge: c.bridge ?? "",
    ipamType: c.ipam?.type ?? "",
    dns: dnsFromWire(c.dns),
  };
}
