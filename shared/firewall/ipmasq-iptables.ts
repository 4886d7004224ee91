/**
 * ipMasq with iptables (upstream `pkg/ip/ipmasq_iptables_linux.go`), one restore transaction per
 * IP family. Per network+container, in the `nat` table:
 *   chain CNI-<24 hex of sha512(net+cid)>:  -d <net>/<prefix> -m comment --comment C -j ACCEPT   (per address)
 *                                           ! -d 224.0.0.0/4 (ff00::/8) -m comment --comment C -j MASQUERADE
 *   POSTROUTING:                            -s <ip>/32 (/128) -m comment --comment C -j CNI-…   (per address)
 * The ifname is ignored, as upstream does "for historical reasons". The ACCEPT rules always stay
 * ahead of the MASQUERADE rule, also when a second address is added later.
 */
import { transactIptables } from "./iptables/transact.ts";
import { bitLength, formatCIDR, formatIP, networkAddress, type CIDR, type IPFamily } from "../ip/ip.ts";
import type { IptablesDriver } from "./iptables/driver.ts";
import { IptablesPlan, type IptChain, type IptRule } from "./iptables/chain.ts";
import { sameRule } from "./iptables/rule.ts";
import { formatChainName, formatComment } from "./naming.ts";

const TABLE = "nat";
const MULTICAST: Record<IPFamily, string> = { 4: "224.0.0.0/4", 6: "ff00::/8" };
/** How often a transaction is recomputed when the table changed under it (concurrent plugins). */

function comment(c: string): string[] {
  return ["-m", "comment", "--comment", c];
}

/** The chain model for `ips` (all of one family). */
export function masqChain(network: string, containerID: string, family: IPFamily, ips: readonly CIDR[]): IptChain {
  const name = formatChainName(network, containerID);
  const c = formatComment(network, containerID);
  const accepts: IptRule[] = ips.map((ip) => ["-d", formatCIDR({ ip: networkAddress(ip.ip, ip.prefixLen), prefixLen: ip.prefixLen }), ...comment(c), "-j", "ACCEPT"]);
  return {
    table: TABLE,
    name,
    rules: [...accepts, ["!", "-d", MULTICAST[family], ...comment(c), "-j", "MASQUERADE"]],
    entryRules: ips.map((ip) => ({
      chain: "POSTROUTING",
      rule: ["-s", `${formatIP(ip.ip)}/${bitLength(ip.ip.family)}`, ...comment(c), "-j", name],
    })),
  };
}

function transact(ipt: IptablesDriver, family: IPFamily, plan: (p: IptablesPlan) => void): void {
  transactIptables(ipt, family, TABLE, plan);
}

function byFamily(ips: readonly CIDR[]): Map<IPFamily, CIDR[]> {
  const out = new Map<IPFamily, CIDR[]>();
  for (const ip of ips) out.set(ip.ip.family, [...(out.get(ip.ip.family) ?? []), ip]);
  return out;
}

export function setupMasqIptables(ipt: IptablesDriver, network: string, containerID: string, ips: readonly CIDR[]): void {
  for (const [family, list] of byFamily(ips)) {
    const spec = masqChain(network, containerID, family, list);
    transact(ipt, family, (p) => p.ensureChain(spec));
  }
}

/**
 * Removes the chain of network+container and every rule jumping to it, in both families, with or
 * without the addresses (the chain name is a hash of network+container, so addresses are never
 * needed; this also removes upstream's older `-s <ip>/<prefix>` jump form).
 */
export function teardownMasqIptables(ipt: IptablesDriver, network: string, containerID: string): void {
  const name = formatChainName(network, containerID);
  for (const family of [4, 6] as const) transact(ipt, family, (p) => p.deleteChain(name));
}

/** Problems with the rules for `ips` (empty list: all present). */
export function checkMasqIptables(ipt: IptablesDriver, network: string, containerID: string, ips: readonly CIDR[]): string[] {
  const problems: string[] = [];
  for (const [family, list] of byFamily(ips)) {
    const spec = masqChain(network, containerID, family, list);
    const p = new IptablesPlan(TABLE, ipt.readTable(family, TABLE));
    if (!p.hasChain(spec.name)) {
      problems.push(`iptables chain ${spec.name} not found in the IPv${family} nat table`);
      continue;
    }
    const have = p.rulesOf(spec.name);
    for (const r of spec.rules) if (!have.some((h) => sameRule(h, r))) problems.push(`IPv${family} nat chain ${spec.name} lacks rule: ${r.join(" ")}`);
    for (const e of spec.entryRules) {
      if (!p.rulesOf(e.chain).some((h) => sameRule(h, e.rule))) problems.push(`IPv${family} nat ${e.chain} lacks rule: ${e.rule.join(" ")}`);
    }
  }
  return problems;
}
