/**
 * The firewall plugin's configuration (upstream plugins/meta/firewall FirewallNetConf): the base
 * NetConf plus `backend`, `iptablesAdminChainName`, `firewalldZone` and `ingressPolicy`, with
 * upstream's defaults (`CNI-ADMIN`, `trusted`, `open`).
 *
 * An unknown `backend` is refused, except when loading for DEL (a bad value must not block pod
 * deletion). The raw `ingressPolicy` is kept: only ADD applies it ({@link parseIngressPolicy}).
 */
import { t } from "../../shared/cni/decode.ts";
import { InternalError, InvalidConfigError } from "../../shared/cni/errors.ts";
import { lenientForDel, loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";

export const DEFAULT_ADMIN_CHAIN = "CNI-ADMIN";
export const DEFAULT_FIREWALLD_ZONE = "trusted";

const firewallSchema = t.object("FirewallNetConf", {
  ...netConfFields,
  backend: t.string(),
  iptablesAdminChainName: t.string(),
  firewalldZone: t.string(),
  ingressPolicy: t.string(),
});

export type FirewallBackendName = "iptables" | "firewalld" | "nftables";
export type IngressPolicy = "open" | "same-bridge" | "isolated";

export interface FirewallConf {
  /** Network name (identifies our nftables rules together with container ID and ifname). */
  name: string;
  /** The requested backend; undefined = choose automatically. */
  backend: FirewallBackendName | undefined;
  adminChain: string;
  zone: string;
  /** Raw `ingressPolicy` ("" when unset). */
  ingressPolicy: string;
}

/**
 * Decodes the config (`failed to load netconf: …`, code 7, on type errors) and applies defaults.
 * `forDel` (DEL, GC): an unknown backend counts as none (choose automatically).
 */
export function loadFirewallConfig(args: CmdArgs, opts: LoadOptions = {}): FirewallConf {
  const c = loadNetConf(firewallSchema, args);
  return {
    name: c.name ?? "",
    backend: lenientForDel(opts, undefined, () => parseBackend(c.backend ?? "")),
    adminChain: c.iptablesAdminChainName || DEFAULT_ADMIN_CHAIN,
    zone: c.firewalldZone || DEFAULT_FIREWALLD_ZONE,
    ingressPolicy: c.ingressPolicy ?? "",
  };
}

/**
 * The requested backend; undefined = choose automatically. An unknown name is refused (upstream
 * silently falls back to auto-detection).
 */
function parseBackend(raw: string): FirewallBackendName | undefined {
  if (raw === "") return undefined;
  if (raw === "iptables" || raw === "firewalld" || raw === "nftables") return raw;
  throw new InvalidConfigError(`unknown firewall backend ${JSON.stringify(raw)} (want "iptables", "nftables" or "firewalld")`);
}

/** Upstream's check: `open` or "" → open; else `unknown ingress policy: "<p>"` (code 999 as upstream). */
export function parseIngressPolicy(raw: string): IngressPolicy {
  if (raw === "" || raw === "open") return "open";
  if (raw === "same-bridge" || raw === "isolated") return raw;
  throw new InternalError(`unknown ingress policy: ${JSON.stringify(raw)}`);
}

/** Linux IFNAMSIZ - 1. */
const MAX_IFNAME = 15;

/** Admin chain names are used verbatim as iptables chain names (and nft chain names). */
export function validateAdminChain(name: string): void {
  if (name.length > 28 || !/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name)) {
    throw new InvalidConfigError(`invalid iptablesAdminChainName ${JSON.stringify(name)}: at most 28 characters of [A-Za-z0-9_.-], not starting with a digit, dot or dash`);
  }
}

/** A bridge name taken from prevResult must be a valid interface name (it ends up in firewall rules). */
export function validBridgeName(name: string): boolean {
  return name.length > 0 && name.length <= MAX_IFNAME && !/[\s/"\\]/.test(name);
}
