/**
 * vlan configuration (upstream plugins/main/vlan NetConf): the base NetConf plus `master`
 * (required), `vlanId` (0–4094), `mtu` (0..master MTU), `linkInContainer`; beyond upstream (#492),
 * the link's MAC from CNI_ARGS `MAC` < `runtimeConfig.mac` ({@link runtimeContainerMac}).
 */
import { runtimeContainerMac } from "../../shared/cni/container-mac.ts";
import { t } from "../../shared/cni/decode.ts";
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import { lenientForDel, loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import { dnsFromWire } from "../../shared/cni/result/common.ts";
import type { CmdArgs, DNS } from "../../shared/cni/types.ts";

const vlanSchema = t.object("NetConf", {
  ...netConfFields,
  master: t.string(),
  vlanId: t.int(),
  mtu: t.int(),
  linkInContainer: t.bool(),
  runtimeConfig: t.object("RuntimeConfig", { mac: t.string() }),
});

export interface VlanConf {
  master: string;
  vlanId: number;
  /** 0 = the master's MTU. */
  mtu: number;
  linkInContainer: boolean;
  /** MAC for the VLAN link (normalised), if CNI_ARGS or runtimeConfig set one. */
  mac: string | undefined;
  ipamType: string;
  dns: DNS | undefined;
}

/**
 * Decodes and validates the config; no kernel lookups. `forDel` (DEL, STATUS, GC): the values are not
 * validated (a missing master, a VLAN ID, MTU or MAC out of range does not fail the call; the MAC is
 * then dropped).
 */
export function loadVlanConfig(args: CmdArgs, opts: LoadOptions = {}): VlanConf {
  const c = loadNetConf(vlanSchema, args);
  const master = c.master ?? "";
  lenientForDel(opts, undefined, () => {
    if (master === "") throw new InvalidConfigError('"master" field is required. It specifies the host interface name to create the VLAN for');
  });
  const vlanId = c.vlanId ?? 0;
  lenientForDel(opts, undefined, () => {
    if (vlanId < 0 || vlanId > 4094) throw new InvalidConfigError(`invalid VLAN ID ${vlanId} (must be between 0 and 4094 inclusive)`);
  });
  const mtu = c.mtu ?? 0;
  lenientForDel(opts, undefined, () => {
    if (mtu < 0) throw new InvalidConfigError(`invalid MTU ${mtu}, must be [0, master MTU]`);
  });
  return {
    master,
    vlanId,
    mtu,
    linkInContainer: c.linkInContainer ?? false,
    mac: lenientForDel(opts, undefined, () => runtimeContainerMac(args, c.runtimeConfig?.mac)),
    ipamType: c.ipam?.type ?? "",
    dns: dnsFromWire(c.dns),
  };
}
