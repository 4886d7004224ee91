/**
 * ipvlan configuration (upstream plugins/main/ipvlan NetConf): the base NetConf plus `master`,
 * `mode` (l2, l3, l3s), `mtu`, `linkInContainer`. When chained (a prevResult and no IPAM type), the
 * prevResult's IPs are configured and its single interface is the default master.
 */
import { t } from "../../shared/cni/decode.ts";
import { InternalError, InvalidConfigError } from "../../shared/cni/errors.ts";
import { lenientForDel, loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import { prevResultFrom } from "../../shared/cni/result/prevresult.ts";
import { dnsFromWire } from "../../shared/cni/result/common.ts";
import type { CmdArgs, DNS, Result } from "../../shared/cni/types.ts";
import { defaultRouteInterface } from "../../shared/iface/default-route.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { IpvlanMode } from "../../shared/netlink/link-add.ts";

const ipvlanSchema = t.object("NetConf", {
  ...netConfFields,
  master: t.string(),
  mode: t.string(),
  mtu: t.int(),
  linkInContainer: t.bool(),
});

export interface IpvlanConf {
  /** Configured master ("" = chained master or default-route interface). */
  master: string;
  mode: IpvlanMode;
  mtu: number;
  linkInContainer: boolean;
  ipamType: string;
  dns: DNS | undefined;
  /** The parsed prevResult, when present. */
  prevResult: Result | undefined;
}

/** `unknown ipvlan mode: "x"` for anything but l2 (also ""), l3, l3s. */
export function parseIpvlanMode(mode: string | undefined): IpvlanMode {
  switch (mode ?? "") {
    case "":
    case "l2":
      return "l2";
    case "l3":
      return "l3";
    case "l3s":
      return "l3s";
    default:
      throw new InvalidConfigError(`unknown ipvlan mode: ${JSON.stringify(mode)}`);
  }
}

/**
 * Decodes and validates the config, including the prevResult. `forDel` (DEL, STATUS, GC): the values
 * are not validated (an unknown mode counts as l2, a bad prevResult is dropped, a negative MTU is
 * kept).
 */
export function loadIpvlanConfig(args: CmdArgs, opts: LoadOptions = {}): IpvlanConf {
  const c = loadNetConf(ipvlanSchema, args);
  const mode = lenientForDel<IpvlanMode>(opts, "l2", () => parseIpvlanMode(c.mode));
  const mtu = c.mtu ?? 0;
  lenientForDel(opts, undefined, () => {
    if (mtu < 0) throw new InvalidConfigError(`invalid MTU ${mtu}, must be [0, master MTU]`);
  });
  const prevResult = lenientForDel(opts, undefined, () => prevResultFrom(args));
  return {
    master: c.master ?? "",
    mode,
    mtu,
    linkInContainer: c.linkInContainer ?? false,
    ipamType: c.ipam?.type ?? "",
    dns: dnsFromWire(c.dns),
    prevResult,
  };
}

/**
 * The master's name: configured; else, when chained, the prevResult's single named interface
 * (`chained master failure. PrevResult lacks a single named interface`); else the default-route
 * interface seen through `nl`.
 */
export function ipvlanMasterName(conf: IpvlanConf, nl: Handle): string {
  if (conf.master !== "") return conf.master;
  if (conf.prevResult !== undefined) {
    const ifaces = conf.prevResult.interfaces ?? [];
    const only = ifaces[0];
    if (ifaces.length === 1 && only !== undefined && only.name !== "") return only.name;
    throw new InternalError("chained master failure. PrevResult lacks a single named interface");
  }
  return defaultRouteInterface(nl);
}
