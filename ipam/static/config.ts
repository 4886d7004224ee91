/**
 * static's configuration (upstream plugins/ipam/static/main.go `LoadIPAMConfig`). IPAM plugins get
 * the calling plugin's whole config; static reads `ipam`, `runtimeConfig.ips` and `args.cni.ips`,
 * plus CNI_ARGS `IP` and `GATEWAY`.
 *
 * Address sources, applied in this order:
 * 1. `ipam.addresses` (validated last, and only if still in use);
 * 2. CNI_ARGS `IP` (comma-separated CIDRs) is **appended**; CNI_ARGS `GATEWAY` (comma-separated IPs)
 *    is given to every address so far whose subnet contains it — in practice only the CNI_ARGS
 *    addresses, because upstream has not parsed the config addresses yet at that point;
 * 3. `args.cni.ips` **replaces** everything so far;
 * 4. `runtimeConfig.ips` **replaces** everything so far.
 */
import { decode, t, type Infer } from "../../shared/cni/decode.ts";
import { CniError, InvalidConfigError, messageOf } from "../../shared/cni/errors.ts";
import { parseCniArgs } from "../../shared/cni/args.ts";
import { dnsFromWire, dnsSchema, ipField, routeFromWire, routeSchema } from "../../shared/cni/result/common.ts";
import { canonicalCIDR, type CanonicalCIDR } from "../../shared/cni/result/ip-text.ts";
import type { LoadOptions } from "../../shared/cni/netconf.ts";
import type { CmdArgs, DNS, Route } from "../../shared/cni/types.ts";
import { versionGte } from "../../shared/cni/version.ts";
import { formatIP, ipEqual, parseIP, type IPAddr } from "../../shared/ip/addr.ts";
import { containsIP, maskToPrefix } from "../../shared/ip/cidr.ts";

// ---- wire format (Go field names; keys match case-insensitively, exact case first) ----

/** Upstream's `Address`: the tagged `address` string plus the untagged Go fields `Address` and `Version`. */
const AddressWire = t.object("main.Address", {
  address: t.string(),
  gateway: ipField,
  /** Go's untagged `Address net.IPNet`: only the exact key `Address` reaches it. */
  Address: t.raw(),
  Version: t.string(),
});

const IPAMWire = t.object("main.IPAMConfig", {
  Name: t.string(),
  type: t.string(),
  routes: t.array(routeSchema),
  addresses: t.array(AddressWire),
  dns: dnsSchema,
});

const NetWire = t.object("Net", {
  name: t.string(),
  cniVersion: t.string(),
  ipam: IPAMWire,
  runtimeConfig: t.object("struct", { ips: t.array(t.string()) }),
  args: t.object("struct", { cni: t.object("main.IPAMArgs", { ips: t.array(t.string()) }) }),
});

/** CNI_ARGS keys static declares (Go field names, matched case-sensitively). */
const CNI_ARGS_KEYS = ["IP", "GATEWAY"] as const;

// ---- internal config ----

export interface StaticAddress {
  /** The parsed CIDR (canonical text, address with host bits, prefix). */
  cidr: CanonicalCIDR;
  /** Canonical gateway IP, when one applies. */
  gateway?: string;
}

export interface StaticConfig {
  /** The config's `cniVersion` exactly as written ("" when missing). */
  cniVersion: string;
  addresses: StaticAddress[];
  routes: Route[];
  dns: DNS | undefined;
}

/** An address before validation: config addresses stay text until the end, as upstream. */
interface Candidate {
  text: string;
  cidr?: CanonicalCIDR;
  gateway?: string;
  /** What a config entry's untagged Go fields say (`Address` net.IPNet, `Version`); checked against `text`. */
  goFields?: GoAddressFields;
}

/** The untagged Go fields of one `ipam.addresses` entry, as a Go caller re-serialises them. */
interface GoAddressFields {
  /** JSON path of the entry, for messages. */
  where: string;
  ip?: IPAddr;
  prefixLen?: number;
  version?: string;
}

/**
 * Loads and validates static's config from the plugin config and the raw CNI_ARGS string. Config
 * errors are code 7 with upstream's text; CNI_ARGS syntax errors are code 4 (from parseCniArgs).
 * `forDel` relaxes nothing: static's DEL, like upstream's, reads no config.
 */
export function loadStaticConfig(args: Pick<CmdArgs, "config" | "args">, _opts: LoadOptions = {}): StaticConfig {
  const net = decodeNet(args.config);
  const ipam = net.ipam;
  if (ipam === undefined) throw new InvalidConfigError("IPAM config missing 'ipam' key");

  let candidates: Candidate[] = (ipam.addresses ?? []).map((a, i) => configCandidate(a, i));

  if (args.args !== "") {
    const env = parseCniArgs(args.args, CNI_ARGS_KEYS);
    if (env.IP) candidates.push(...env.IP.split(",").map(cniArgsCandidate));
    if (env.GATEWAY) applyGateways(candidates, env.GATEWAY);
  }

  const argsIps = net.args?.cni?.ips;
  if (argsIps !== undefined && argsIps.length > 0) candidates = argsIps.map(listCandidate);

  const runtimeIps = net.runtimeConfig?.ips;
  if (runtimeIps !== undefined && runtimeIps.length > 0) candidates = runtimeIps.map(listCandidate);

  const addresses = candidates.map(validateCandidate);
  checkOnePerFamily(addresses, net.cniVersion ?? "");

  return {
    cniVersion: net.cniVersion ?? "",
    addresses,
    routes: configRoutes(ipam.routes),
    dns: dnsFromWire(ipam.dns),
  };
}

/** Go-decodes the config; value errors from IP/CIDR fields (plain Errors) become code 7 too. */
function decodeNet(config: Record<string, unknown>): Infer<typeof NetWire> {
  try {
    return decode(NetWire, config);
  } catch (err) {
    if (err instanceof CniError) throw err;
    throw new InvalidConfigError(messageOf(err), { cause: err });
  }
}

/** `ipam.routes`, copied to the result as written (null entries skipped; a route needs `dst`). */
function configRoutes(routes: readonly (Infer<typeof routeSchema> | undefined)[] | undefined): Route[] {
  const out: Route[] = [];
  for (const [i, r] of (routes ?? []).entries()) {
    if (r === undefined) continue;
    try {
      out.push(routeFromWire(r, `ipam.routes[${i}]`));
    } catch (err) {
      throw new InvalidConfigError(messageOf(err), { cause: err });
    }
  }
  return out;
}

function configCandidate(a: Infer<typeof AddressWire> | undefined, index: number): Candidate {
  const c: Candidate = { text: a?.address ?? "" };
  if (a?.gateway) c.gateway = a.gateway;
  const where = `ipam.addresses[${index}]`;
  const goFields: GoAddressFields = { where, ...goIPNet(a?.Address, where) };
  if (a?.Version) goFields.version = a.Version;
  if (goFields.ip !== undefined || goFields.prefixLen !== undefined || goFields.version !== undefined) c.goFields = goFields;
  return c;
}

/**
 * Go's untagged `Address net.IPNet` as encoding/json writes it: `{"IP":"10.10.0.1","Mask":"////AA=="}`
 * (IP as text, Mask as base64 bytes, either null/"" when unset). Upstream overwrites it from
 * `address`; we check that the two agree (see {@link checkGoFields}).
 */
function goIPNet(raw: unknown, where: string): { ip?: IPAddr; prefixLen?: number } {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) {
    const kind = Array.isArray(raw) ? "array" : typeof raw === "boolean" ? "bool" : typeof raw;
    throw new InvalidConfigError(`json: cannot unmarshal ${kind} into Go struct field Address.ipam.addresses.Address of type net.IPNet`);
  }
  const o = raw as Record<string, unknown>;
  const out: { ip?: IPAddr; prefixLen?: number } = {};
  const ipText = o["IP"];
  if (ipText !== undefined && ipText !== null && ipText !== "") {
    const ip = typeof ipText === "string" ? parseIP(ipText) : null;
    if (ip === null) throw new InvalidConfigError(`${where}.Address.IP: invalid IP address: ${JSON.stringify(ipText)}`);
    out.ip = ip;
  }
  const maskText = o["Mask"];
  if (maskText !== undefined && maskText !== null && maskText !== "") {
    const mask = typeof maskText === "string" && /^[A-Za-z0-9+/]*={0,2}$/.test(maskText) ? Buffer.from(maskText, "base64") : undefined;
    const prefixLen = mask === undefined || (mask.byteLength !== 4 && mask.byteLength !== 16) ? undefined : maskToPrefix(mask);
    if (prefixLen === undefined) throw new InvalidConfigError(`${where}.Address.Mask: not a base64 netmask: ${JSON.stringify(maskText)}`);
    out.prefixLen = prefixLen;
  }
  return out;
}

/** The Go fields must describe the same address as `address` (Go's own caller wrote both from one value). */
function checkGoFields(g: GoAddressFields, cidr: CanonicalCIDR, text: string): void {
  const family = cidr.v4 ? "4" : "6";
  // A 16-byte mask written for an IPv4 address has 96 leading ones of IPv4-in-IPv6 form.
  const prefix = g.prefixLen !== undefined && cidr.v4 && g.prefixLen > 32 ? g.prefixLen - 96 : g.prefixLen;
  const agrees =
    (g.ip === undefined || ipEqual(g.ip, cidr.ip)) && (prefix === undefined || prefix === cidr.prefixLen) && (g.version === undefined || g.version === family);
  if (agrees) return;
  const said = [
    g.ip !== undefined || g.prefixLen !== undefined ? `Address ${g.ip ? formatIP(g.ip) : "<nil>"}/${prefix ?? "<nil>"}` : "",
    g.version !== undefined ? `Version ${JSON.stringify(g.version)}` : "",
  ].filter((x) => x !== "");
  throw new InvalidConfigError(`${g.where}: ${said.join(", ")} disagrees with "address" ${JSON.stringify(text)}`);
}

function cniArgsCandidate(item: string): Candidate {
  const text = item.trim();
  const cidr = tryCIDR(text);
  if (cidr === undefined) {
    throw new InvalidConfigError(`the 'ip' field is expected to be in CIDR notation, got: '${text}'`);
  }
  return { text, cidr };
}

function listCandidate(text: string): Candidate {
  const cidr = tryCIDR(text);
  if (cidr === undefined) {
    throw new InvalidConfigError(`an entry in the 'ips' field is NOT in CIDR notation, got: '${text}'`);
  }
  return { text, cidr };
}

/** CNI_ARGS GATEWAY: each gateway goes to every already-parsed address whose subnet contains it. */
function applyGateways(candidates: Candidate[], raw: string): void {
  for (const item of raw.split(",")) {
    const gw = parseIP(item.trim());
    if (gw === null) throw new InvalidConfigError(`invalid gateway address: ${item}`);
    for (const c of candidates) {
      if (c.cidr && containsIP(c.cidr.ip, c.cidr.prefixLen, gw)) c.gateway = formatIP(gw);
    }
  }
}

function validateCandidate(c: Candidate): StaticAddress {
  const cidr = c.cidr ?? tryCIDR(c.text);
  if (cidr === undefined) {
    throw new InvalidConfigError(`the 'address' field is expected to be in CIDR notation, got: '${c.text}'`);
  }
  if (c.goFields !== undefined) checkGoFields(c.goFields, cidr, c.text);
  const out: StaticAddress = { cidr };
  if (c.gateway) out.gateway = c.gateway;
  return out;
}

/** Spec 0.1.0/0.2.0 results hold one address per family (so does an unparseable version, as upstream). */
function checkOnePerFamily(addresses: readonly StaticAddress[], cniVersion: string): void {
  const v4 = addresses.filter((a) => a.cidr.v4).length;
  const v6 = addresses.length - v4;
  if (v4 <= 1 && v6 <= 1) return;
  let multi = false;
  try {
    multi = versionGte(cniVersion, "0.3.0");
  } catch {
    multi = false;
  }
  if (!multi) throw new InvalidConfigError(`CNI version ${cniVersion} does not support more than 1 address per family`);
}

function tryCIDR(text: string): CanonicalCIDR | undefined {
  try {
    return canonicalCIDR(text);
  } catch {
    return undefined;
  }
}
