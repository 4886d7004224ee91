/**
 * host-local configuration: upstream's `allocator.Net` with host-local's `ipam.dataDir`, the
 * directory of its store. Everything else (ranges, routes, requested addresses, validation with
 * upstream's messages) is the shared allocator configuration, shared/ipam/config.ts.
 */
import { decode, t } from "../../shared/cni/decode.ts";
import type { LoadOptions } from "../../shared/cni/netconf.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import { allocatorIpamFields, allocatorNetFields, goStruct, loadAllocatorConfig, pathField, type AllocatorConfig } from "../../shared/ipam/config.ts";
import { DEFAULT_DATA_DIR } from "./store/disk.ts";

/** The validated host-local configuration. */
export interface IPAMConfig extends AllocatorConfig {
  /** Store root (`/var/lib/cni/networks` by default; may be relative, like upstream). */
  dataDir: string;
}

const ipamSchema = goStruct("allocator.IPAMConfig", t.object("IPAMConfig", { ...allocatorIpamFields, dataDir: t.string() }));
const netSchema = t.object("Net", { ...allocatorNetFields, ipam: ipamSchema });

/**
 * Loads and validates the host-local configuration from the plugin's stdin object and CNI_ARGS.
 * Throws InvalidConfigError (code 7) with upstream's messages, or InvalidEnvError for CNI_ARGS.
 * `forDel` relaxes nothing: upstream's DEL loads the config as strictly.
 */
export function loadHostLocalConfig(args: Pick<CmdArgs, "config" | "args">, _opts: LoadOptions = {}): IPAMConfig {
  const net = decode(netSchema, args.config);
  const base = loadAllocatorConfig(net, net.ipam, args.args);
  return { ...base, dataDir: pathField("dataDir", net.ipam?.dataDir) ?? DEFAULT_DATA_DIR };
}
