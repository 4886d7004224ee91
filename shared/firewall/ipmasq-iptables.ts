/**
 * ipMasq with iptables (upstream `pkg/ip/ipmasq_iptables_linux.go`), one restore transaction per
 * IP family. Per network+container, in the `nat` table:
 *   chain CNI-<24 hex of sha512(net+cid)>:  -d <net>/<prefix> -m comment --comment C -j ACCEPT   (per address)
 *                                           ! -d 224.0.0.0/4 (ff00::/8) -m comment --comment C -j MASQUERADE
 *   POSTROUTING:                            -s <ip>/32 (/128) -m comment --comment C -j CNI-…   (per address)
 * The ifname is ignored, as upstream does "for historical reasons". The ACCEPT rules always stay
 * ahead of the MASQUERADE rule, also when a second address is added later.
 *
 * Only the container's own chain and POSTROUTING are ever read: ADD reads the own chain (when it is
 * new, nothing jumps to it yet) and writes one restore; DEL with the addresses reads nothing (the
 * restore deletes exactly the jumps setup added, and fails if anything else still jumps there).
 */
import { bitLength, formatIP, type IPFamily } from "../ip/addr.ts";
import { formatCIDR, networkAddress, type CIDR } from "../ip/cidr.ts";
import { runAll } from "./backend.ts";
import type { IptablesDriver } from "./iptables/driver.ts";
import type { IptChain, IptRule } from "./iptables/chain.ts";
import { commentMatch, missingRules, ruleComment, ruleTarget } from "./iptables/rule.ts";
import { readIptables, transactIptables } from "./iptables/transact.ts";
import type { MasqFeature } from "./ipmasq-feature.ts";
import { formatChainName, formatComment, parseComment } from "./naming.ts";

const TABLE = "nat";
/** The only chain that jumps to an ipMasq chain (upstream's older `-s <ip>/<prefix>` form included). */
const ENTRY_CHAIN = "POSTROUTING";
const MULTICAST: Record<IPFamily, string> = { 4: "224.0.0.0/4", 6: "ff00::/8" };

/** The chain model for `ips` (all of one family). */
export function masqChain(network: string, containerID: string, family: IPFamily, ips: readonly CIDR[]): IptChain {
  const name = formatChainName(network, containerID);
  const c = commentMatch(formatComment(network, containerID));
  const accepts: IptRule[] = ips.map((ip) => ["-d", formatCIDR({ ip: networkAddress(ip.ip, ip.prefixLen), prefixLen: ip.prefixLen }), ...c, "-j", "ACCEPT"]);
  return {
    table: TABLE,
    name,
    rules: [...accepts, ["!", "-d", MULTICAST[family], ...c, "-j", "MASQUERADE"]],
    entryRules: ips.map((ip) => ({
      chain: ENTRY_CHAIN,
      rule: ["-s", `${formatIP(ip.ip)}/${bitLength(ip.ip.family)}`, ...c, "-j", name],
    })),
  };
}

function byFamily(ips: readonly CIDR[]): Map<IPFamily, CIDR[]> {
  const out = new Map<IPFamily, CIDR[]>();
  for (const ip of ips) out.set(ip.ip.family, [...(out.get(ip.ip.family) ?? []), ip]);
  return out;
}

/** The iptables implementation of ipMasq. */
export function iptablesMasq(ipt: IptablesDriver): MasqFeature {
  return {
    backend: "iptables",
    available: () => ipt.available(),
    setup(t) {
      for (const [family, list] of byFamily(t.ips)) {
        const spec = masqChain(t.network, t.containerID, family, list);
        transactIptables(ipt, family, (tx) => tx.table(TABLE).ensureChain(spec));
      }
    },
    /**
     * Removes the chain of network+container and every rule jumping to it. Without addresses, in
     * both families (the chain name is a hash of network+container, so addresses are never needed;
     * this also removes upstream's older `-s <ip>/<prefix>` jump form). With addresses, in their
     * families only; when iptables is the `expected` backend, starting from the assumption that the
     * jumps are the ones setup added.
     */
    teardown(t, expected) {
      const name = formatChainName(t.network, t.containerID);
      const known = t.ips !== undefined && t.ips.length > 0 ? byFamily(t.ips) : undefined;
      const families = known ? [...known.keys()] : ([4, 6] as const);
      runAll(families, (family) => `IPv${family}`, (family) => {
        if (ipt.removeChains?.(family, TABLE, [{ chain: name, referrers: [ENTRY_CHAIN] }])) return;
        const jumps = known && expected ? masqChain(t.network, t.containerID, family, known.get(family)!).entryRules : undefined;
        transactIptables(ipt, family, (tx) => tx.table(TABLE).deleteChain(name, [ENTRY_CHAIN], jumps));
      });
    },
    check(t) {
      const problems: string[] = [];
      for (const [family, list] of byFamily(t.ips)) {
        const spec = masqChain(t.network, t.containerID, family, list);
        readIptables(ipt, family, (tx) => {
          const p = tx.table(TABLE);
          if (!p.hasChain(spec.name)) {
            problems.push(`iptables chain ${spec.name} not found in the IPv${family} nat table`);
            return;
          }
          for (const r of missingRules(p.rulesOf(spec.name), spec.rules)) problems.push(`IPv${family} nat chain ${spec.name} lacks rule: ${r.join(" ")}`);
          for (const e of spec.entryRules) {
            if (!p.holds(e.chain, e.rule)) problems.push(`IPv${family} nat ${e.chain} lacks rule: ${e.rule.join(" ")}`);
          }
        });
      }
      return problems;
    },
    /**
     * Beyond upstream (which collects nothing here): the POSTROUTING jumps name their owner in the
     * comment (`name: "<net>" id: "<cid>"`); the chains of this network whose container is in no
     * attachment of `keep` (the ifname is not part of the name) go with their jumps, one restore per
     * family. A jump counts only when it targets the chain named for that owner.
     */
    gc(network, keep) {
      const kept = new Set(keep.map((a) => a.containerID));
      runAll([4, 6] as const, (family) => `IPv${family}`, (family) =>
        transactIptables(ipt, family, (tx) => {
          const nat = tx.table(TABLE);
          const stale = new Set<string>();
          for (const r of nat.rulesOf(ENTRY_CHAIN)) {
            const owner = parseComment(ruleComment(r) ?? "");
            if (owner === undefined || owner.name !== network || kept.has(owner.id)) continue;
            const name = formatChainName(network, owner.id);
            if (ruleTarget(r) === name) stale.add(name);
          }
          for (const name of stale) nat.deleteChain(name, [ENTRY_CHAIN]);
        }),
      );
    },
  };
}
