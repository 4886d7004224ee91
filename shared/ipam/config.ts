/**
 * The allocator configuration host-local and cluster-local share (upstream
 * `backend/allocator/config.go`): decoding with Go semantics, range-set ordering, defaults and
 * validation with upstream's messages. Each plugin declares its own `Net` and `IPAMConfig` objects
 * from the fields exported here plus its own (host-local: `dataDir`; cluster-local: `etcd`), and
 * turns the decoded objects into an {@link AllocatorConfig} with {@link loadAllocatorConfig}.
 *
 * Range-set order (its index names `last_reserved_ip.<index>` and appears in messages):
 * `runtimeConfig.ipRanges` first, then the legacy single range written directly under `ipam`
 * (used only when it has a `subnet`), then `ipam.ranges`.
 *
 * Requested addresses are combined from all three sources, in this order: CNI_ARGS `IP`,
 * `args.cni.ips`, `runtimeConfig.ips`; each is `ip` or `ip/prefix` (the prefix is ignored).
 *
 * Every error here is code 7 (upstream: 999) with upstream's text, except CNI_ARGS errors, which
 * parseCniArgs reports as code 4.
 */
import { parseCniArgs } from "../cni/args.ts";
import { ConfigTypeError, isObject, jsonKind, t, type Infer, type Schema } from "../cni/decode.ts";
import { InvalidConfigError } from "../cni/errors.ts";
import type { Route } from "../cni/types.ts";
import { parseVersion } from "../cni/version.ts";
import { formatIP, parseIP, type IPAddr } from "../ip/addr.ts";
import { formatCIDR, parseCIDRDetailed, type ParsedCIDR } from "../ip/cidr.ts";
import { RangeConfigError, type RangeInput } from "./range.ts";
import { canonicalizeRangeSet, rangeSetFamily, rangeSetsOverlap, type RangeSet } from "./range-set.ts";

/** A config route, kept verbatim for the result; `dst` undefined when the config omitted it. */
export interface ConfigRoute {
  dst: string | undefined;
  gw?: string;
  mtu?: number;
  advmss?: number;
  priority?: number;
  table?: number;
  scope?: number;
}

/** The validated allocator configuration. */
export interface AllocatorConfig {
  /** Network name: where the store keeps the network's reservations. */
  name: string;
  /** The config's `cniVersion` as written ("" when absent). */
  cniVersion: string;
  rangeSets: RangeSet[];
  routes: ConfigRoute[];
  resolvConf: string | undefined;
  /** Requested addresses, de-duplicated, in source order. */
  requestedIPs: IPAddr[];
}

// ---- wire schemas -------------------------------------------------------------------------

/** A Go struct whose type (in mismatch errors) is package-qualified, unlike its name in field errors. */
export function goStruct<S extends Schema<unknown>>(goType: string, inner: S): Schema<Infer<S>> {
  return {
    goType,
    decode(value, ctx) {
      if (!isObject(value)) throw new ConfigTypeError(jsonKind(value).split(" ")[0]!, ctx, goType);
      return inner.decode(value, ctx) as Infer<S>;
    },
  };
}

/** `net.IP`: "" means unset; anything else must parse. */
const netIP = t.parsed<IPAddr | undefined>("net.IP", (s) => {
  if (s === "") return undefined;
  const ip = parseIP(s);
  if (ip === null) throw new InvalidConfigError(`invalid IP address: ${s}`);
  return ip;
});

/** CNI `types.IPNet`: a CIDR with host bits kept. */
const ipNet = t.parsed<ParsedCIDR>("types.IPNet", (s) => {
  const c = parseCIDRDetailed(s);
  if (c === null) throw new InvalidConfigError(`invalid CIDR address: ${s}`);
  return c;
});

/** Marker for a requested address written as "" (upstream: "IP <nil> not v4 nor v6"). */
const EMPTY_REQUEST = Symbol("empty requested IP");

/** Plugins' `ip.IP`: `ip` or `ip/prefix`. */
function parseRequestedIP(s: string): IPAddr | null {
  if (s.includes("/")) return parseCIDRDetailed(s)?.ip ?? null;
  return parseIP(s);
}

const requestedIP = t.parsed<IPAddr | typeof EMPTY_REQUEST>("ip.IP", (s) => {
  if (s === "") return EMPTY_REQUEST;
  const ip = parseRequestedIP(s);
  if (ip === null) throw new InvalidConfigError(`invalid IP address ${s}`);
  return ip;
});

/** Beyond upstream: `exclude` (addresses and prefixes never handed out, range.ts). */
const rangeFields = { rangeStart: netIP, rangeEnd: netIP, subnet: ipNet, gateway: netIP, exclude: t.array(t.string()) };
const rangeSchema = goStruct("allocator.Range", t.object("Range", rangeFields));
const rangeArray = t.array(rangeSchema);
/** `allocator.RangeSet` (a named slice type). */
const rangeSetSchema: Schema<(RangeInput | undefined)[]> = {
  goType: "allocator.RangeSet",
  decode(value, ctx) {
    if (!Array.isArray(value)) throw new ConfigTypeError(jsonKind(value).split(" ")[0]!, ctx, "allocator.RangeSet");
    return rangeArray.decode(value, ctx);
  },
};

const routeSchema = goStruct(
  "types.route",
  t.object("route", {
    dst: ipNet,
    gw: netIP,
    mtu: t.int(),
    advmss: t.int(),
    priority: t.int(),
    table: t.int(),
    scope: t.int(),
  }),
);

/**
 * The members of upstream's `allocator.IPAMConfig` both plugins accept; a plugin spreads them into
 * its own `t.object("IPAMConfig", …)` next to its store's fields.
 */
export const allocatorIpamFields = {
  ...rangeFields,
  type: t.string(),
  routes: t.array(routeSchema),
  resolvConf: t.string(),
  ranges: t.array(rangeSetSchema),
};

/** The members of upstream's `allocator.Net` other than `ipam` (the plugin adds its own). */
export const allocatorNetFields = {
  name: t.string(),
  cniVersion: t.string(),
  // Anonymous structs in Go; their fields are reported against "Net".
  runtimeConfig: goStruct("struct", t.object("Net", { ipRanges: t.array(rangeSetSchema), ips: t.array(requestedIP) })),
  args: goStruct(
    "struct",
    t.object("Net", { cni: goStruct("allocator.IPAMArgs", t.object("IPAMArgs", { ips: t.array(requestedIP) })) }),
  ),
};

type Decoded<F> = { [K in keyof F]?: Infer<F[K]> };
/** A decoded `ipam` object (the shared members). */
export type AllocatorIpamWire = Decoded<typeof allocatorIpamFields>;
/** A decoded network configuration (the shared members). */
export type AllocatorNetWire = Decoded<typeof allocatorNetFields>;

// ---- loading ------------------------------------------------------------------------------

/** Upstream's CNI_ARGS `IP` (an `ip.IP`: `ip` or `ip/prefix`; empty means none). */
export function parseEnvRequestedIP(cniArgs: string): IPAddr | undefined {
  const parsed = parseCniArgs(cniArgs, ["IP"], {
    IP: (v) => {
      if (v !== "" && parseRequestedIP(v) === null) throw new Error(`invalid IP address ${v}`);
    },
  });
  const v = parsed["IP"];
  return v === undefined || v === "" ? undefined : (parseRequestedIP(v) ?? undefined);
}

function configRoute(r: Infer<typeof routeSchema>): ConfigRoute {
  const out: ConfigRoute = { dst: undefined };
  if (r.dst !== undefined) {
    // Go prints an IPv4 address under a 128-bit mask with the mask's last 32 bits.
    const shown = r.dst.ip.family === 4 && r.dst.maskWidth === 128 ? Math.max(0, r.dst.prefixLen - 96) : r.dst.prefixLen;
    out.dst = formatCIDR({ ip: r.dst.ip, prefixLen: shown });
  }
  if (r.gw !== undefined) out.gw = formatIP(r.gw);
  // Upstream marshals mtu/advmss/priority with omitempty, table/scope as pointers.
  if (r.mtu) out.mtu = r.mtu;
  if (r.advmss) out.advmss = r.advmss;
  if (r.priority) out.priority = r.priority;
  if (r.table !== undefined) out.table = r.table;
  if (r.scope !== undefined) out.scope = r.scope;
  return out;
}

/** The result routes; a route without `dst` is refused here (upstream prints `"<nil>"`). */
export function resultRoutes(routes: readonly ConfigRoute[]): Route[] {
  return routes.map((r) => {
    if (r.dst === undefined) throw new InvalidConfigError("invalid route: missing dst");
    const { dst, ...rest } = r;
    return { dst, ...rest };
  });
}

/** True when `v` >= `min`; an unparseable version counts as older (upstream ignores the error). */
function versionAtLeast(v: string, min: [number, number, number]): boolean {
  let p: [number, number, number];
  try {
    p = parseVersion(v);
  } catch {
    return false;
  }
  for (let i = 0; i < 3; i++) if (p[i] !== min[i]) return p[i]! > min[i]!;
  return true;
}

function defined<T>(list: readonly (T | undefined)[] | undefined): T[] {
  return (list ?? []).filter((x): x is T => x !== undefined);
}

/** `exclude` entries; a JSON null entry is refused like any other invalid entry. */
function excludeEntries(list: readonly (string | undefined)[] | undefined): string[] {
  return (list ?? []).map((e) => e ?? "null");
}

/** Longest path the kernel accepts (PATH_MAX including the terminating NUL). */
export const PATH_MAX = 4096;

/**
 * A path field as given, or undefined when empty/absent. A NUL byte (which no Linux path can hold)
 * or a path longer than PATH_MAX is a config error naming the field.
 */
export function pathField(field: string, value: string | undefined): string | undefined {
  if (value === undefined || value === "") return undefined;
  if (value.includes("\0")) throw new InvalidConfigError(`invalid ${field} ${JSON.stringify(value)}: a path cannot contain a NUL byte`);
  if (new TextEncoder().encode(value).length >= PATH_MAX) {
    throw new InvalidConfigError(`invalid ${field}: longer than ${PATH_MAX - 1} bytes`);
  }
  return value;
}

/**
 * Validates the decoded network configuration (`net`, its `ipam`) and CNI_ARGS into an
 * AllocatorConfig. Throws InvalidConfigError (code 7) with upstream's messages, or InvalidEnvError
 * for CNI_ARGS.
 */
export function loadAllocatorConfig(net: AllocatorNetWire, ipam: AllocatorIpamWire | undefined, cniArgs: string): AllocatorConfig {
  if (ipam === undefined) throw new InvalidConfigError("IPAM config missing 'ipam' key");

  const requested: (IPAddr | typeof EMPTY_REQUEST)[] = [];
  if (cniArgs !== "") {
    const envIP = parseEnvRequestedIP(cniArgs);
    if (envIP !== undefined) requested.push(envIP);
  }
  requested.push(...defined(net.args?.cni?.ips), ...defined(net.runtimeConfig?.ips));
  const requestedIPs = new Map<string, IPAddr>();
  for (const r of requested) {
    if (r === EMPTY_REQUEST) throw new InvalidConfigError("cannot understand ip: IP <nil> not v4 nor v6");
    if (!requestedIPs.has(formatIP(r))) requestedIPs.set(formatIP(r), r);
  }

  const inputs: (RangeInput | undefined)[][] = [];
  // A null set decodes to an empty set ("empty range set"), as in Go.
  for (const set of net.runtimeConfig?.ipRanges ?? []) inputs.push(set ?? []);
  if (ipam.subnet !== undefined) {
    const { subnet, rangeStart, rangeEnd, gateway, exclude } = ipam;
    inputs.push([{ subnet, rangeStart, rangeEnd, gateway, exclude }]);
  }
  for (const set of ipam.ranges ?? []) inputs.push(set ?? []);
  if (inputs.length === 0) throw new InvalidConfigError("no IP ranges specified");

  const rangeSets: RangeSet[] = [];
  let v4 = 0;
  let v6 = 0;
  for (const [i, set] of inputs.entries()) {
    let rs: RangeSet;
    try {
      // A JSON null inside a set decodes to a zero Range, which has no subnet.
      rs = canonicalizeRangeSet(set.map((r) => (r === undefined ? {} : { ...r, exclude: excludeEntries(r.exclude) })));
    } catch (err) {
      if (err instanceof RangeConfigError) throw new InvalidConfigError(`invalid range set ${i}: ${err.message}`, { cause: err });
      throw err;
    }
    if (rangeSetFamily(rs) === 4) v4++;
    else v6++;
    rangeSets.push(rs);
  }

  const cniVersion = net.cniVersion ?? "";
  if ((v4 > 1 || v6 > 1) && !versionAtLeast(cniVersion, [0, 3, 0])) {
    throw new InvalidConfigError(`CNI version ${cniVersion} does not support more than 1 address per family`);
  }

  for (let i = 0; i < rangeSets.length; i++) {
    for (let j = i + 1; j < rangeSets.length; j++) {
      if (rangeSetsOverlap(rangeSets[i]!, rangeSets[j]!)) throw new InvalidConfigError(`range set ${i} overlaps with ${j}`);
    }
  }

  return {
    name: net.name ?? "",
    cniVersion,
    rangeSets,
    routes: defined(ipam.routes).map(configRoute),
    resolvConf: pathField("resolvConf", ipam.resolvConf),
    requestedIPs: [...requestedIPs.values()],
  };
}
