/**
 * tuning configuration (upstream plugins/meta/tuning TuningConf): sysctl map, mac, promisc, mtu,
 * txQLen, allmulti, dataDir, runtimeConfig.mac, args.cni overrides and the CNI_ARGS `MAC` key,
 * merged with upstream's precedence.
 */
import { parseCniArgs } from "../../shared/cni/args.ts";
import { t } from "../../shared/cni/decode.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import { invalidMacMessage, parseMacAddress } from "../../shared/ip/mac-address.ts";

export const DEFAULT_DATA_DIR = "/run/cni/tuning";

const argsCniSchema = t.object("IPAMArgs", {
  sysctl: t.map(t.string()),
  mac: t.string(),
  promisc: t.bool(),
  mtu: t.int(),
  allmulti: t.bool(),
  txQLen: t.int(),
});

const tuningSchema = t.object("TuningConf", {
  ...netConfFields,
  dataDir: t.path(),
  sysctl: t.map(t.string()),
  mac: t.string(),
  promisc: t.bool(),
  mtu: t.int(),
  txQLen: t.int(),
  allmulti: t.bool(),
  runtimeConfig: t.object("TuningConf", { mac: t.string() }),
  args: t.object("TuningConf", { cni: argsCniSchema }),
});

/** The merged tuning configuration. Optional attributes are undefined when not configured. */
export interface TuningConfig {
  /** The network name (recorded in the backup file for GC). */
  network: string;
  dataDir: string;
  /** Keys in config order, args.cni entries merged in (they win). */
  sysctl: Map<string, string>;
  /** The MAC as configured (raw text, as upstream writes it into the result); "" = unset. */
  mac: string;
  /** true turns promiscuous mode on; false leaves it alone on ADD (and means "must be off" on CHECK). */
  promisc: boolean;
  /** 0 = unset. */
  mtu: number;
  txQLen: number | undefined;
  allmulti: boolean | undefined;
}

/** True when ADD changes link attributes (and so writes upstream's backup file). */
export function changesLink(c: TuningConfig): boolean {
  return c.mac !== "" || c.mtu !== 0 || c.promisc || c.allmulti !== undefined || c.txQLen !== undefined;
}

/** The normalised MAC, or upstream's error `invalid args <mac> for MAC addr: address <mac>: invalid MAC address`. */
export function requireMac(mac: string): string {
  const parsed = parseMacAddress(mac);
  if (parsed === undefined) throw new InternalError(`invalid args ${mac} for MAC addr: ${invalidMacMessage(mac)}`);
  return parsed;
}

/**
 * Upstream parseConf: decode (`failed to load netconf: …`), default dataDir, then MAC from
 * CNI_ARGS `MAC`, then runtimeConfig.mac, then args.cni (which also overrides sysctl entries,
 * promisc, mtu, allmulti, txQLen). `forDel` relaxes nothing: upstream's DEL parses the config as
 * strictly.
 */
export function loadTuningConfig(args: CmdArgs, _opts: LoadOptions = {}): TuningConfig {
  const c = loadNetConf(tuningSchema, args);
  const conf: TuningConfig = {
    network: c.name ?? "",
    dataDir: c.dataDir !== undefined && c.dataDir !== "" ? c.dataDir : DEFAULT_DATA_DIR,
    sysctl: new Map(Object.entries(c.sysctl ?? {})),
    mac: c.mac ?? "",
    promisc: c.promisc ?? false,
    mtu: c.mtu ?? 0,
    txQLen: c.txQLen,
    allmulti: c.allmulti,
  };
  const env = parseCniArgs(args.args, ["MAC"]);
  if (env.MAC !== undefined && env.MAC !== "") conf.mac = env.MAC;
  const rc = c.runtimeConfig?.mac;
  if (rc !== undefined && rc !== "") conf.mac = rc;
  const a = c.args?.cni;
  if (a !== undefined) {
    for (const [k, v] of Object.entries(a.sysctl ?? {})) conf.sysctl.set(k, v);
    if (a.mac !== undefined) conf.mac = a.mac;
    if (a.promisc !== undefined) conf.promisc = a.promisc;
    if (a.mtu !== undefined) conf.mtu = a.mtu;
    if (a.allmulti !== undefined) conf.allmulti = a.allmulti;
    if (a.txQLen !== undefined) conf.txQLen = a.txQLen;
  }
  return conf;
}
