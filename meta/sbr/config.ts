/**
 * sbr configuration (upstream plugins/meta/sbr PluginConf at HEAD): the base
 * NetConf plus `table`, `gateways` (at most one static gateway per family) and `addSourceHints`,
 * and the selection of the prevResult addresses that belong to CNI_IFNAME.
 */
import { decode, t, type Infer } from "../../shared/cni/decode.ts";
import { CniError, InternalError, InvalidConfigError } from "../../shared/cni/errors.ts";
import { netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import type { CmdArgs, IPConfig, Result } from "../../shared/cni/types.ts";
import { formatIP, parseIP, type IPAddr } from "../../shared/ip/addr.ts";
import { parseCIDR, type CIDR } from "../../shared/ip/cidr.ts";

const sbrSchema = t.object("PluginConf", {
  ...netConfFields,
  table: t.int(),
  gateways: t.array(t.string()),
  addSourceHints: t.bool(),
});

export interface SbrConfig {
  /** Fixed table: only rules are added, no routes touched. */
  table: number | undefined;
  /** Static gateway per family (overrides the prevResult gateway of that family). */
  gateway4: IPAddr | undefined;
  gateway6: IPAddr | undefined;
  addSourceHints: boolean;
}

function decodeWire(args: CmdArgs): Infer<typeof sbrSchema> {
  try {
    return decode(sbrSchema, args.config);
  } catch (err) {
    if (err instanceof CniError) throw new InvalidConfigError(`failed to parse network configuration: ${err.message}`, { cause: err });
    throw err;
  }
}

/**
 * Decodes and validates the config (`failed to parse network configuration: …` on type errors);
 * `forDel` relaxes nothing: upstream's DEL parses the config as strictly.
 */
export function loadSbrConfig(args: CmdArgs, _opts: LoadOptions = {}): SbrConfig {
  const c = decodeWire(args);
  const conf: SbrConfig = { table: c.table, gateway4: undefined, gateway6: undefined, addSourceHints: c.addSourceHints ?? false };
  const gws = (c.gateways ?? []).filter((g): g is string => g !== undefined);
  if (gws.length > 2) throw new InvalidConfigError("gateways list cannot contain more than 2 entries (one IPv4, one IPv6)");
  for (const text of gws) {
    const ip = parseIP(text);
    if (ip === null) throw new InvalidConfigError(`invalid static gateway IP address: ${text}`);
    if (ip.family === 4) {
      if (conf.gateway4 !== undefined) throw new InvalidConfigError(`gateways list contains multiple IPv4 addresses: ${formatIP(conf.gateway4)} and ${text}`);
      conf.gateway4 = ip;
    } else {
      if (conf.gateway6 !== undefined) throw new InvalidConfigError(`gateways list contains multiple IPv6 addresses: ${formatIP(conf.gateway6)} and ${text}`);
      conf.gateway6 = ip;
    }
  }
  if (conf.table !== undefined && (conf.table <= 0 || conf.table > 0xffffffff)) {
    throw new InvalidConfigError(`invalid table ${conf.table}: must be between 1 and 4294967295`);
  }
  return conf;
}

/** One address sbr routes by source. */
export interface SbrAddress {
  /** The address with its prefix (host bits kept). */
  cidr: CIDR;
  gateway: IPAddr | undefined;
}

/**
 * Upstream getIPCfgs: the prevResult addresses with no interface index, an out-of-range one, or
 * one naming CNI_IFNAME. No addresses at all → `No IP addresses supplied on interface: <if>`.
 */
export function relevantAddresses(prev: Result, ifName: string): SbrAddress[] {
  const ips: IPConfig[] = prev.ips ?? [];
  if (ips.length === 0) throw new InternalError(`No IP addresses supplied on interface: ${ifName}`);
  const ifaces = prev.interfaces ?? [];
  const out: SbrAddress[] = [];
  for (const ipc of ips) {
    const idx = ipc.interface;
    if (idx !== undefined && idx >= 0 && idx < ifaces.length && ifaces[idx]!.name !== ifName) continue;
    const cidr = parseCIDR(ipc.address);
    if (cidr === null) throw new InternalError(`invalid address ${ipc.address} in prevResult`);
    const gateway = ipc.gateway !== undefined && ipc.gateway !== "" ? (parseIP(ipc.gateway) ?? undefined) : undefined;
    out.push({ cidr, gateway });
  }
  return out;
}
