/**
 * portmap configuration (upstream plugins/meta/portmap PortMapConf): the base NetConf plus
 * `backend`, `snat`, `masqAll`, `markMasqBit`, `externalSetMarkChain`, `conditionsV4`/`conditionsV6`
 * and the `portMappings` capability, validated more strictly than upstream (ports 1–65535, protocol
 * names, host IPs must parse).
 */
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import { loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import { t } from "../../shared/cni/decode.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import type { BackendName } from "../../shared/firewall/backend.ts";
import { formatIP, parseIP, type IPAddr, type IPFamily } from "../../shared/ip/addr.ts";

/** What a DNAT rule forwards, as read back from the rules. */
export interface ForwardedPort {
  protocol: string;
  hostPort: number;
  /** Destination restriction ("" = any local address). */
  hostIP: string;
}

/** A port another container already forwards. */
export interface ForeignPort extends ForwardedPort {
  owner: string;
}

export type PortProtocol = "tcp" | "udp" | "sctp";

/** One validated entry of `runtimeConfig.portMappings`. */
export interface PortMapping {
  hostPort: number;
  containerPort: number;
  protocol: PortProtocol;
  /** The hostIP as given ("" when absent); canonical text in {@link hostAddr}. */
  hostIP: string;
  /** Parsed hostIP; undefined when absent. */
  hostAddr: IPAddr | undefined;
}

export interface PortmapConfig {
  name: string;
  cniVersion: string;
  /** Explicit `backend`; undefined = upstream's default choice. */
  backend: BackendName | undefined;
  snat: boolean;
  masqAll: boolean;
  markMasqBit: number;
  externalSetMarkChain: string | undefined;
  conditionsV4: string[] | undefined;
  conditionsV6: string[] | undefined;
  mappings: PortMapping[];
}

/** Upstream DefaultMarkBit (Kubernetes uses 14 and 15, Calico 20–31). */
export const DEFAULT_MARK_BIT = 13;

const entrySchema = t.object("PortMapEntry", {
  hostPort: t.int(),
  containerPort: t.int(),
  protocol: t.string(),
  hostIP: t.string(),
});

const schema = t.object("PortMapConf", {
  ...netConfFields,
  backend: t.string(),
  snat: t.bool(),
  masqAll: t.bool(),
  markMasqBit: t.int(),
  externalSetMarkChain: t.string(),
  conditionsV4: t.array(t.string()),
  conditionsV6: t.array(t.string()),
  runtimeConfig: t.object("RuntimeConfig", { portMappings: t.array(entrySchema) }),
});

const PROTOCOLS: readonly PortProtocol[] = ["tcp", "udp", "sctp"];

function fail(msg: string): never {
  throw new InvalidConfigError(`failed to parse config: ${msg}`);
}

function validPort(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= 65535;
}

/** Upstream: conditions whose first token starts with `-` or `!` are iptables syntax, others nftables. */
function conditionsAreIptables(c: readonly string[] | undefined): boolean | undefined {
  if (c === undefined || c.length === 0) return undefined;
  const first = c[0]!;
  return first.startsWith("-") || first.startsWith("!");
}

function validateBackendOptions(
  backend: string | undefined,
  w: { externalSetMarkChain?: string | undefined; markMasqBit?: number | undefined; conditionsV4?: string[] | undefined; conditionsV6?: string[] | undefined },
): BackendName | undefined {
  if (backend === undefined || backend === "") {
    // Without an explicit backend, nftables-style conditions select nftables (upstream HEAD).
    const v4 = conditionsAreIptables(w.conditionsV4);
    const v6 = conditionsAreIptables(w.conditionsV6);
    if (v4 === false || v6 === false) return validateBackendOptions("nftables", w);
    return undefined;
  }
  if (backend !== "iptables" && backend !== "nftables") fail(`unrecognized backend ${JSON.stringify(backend)}`);
  const iptOnly: string[] = [];
  const nftOnly: string[] = [];
  if (w.externalSetMarkChain !== undefined) iptOnly.push("externalSetMarkChain");
  if (w.markMasqBit !== undefined) iptOnly.push("markMasqBit");
  for (const [key, c] of [["conditionsV4", w.conditionsV4], ["conditionsV6", w.conditionsV6]] as const) {
    const ipt = conditionsAreIptables(c);
    if (ipt === true) iptOnly.push(key);
    if (ipt === false) nftOnly.push(key);
  }
  if (backend === "nftables" && iptOnly.length) fail(`nftables backend was requested but configuration contains iptables-specific options [${iptOnly.join(" ")}]`);
  if (backend === "iptables" && nftOnly.length) fail(`iptables backend was requested but configuration contains nftables-specific options [${nftOnly.join(" ")}]`);
  return backend;
}

/** Validates one raw mapping (our stricter rules; upstream only checked ports > 0). */
export function validateMapping(raw: { hostPort?: number; containerPort?: number; protocol?: string; hostIP?: string }): PortMapping {
  const containerPort = raw.containerPort ?? 0;
  const hostPort = raw.hostPort ?? 0;
  if (!validPort(containerPort)) fail(`Invalid container port number: ${containerPort}`);
  if (!validPort(hostPort)) fail(`Invalid host port number: ${hostPort}`);
  const proto = (raw.protocol ?? "").toLowerCase();
  if (!(PROTOCOLS as readonly string[]).includes(proto)) fail(`Invalid protocol ${JSON.stringify(raw.protocol ?? "")} for host port ${hostPort} (must be tcp, udp or sctp)`);
  const hostIP = raw.hostIP ?? "";
  let hostAddr: IPAddr | undefined;
  if (hostIP !== "") {
    const parsed = parseIP(hostIP);
    if (parsed === null) fail(`Invalid host IP ${JSON.stringify(hostIP)} for host port ${hostPort}`);
    hostAddr = parsed;
  }
  return { hostPort, containerPort, protocol: proto as PortProtocol, hostIP, hostAddr };
}

/**
 * Decodes and validates the config (errors: code 7 `failed to parse config: …`); `forDel` relaxes
 * nothing: upstream's DEL parses the config as strictly.
 */
export function loadPortmapConfig(args: CmdArgs, _opts: LoadOptions = {}): PortmapConfig {
  const w = loadNetConf(schema, args);
  if (w.markMasqBit !== undefined && w.externalSetMarkChain !== undefined) fail("Cannot specify externalSetMarkChain and markMasqBit");
  const markMasqBit = w.markMasqBit ?? DEFAULT_MARK_BIT;
  if (markMasqBit < 0 || markMasqBit > 31) fail("MasqMarkBit must be between 0 and 31");
  const backend = validateBackendOptions(w.backend, w);
  return {
    name: w.name ?? "",
    cniVersion: w.cniVersion ?? "",
    backend,
    snat: w.snat ?? true,
    masqAll: w.masqAll ?? false,
    markMasqBit,
    externalSetMarkChain: w.externalSetMarkChain,
    conditionsV4: w.conditionsV4,
    conditionsV6: w.conditionsV6,
    mappings: (w.runtimeConfig?.portMappings ?? []).map(validateMapping),
  };
}

/** Mappings that apply to a container address of `family` (a hostIP of the other family is skipped, as upstream). */
export function mappingsForFamily(mappings: readonly PortMapping[], family: IPFamily): PortMapping[] {
  return mappings.filter((m) => m.hostAddr === undefined || m.hostAddr.family === family);
}

/** True when the hostIP restricts the destination (absent and 0.0.0.0 / :: do not). */
export function hasHostDst(m: PortMapping): boolean {
  return m.hostAddr !== undefined && m.hostAddr.value !== 0n;
}

/** The hostIP in canonical text. */
export function hostText(m: PortMapping): string {
  return m.hostAddr === undefined ? "" : formatIP(m.hostAddr);
}

/** What a mapping forwards, in the form DEL reports (as parseDnatRule reads it back). */
export function forwardedPort(m: PortMapping): ForwardedPort {
  return { protocol: m.protocol, hostPort: m.hostPort, hostIP: hasHostDst(m) ? hostText(m) : "" };
}
