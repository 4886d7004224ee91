/**
 * macvlan configuration (upstream plugins/main/macvlan NetConf): the base NetConf plus `master`,
 * `mode`, `mtu`, `mac`, `linkInContainer`, `bcqueuelen`; the MAC comes from config `mac` < CNI_ARGS
 * `MAC` < `runtimeConfig.mac` (later wins). Without `master`, a chained prevResult may name it
 * ({@link chainedMasterName}, beyond upstream: #901).
 *
 * Value errors (mode, MAC, negative MTU) are code 7 with upstream's text. The master and its MTU are
 * resolved separately ({@link resolveMaster}), because DEL and STATUS must work without them.
 */
import { parseCniArgs } from "../../shared/cni/args.ts";
import { t } from "../../shared/cni/decode.ts";
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import { lenientForDel, loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import { prevResultFrom } from "../../shared/cni/result/prevresult.ts";
import { dnsFromWire } from "../../shared/cni/result/common.ts";
import type { CmdArgs, DNS, Result } from "../../shared/cni/types.ts";
import { lookupMaster } from "../../shared/iface/container-link.ts";
import { defaultRouteInterface } from "../../shared/iface/default-route.ts";
import { resolveContainerMac } from "../../shared/cni/container-mac.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";

const macvlanSchema = t.object("NetConf", {
  ...netConfFields,
  master: t.string(),
  mode: t.string(),
  mtu: t.int(),
  mac: t.string(),
  linkInContainer: t.bool(),
  bcqueuelen: t.uint32(),
  runtimeConfig: t.object("RuntimeConfig", { mac: t.string() }),
});

/** The modes the plugin accepts (upstream modeFromString; "" means bridge). */
export const MACVLAN_PLUGIN_MODES = ["bridge", "private", "vepa", "passthru"] as const;
export type MacvlanPluginMode = (typeof MACVLAN_PLUGIN_MODES)[number];

export interface MacvlanConf {
  /** Configured master; "" = the interface of the default route. */
  master: string;
  mode: MacvlanPluginMode;
  /** 0 = inherit the master's MTU. */
  mtu: number;
  /** MAC for the macvlan (normalised), if any source set one. */
  mac: string | undefined;
  /** The master lives in the container's netns (create the macvlan there). */
  linkInContainer: boolean;
  /** IFLA_MACVLAN_BC_QUEUE_LEN; 0 = kernel default. */
  bcQueueLen: number;
  /** `ipam.type`; "" = L2 only. */
  ipamType: string;
  /** The config's `dns`, copied into the result. */
  dns: DNS | undefined;
  /** The parsed prevResult, when chained. */
  prevResult: Result | undefined;
}

/** `unknown macvlan mode: "x"` for anything but the four modes. */
export function parseMacvlanMode(mode: string | undefined): MacvlanPluginMode {
  if (mode === undefined || mode === "") return "bridge";
  const found = MACVLAN_PLUGIN_MODES.find((m) => m === mode);
  if (found === undefined) throw new InvalidConfigError(`unknown macvlan mode: ${JSON.stringify(mode)}`);
  return found;
}

/**
 * Decodes and validates the config; no kernel lookups. `forDel` (DEL, STATUS, GC): the values are not
 * validated (an unknown mode counts as bridge; a bad MAC, CNI_ARGS or prevResult is dropped; a
 * negative MTU is kept).
 */
export function loadMacvlanConfig(args: CmdArgs, opts: LoadOptions = {}): MacvlanConf {
  const c = loadNetConf(macvlanSchema, args);
  const mode = lenientForDel<MacvlanPluginMode>(opts, "bridge", () => parseMacvlanMode(c.mode));
  const parsedMac = lenientForDel(opts, undefined, () => {
    const env = parseCniArgs(args.args, ["MAC"]);
    return resolveContainerMac({ config: c.mac, cniArgs: env.MAC, runtimeConfig: c.runtimeConfig?.mac });
  });
  const mtu = c.mtu ?? 0;
  lenientForDel(opts, undefined, () => {
    if (mtu < 0) throw new InvalidConfigError(`invalid MTU ${mtu}, must be [0, master MTU]`);
  });
  return {
    master: c.master ?? "",
    mode,
    mtu,
    mac: parsedMac,
    linkInContainer: c.linkInContainer ?? false,
    bcQueueLen: c.bcqueuelen ?? 0,
    ipamType: c.ipam?.type ?? "",
    dns: dnsFromWire(c.dns),
    prevResult: lenientForDel(opts, undefined, () => prevResultFrom(args)),
  };
}

/**
 * The master a chained prevResult names (#901), when `master` is not configured: among the
 * prevResult's named interfaces on the master's side — in a sandbox with `linkInContainer`, in the
 * host (no sandbox) without — the first one an address of the prevResult is on, else the first;
 * never the attachment's own interface (CNI_IFNAME in CNI_NETNS: CHECK's prevResult holds it).
 * Undefined when there is none (the default-route interface is used, as without a prevResult).
 */
export function chainedMasterName(prev: Result | undefined, linkInContainer: boolean, own: { ifName: string; netns: string }): string | undefined {
  const ifaces = prev?.interfaces ?? [];
  const onSide = (i: number): boolean => {
    const iface = ifaces[i];
    if (iface === undefined || iface.name === "") return false;
    const sandbox = iface.sandbox ?? "";
    if (iface.name === own.ifName && sandbox === own.netns) return false;
    return (sandbox !== "") === linkInContainer;
  };
  const addressed = (prev?.ips ?? []).map((ip) => ip.interface).find((i) => i !== undefined && onSide(i));
  const index = addressed ?? ifaces.findIndex((_, i) => onSide(i));
  return index >= 0 ? ifaces[index]?.name : undefined;
}

/**
 * The master link, looked up through `nl` (the host's handle, or the container's with
 * linkInContainer): the configured name, else the chained prevResult's ({@link chainedMasterName}),
 * else the default-route interface. The MTU must be within [0, master MTU]:
 * `invalid MTU %d, must be [0, master MTU(%d)]`.
 */
export function resolveMaster(conf: MacvlanConf, args: CmdArgs, nl: Handle): Link {
  const name = conf.master !== "" ? conf.master : (chainedMasterName(conf.prevResult, conf.linkInContainer, args) ?? defaultRouteInterface(nl));
  return lookupMaster(nl, name, conf.mtu);
}
