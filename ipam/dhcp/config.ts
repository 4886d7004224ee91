/**
 * The dhcp IPAM config (upstream plugins/ipam/dhcp/main.go + options.go): `ipam.daemonSocketPath`,
 * `ipam.provide`, `ipam.request`, `ipam.priority`, and ours (a Go daemon ignores them):
 * - `ipam.ipFamilies`: `["ipv4"]` (default, upstream's behaviour), `["ipv6"]` (DHCPv6 only) or both
 *   (dual-stack: one DHCPv4 and one DHCPv6 lease, both released on DEL);
 * - `ipam.ipv6PrefixLength`: prefix length given to the DHCPv6 address in the result (default 128:
 *   DHCPv6 hands out addresses, not prefixes; the network's router advertisements make the subnet
 *   on-link). Set e.g. 64 to put the subnet on-link without RAs;
 * - `ipam.applyMtu`: request option 26 (interface MTU) and set it on the container interface; the
 *   result's interface then carries `mtu`.
 * Parsed by the plugin (to fail early, without the daemon) and again by the daemon from the
 * forwarded stdin bytes.
 */
import { parseCniArgsLenient } from "../../shared/cni/args.ts";
import { decode, t } from "../../shared/cni/decode.ts";
import { CniError, InvalidConfigError, messageOf } from "../../shared/cni/errors.ts";
import { goQuote } from "../../shared/cni/go-quote.ts";
import type { LoadOptions } from "../../shared/cni/netconf.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import {
  OPT_CLIENT_ID,
  OPT_DNS_SERVERS,
  OPT_DOMAIN_NAME,
  OPT_DOMAIN_SEARCH,
  OPT_HOST_NAME,
  OPT_INTERFACE_MTU,
  OPT_ROUTER,
  OPT_SUBNET_MASK,
  OPT_USER_CLASS,
  OPT_VENDOR_CLASS_ID,
} from "./packet.ts";

export const DEFAULT_SOCKET_PATH = "/run/cni/dhcp.sock";

/** Longest value of one provided option (one DHCP option holds at most 255 bytes). */
const MAX_OPTION_VALUE = 255;

/** Upstream's fixed option-name table; anything else must be a decimal 0–255. */
const OPTION_NAMES: Readonly<Record<string, number>> = {
  "dhcp-client-identifier": OPT_CLIENT_ID,
  "subnet-mask": OPT_SUBNET_MASK,
  routers: OPT_ROUTER,
  "host-name": OPT_HOST_NAME,
  "user-class": OPT_USER_CLASS,
  "vendor-class-identifier": OPT_VENDOR_CLASS_ID,
};

const ProvideWire = t.object("main.ProvideOption", { option: t.string(), value: t.string(), fromArg: t.string() });
const RequestWire = t.object("main.RequestOption", { option: t.string(), skipDefault: t.bool() });
const IPAMWire = t.object("main.IPAMConfig", {
  type: t.string(),
  daemonSocketPath: t.path(),
  provide: t.array(ProvideWire),
  request: t.array(RequestWire),
  priority: t.int(),
  ipFamilies: t.array(t.string()),
  ipv6PrefixLength: t.int(),
  applyMtu: t.bool(),
});
const NetWire = t.object("main.NetConf", { name: t.string(), cniVersion: t.string(), ipam: IPAMWire });

export interface DhcpConfig {
  /** Network name (part of the client identifier). */
  network: string;
  socketPath: string;
  /** Options to send, code → bytes, in order (later entries with the same code win). */
  provide: Map<number, Uint8Array>;
  /** Parameter request list (option 55), in order, deduplicated. */
  request: number[];
  /** Metric for every route (0 = unset). */
  priority: number;
  /** Address families to lease, in result order (v4 first). */
  families: (4 | 6)[];
  /** Prefix length of the DHCPv6 address in the result. */
  ipv6PrefixLength: number;
  /** Apply option 26 to the container interface. */
  applyMtu: boolean;
}

/** Options requested unless `skipDefault`: upstream's two, and what the result's `dns` is made of. */
const DEFAULT_REQUEST = [OPT_ROUTER, OPT_SUBNET_MASK, OPT_DNS_SERVERS, OPT_DOMAIN_NAME, OPT_DOMAIN_SEARCH];

/** `ipam.ipFamilies` as family numbers, v4 first; code 7 for anything but "ipv4"/"ipv6". */
function families(list: readonly (string | undefined)[] | undefined): (4 | 6)[] {
  if (list === undefined || list.length === 0) return [4];
  const out = new Set<4 | 6>();
  for (const f of list) {
    const name = (f ?? "").toLowerCase();
    if (name !== "ipv4" && name !== "ipv6") {
      throw new InvalidConfigError(`ipam.ipFamilies: unknown family ${JSON.stringify(f ?? null)} (want "ipv4" and/or "ipv6")`);
    }
    out.add(name === "ipv4" ? 4 : 6);
  }
  return [...out].sort();
}

export class OptionParseError extends InvalidConfigError {
  override name = "OptionParseError";
}

/** Option code of a name from upstream's table or a decimal 0–255 (upstream's error text). */
export function parseOptionName(option: string): number {
  const named = Object.hasOwn(OPTION_NAMES, option) ? OPTION_NAMES[option] : undefined;
  if (named !== undefined) return named;
  if (/^[0-9]+$/.test(option) && Number(option) <= 255) return Number(option);
  const why = /^[0-9]+$/.test(option) ? "value out of range" : "invalid syntax";
  throw new OptionParseError(`Can not parse option ${goQuote(option)}: Can not parse option: strconv.ParseUint: parsing ${goQuote(option)}: ${why}`);
}

/** The socket path of a config (default {@link DEFAULT_SOCKET_PATH}); code 7 when `ipam` is malformed. */
export function socketPathOf(config: Record<string, unknown>): string {
  try {
    const net = decode(NetWire, config);
    return net.ipam?.daemonSocketPath || DEFAULT_SOCKET_PATH;
  } catch (err) {
    throw new InvalidConfigError(`error obtaining socketPath: error parsing socket path conf: ${messageOf(err)}`, { cause: err });
  }
}

/**
 * Parses the whole dhcp config; `args.args` is the raw CNI_ARGS (for `provide[].fromArg`). `forDel`
 * relaxes nothing: DEL (a release by the daemon) does not read it.
 */
export function loadDhcpConfig(args: Pick<CmdArgs, "config" | "args">, _opts: LoadOptions = {}): DhcpConfig {
  let net;
  try {
    net = decode(NetWire, args.config);
  } catch (err) {
    if (err instanceof CniError) throw new InvalidConfigError(`error parsing netconf: ${err.message}`, { cause: err });
    throw err;
  }
  const ipam = net.ipam ?? {};
  const cniArgs = parseCniArgsLenient(args.args);
  const provide = new Map<number, Uint8Array>();
  for (const p of ipam.provide ?? []) {
    const name = p.option ?? "";
    const code = parseOptionName(name);
    // Upstream's order and texts (lease.go prepareOptions); for CNI_ARGS, the value printed is the
    // offending one (upstream prints the config's `value` there).
    const values: { value: string; from: string }[] = [];
    if (p.value !== undefined && p.value !== "") values.push({ value: p.value, from: "" });
    if (p.fromArg !== undefined && p.fromArg !== "") {
      const v = Object.hasOwn(cniArgs, p.fromArg) ? cniArgs[p.fromArg] : undefined;
      if (v !== undefined && v !== "") values.push({ value: v, from: ` from CNI_ARGS ${goQuote(p.fromArg)}` });
    }
    for (const { value, from } of values) {
      const bytes = new TextEncoder().encode(value);
      if (bytes.byteLength > MAX_OPTION_VALUE) {
        throw new InvalidConfigError(`value too long for option ${goQuote(name)}${from}: ${goQuote(value)}`);
      }
      provide.set(code, bytes);
    }
  }
  const request: number[] = [];
  let skipDefault = false;
  for (const r of ipam.request ?? []) {
    if (r.skipDefault === true) skipDefault = true;
    if (r.option === undefined || r.option === "") continue;
    const code = parseOptionName(r.option);
    if (!request.includes(code)) request.push(code);
  }
  if (!skipDefault) {
    for (const code of DEFAULT_REQUEST) if (!request.includes(code)) request.push(code);
  }
  const applyMtu = ipam.applyMtu ?? false;
  if (applyMtu && !request.includes(OPT_INTERFACE_MTU)) request.push(OPT_INTERFACE_MTU);
  const ipv6PrefixLength = ipam.ipv6PrefixLength ?? 128;
  if (ipv6PrefixLength < 1 || ipv6PrefixLength > 128) {
    throw new InvalidConfigError(`ipam.ipv6PrefixLength: ${ipv6PrefixLength} is not a prefix length (1-128)`);
  }
  return {
    network: net.name ?? "",
    socketPath: ipam.daemonSocketPath || DEFAULT_SOCKET_PATH,
    provide,
    request,
    priority: ipam.priority ?? 0,
    families: families(ipam.ipFamilies),
    ipv6PrefixLength,
    applyMtu,
  };
}
