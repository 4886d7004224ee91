/**
 * The bridge plugin's network configuration (upstream plugins/main/bridge NetConf): decoding with
 * Go semantics, defaults, validation, and the container MAC chosen from CNI_ARGS `MAC` <
 * `args.cni.mac` < `runtimeConfig.mac` (later wins).
 *
 * Values are validated up front (also some upstream accepts, DIFFERENCES.md); config errors are
 * code 7, with upstream's text where upstream has one.
 */
import { parseCniArgs } from "../../shared/cni/args.ts";
import { getField, isObject, t, type Infer } from "../../shared/cni/decode.ts";
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import { lenientForDel, loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import { dnsFromWire } from "../../shared/cni/result/common.ts";
import { parseMacAddress } from "../../shared/ip/mac-address.ts";
import type { CmdArgs, DNS } from "../../shared/cni/types.ts";
import { collectVlanTrunk, validateAccessVlan } from "./vlan.ts";

export const DEFAULT_BRIDGE_NAME = "cni0";

/** Linux IFNAMSIZ - 1. */
const MAX_IFNAME_LEN = 15;

const trunkEntrySchema = t.object("VlanTrunk", { minID: t.int(), maxID: t.int(), id: t.int() });

const bridgeConfSchema = t.object("NetConf", {
  ...netConfFields,
  bridge: t.string(),
  isGateway: t.bool(),
  isDefaultGateway: t.bool(),
  forceAddress: t.bool(),
  ipMasq: t.bool(),
  ipMasqBackend: t.string(),
  mtu: t.int(),
  hairpinMode: t.bool(),
  promiscMode: t.bool(),
  vlan: t.int(),
  vlanTrunk: t.array(trunkEntrySchema),
  preserveDefaultVlan: t.bool(),
  macspoofchk: t.bool(),
  enabledad: t.bool(),
  disableContainerInterface: t.bool(),
  portIsolation: t.bool(),
  args: t.object("Args", { cni: t.object("BridgeArgs", { mac: t.string() }) }),
  runtimeConfig: t.object("RuntimeConfig", { mac: t.string() }),
});

type WireConf = Infer<typeof bridgeConfSchema>;

/** The validated configuration, defaults applied. */
export interface BridgeConf {
  name: string;
  cniVersion: string;
  bridge: string;
  isGateway: boolean;
  isDefaultGateway: boolean;
  forceAddress: boolean;
  ipMasq: boolean;
  /** Raw `ipMasqBackend` ("" when unset); parsed by the firewall layer. */
  ipMasqBackend: string;
  /** 0 = kernel default. */
  mtu: number;
  hairpinMode: boolean;
  promiscMode: boolean;
  /** Access VLAN (PVID, untagged); 0 = none. */
  vlan: number;
  /** Trunk VIDs (tagged); undefined when `vlanTrunk` is absent. */
  vlanTrunk: number[] | undefined;
  preserveDefaultVlan: boolean;
  macspoofchk: boolean;
  enabledad: boolean;
  disableContainerInterface: boolean;
  portIsolation: boolean;
  /** Container MAC (lower-case, colon separated), if requested. */
  mac: string | undefined;
  /** `ipam.type`; "" means L2-only. */
  ipamType: string;
  /** True when the config's `dns` has any field set (upstream dnsConfSet; an empty list counts). */
  dnsOverride: boolean;
  /** The config's `dns` (empty lists dropped). */
  dns: DNS | undefined;
}

/** True when the bridge must be created with vlan_filtering (vlan set, or any vlanTrunk list). */
export function wantsVlanFiltering(c: BridgeConf): boolean {
  return c.vlan !== 0 || c.vlanTrunk !== undefined;
}

/** True when the port gets VLAN entries (and loses its default ones unless preserveDefaultVlan). */
export function hasPortVlans(c: BridgeConf): boolean {
  return c.vlan !== 0 || (c.vlanTrunk !== undefined && c.vlanTrunk.length > 0);
}

/** Validates an interface name the kernel would accept (dev_valid_name). */
export function validateBridgeName(name: string): void {
  if (name === "" || name === "." || name === "..") throw new InvalidConfigError(`invalid bridge name ${JSON.stringify(name)}`);
  if (new TextEncoder().encode(name).byteLength > MAX_IFNAME_LEN) {
    throw new InvalidConfigError(`bridge name ${JSON.stringify(name)} is too long (at most ${MAX_IFNAME_LEN} bytes)`);
  }
  if (/[/:\s]/.test(name)) throw new InvalidConfigError(`invalid bridge name ${JSON.stringify(name)}`);
}

function chooseMac(args: CmdArgs, wire: WireConf): string | undefined {
  let mac: string | undefined;
  const env = parseCniArgs(args.args, ["MAC"]);
  if (env.MAC !== undefined && env.MAC !== "") mac = env.MAC;
  const fromArgs = wire.args?.cni?.mac;
  if (fromArgs !== undefined && fromArgs !== "") mac = fromArgs;
  const fromRuntime = wire.runtimeConfig?.mac;
  if (fromRuntime !== undefined && fromRuntime !== "") mac = fromRuntime;
  if (mac === undefined) return undefined;
  const parsed = parseMacAddress(mac);
  if (parsed === undefined) throw new InvalidConfigError(`invalid MAC address ${JSON.stringify(mac)}`);
  return parsed;
}

function ipamTypeFrom(config: Record<string, unknown>): string {
  const ipam = getField(config, "ipam");
  if (!isObject(ipam)) return "";
  const type = getField(ipam, "type");
  return typeof type === "string" ? type : "";
}

/**
 * Loads and validates the bridge config of this invocation. `forDel` (DEL, STATUS, GC): the VLAN
 * ranges, MTU, MAC and bridge name may be invalid, so that a config that became invalid can still
 * be torn down; the offending values fall back to neutral ones.
 */
export function loadBridgeConfig(args: CmdArgs, opts: LoadOptions = {}): BridgeConf {
  const wire = loadNetConf(bridgeConfSchema, args);

  const bridge = wire.bridge === undefined || wire.bridge === "" ? DEFAULT_BRIDGE_NAME : wire.bridge;
  lenientForDel(opts, undefined, () => validateBridgeName(bridge));
  const vlan = wire.vlan ?? 0;
  lenientForDel(opts, undefined, () => validateAccessVlan(vlan));
  const vlanTrunk = lenientForDel(opts, undefined, () => collectVlanTrunk(wire.vlanTrunk));
  const mtu = wire.mtu ?? 0;
  lenientForDel(opts, undefined, () => {
    if (mtu < 0) throw new InvalidConfigError(`invalid MTU ${mtu} (must be 0 for the kernel default, or positive)`);
  });
  const mac = lenientForDel(opts, undefined, () => chooseMac(args, wire));
  const isDefaultGateway = wire.isDefaultGateway ?? false;

  const w = wire.dns;
  const dnsOverride = w !== undefined && (w.nameservers !== undefined || w.search !== undefined || w.options !== undefined || (w.domain ?? "") !== "");

  return {
    name: wire.name ?? "",
    cniVersion: args.cniVersion,
    bridge,
    isGateway: (wire.isGateway ?? false) || isDefaultGateway,
    isDefaultGateway,
    forceAddress: wire.forceAddress ?? false,
    ipMasq: wire.ipMasq ?? false,
    ipMasqBackend: wire.ipMasqBackend ?? "",
    mtu: mtu < 0 ? 0 : mtu,
    hairpinMode: wire.hairpinMode ?? false,
    promiscMode: wire.promiscMode ?? false,
    vlan: vlan < 0 || vlan > 4094 ? 0 : vlan,
    vlanTrunk,
    preserveDefaultVlan: wire.preserveDefaultVlan ?? false,
    macspoofchk: wire.macspoofchk ?? false,
    enabledad: wire.enabledad ?? false,
    disableContainerInterface: wire.disableContainerInterface ?? false,
    portIsolation: wire.portIsolation ?? false,
    mac,
    ipamType: ipamTypeFrom(args.config),
    dnsOverride,
    dns: dnsFromWire(w),
  };
}
