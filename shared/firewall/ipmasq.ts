/**
 * IP masquerade for bridge and ptp (`ipMasq`, `ipMasqBackend`): upstream
 * SetupIPMasqForNetworks / TeardownIPMasqForNetworks / GCIPMasqForNetwork with the same rules,
 * names and comments in both backends (see ipmasq-iptables.ts, ipmasq-nftables.ts), so Go and
 * TypeScript plugins clean up each other's rules.
 *
 * Differences from upstream, on purpose:
 * - teardown needs no addresses (upstream #810: DEL with the netns gone leaked the iptables chain);
 * - one transaction per IP family (iptables-restore) or per call (nft) instead of one process per rule;
 * - iptables goes through the variant that holds the host's rules (legacy or nf_tables).
 */
import { InternalError, InvalidConfigError, messageOf } from "../cni/errors.ts";
import { parseCIDR, type CIDR } from "../ip/ip.ts";
import { CommandNotFoundError } from "./exec.ts";
import { systemIptables, type IptablesDriver } from "./iptables/driver.ts";
import { checkMasqIptables, setupMasqIptables, teardownMasqIptables } from "./ipmasq-iptables.ts";
import { checkMasqNftables, gcMasqNftables, setupMasqNftables, teardownMasqNftables } from "./ipmasq-nftables.ts";
import { isNftUnsupported, systemNft, type NftDriver } from "./nftables/driver.ts";

export type MasqBackendName = "iptables" | "nftables";

export interface MasqTarget {
  network: string;
  containerID: string;
  ifName: string;
  /** CIDRs with host bits: "10.1.2.3/24", "fd00::3/64". */
  ips: string[];
}

/** The tools the ipMasq functions talk to; tests pass fakes. */
export interface MasqDrivers {
  iptables: IptablesDriver;
  nftables: NftDriver;
}

let defaultDrivers: MasqDrivers | undefined;
/** The host's iptables (detected variant) and nft, created on first use. */
export function systemMasqDrivers(): MasqDrivers {
  defaultDrivers ??= { iptables: systemIptables(), nftables: systemNft };
  return defaultDrivers;
}

/** Validates the raw `ipMasqBackend` value ("" or undefined: default choice). */
export function parseMasqBackend(raw: string | undefined): MasqBackendName | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (raw === "iptables" || raw === "nftables") return raw;
  throw new InvalidConfigError(`unknown ipmasq backend ${JSON.stringify(raw)}`);
}

/** Upstream's default: iptables, unless iptables is unusable and nftables usable. */
export function resolveMasqBackend(backend: MasqBackendName | undefined, d: MasqDrivers): MasqBackendName {
  if (backend !== undefined) return backend;
  return !d.iptables.available() && d.nftables.available() ? "nftables" : "iptables";
}

function parseIps(ips: readonly string[]): CIDR[] {
  return ips.map((s) => {
    const c = parseCIDR(s);
    if (c === null) throw new InternalError(`ipMasq: invalid address ${JSON.stringify(s)}`);
    return c;
  });
}

/** Masquerades traffic from `t.ips` leaving their subnets, in the chosen (or default) backend. */
export function setupIPMasq(t: MasqTarget, backend: MasqBackendName | undefined, d: MasqDrivers = systemMasqDrivers()): void {
  const ips = parseIps(t.ips);
  if (ips.length === 0) return;
  try {
    if (resolveMasqBackend(backend, d) === "nftables") setupMasqNftables(d.nftables, t.network, t.ifName, t.containerID, ips);
    else setupMasqIptables(d.iptables, t.network, t.containerID, ips);
  } catch (err) {
    throw new InternalError(`failed to set up IP masquerade for ${t.network}: ${messageOf(err)}`, { cause: err });
  }
}

/** True for "this backend cannot be used here" (tool missing, kernel without support). */
function isUnsupported(err: unknown): boolean {
  return err instanceof CommandNotFoundError || isNftUnsupported(err);
}

/**
 * Removes the attachment's masquerade rules from BOTH backends, idempotently and without needing
 * its addresses (`ips` is accepted but not needed). A backend whose tools are missing or
 * unsupported is skipped; other failures are reported together.
 */
export function teardownIPMasq(
  t: { network: string; containerID: string; ifName: string; ips?: string[] },
  d: MasqDrivers = systemMasqDrivers(),
): void {
  const errors: string[] = [];
  if (d.iptables.available()) {
    try {
      teardownMasqIptables(d.iptables, t.network, t.containerID);
    } catch (err) {
      if (!isUnsupported(err)) errors.push(messageOf(err));
    }
  }
  if (d.nftables.available()) {
    try {
      teardownMasqNftables(d.nftables, t.network, t.ifName, t.containerID);
    } catch (err) {
      if (!isUnsupported(err)) errors.push(messageOf(err));
    }
  }
  if (errors.length) throw new InternalError(`failed to tear down IP masquerade for ${t.network}: ${errors.join("; ")}`);
}

/** CHECK: the rules for `t.ips` exist in the backend in use; throws describing what is missing. */
export function checkIPMasq(t: MasqTarget, backend: MasqBackendName | undefined, d: MasqDrivers = systemMasqDrivers()): void {
  const ips = parseIps(t.ips);
  if (ips.length === 0) return;
  let problems: string[];
  try {
    problems =
      resolveMasqBackend(backend, d) === "nftables"
        ? checkMasqNftables(d.nftables, t.network, t.ifName, t.containerID, ips)
        : checkMasqIptables(d.iptables, t.network, t.containerID, ips);
  } catch (err) {
    throw new InternalError(`failed to check IP masquerade for ${t.network}: ${messageOf(err)}`, { cause: err });
  }
  if (problems.length) throw new InternalError(`IP masquerade for ${t.network} is incomplete: ${problems.join("; ")}`);
}

/**
 * Upstream GCIPMasqForNetwork: removes the network's nftables masquerade rules that belong to no
 * attachment in `keep`. The iptables backend cannot tell networks apart from chain names, so, as
 * upstream, it is left alone.
 */
export function gcIPMasq(network: string, keep: readonly { ifName: string; containerID: string }[], d: MasqDrivers = systemMasqDrivers()): void {
  if (!d.nftables.available()) return;
  try {
    gcMasqNftables(d.nftables, network, keep);
  } catch (err) {
    if (!isUnsupported(err)) throw new InternalError(`failed to garbage-collect IP masquerade for ${network}: ${messageOf(err)}`, { cause: err });
  }
}
