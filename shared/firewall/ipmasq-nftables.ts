/**
 * ipMasq with nftables (upstream `pkg/ip/ipmasq_nftables_linux.go`), one `nft -f -` transaction
 * per call, in table `inet cni_plugins_masquerade`:
 *   chain masq_checks: `ip saddr == <ip> ip daddr != <net>/<prefix> masquerade` per address, with
 *                      comment `<h16(net)>-<h16(if:cid)>, net: …, if: …, id: …`
 *   base chain postrouting (nat, postrouting, 100), flushed and refilled on every setup with the
 *                      multicast returns and `goto masq_checks`.
 * Rules are found again by their comment prefix (the instance hash), never by address, so a
 * teardown needs no addresses and never removes another container's rule for a reused address.
 */
import { formatIP } from "../ip/addr.ts";
import { networkAddress, formatCIDR, type CIDR } from "../ip/cidr.ts";
import type { MasqFeature } from "./ipmasq-feature.ts";
import type { NftDriver } from "./nftables/driver.ts";
import { normalizeRule } from "./nftables/state.ts";
import type { NftRuleRef } from "../netlink/nftables-rule.ts";
import { NftTransaction } from "./nftables/transaction.ts";
import { masqInstanceComment, masqInstanceHash, masqNetworkHash } from "./naming.ts";

export const MASQ_TABLE = "cni_plugins_masquerade";
export const MASQ_CHAIN = "masq_checks";
export const MASQ_TABLE_COMMENT = "Masquerading for plugins from github.com/containernetworking/plugins";
export const MASQ_CHAIN_COMMENT = "Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet";

/** The masq_checks rule body for one address. */
export function masqRule(ip: CIDR): string {
  const fam = ip.ip.family === 6 ? "ip6" : "ip";
  const net = formatCIDR({ ip: networkAddress(ip.ip, ip.prefixLen), prefixLen: ip.prefixLen });
  return `${fam} saddr == ${formatIP(ip.ip)} ${fam} daddr != ${net} masquerade`;
}

/** masq_checks rules whose comment starts with `prefix` (only that chain is read). */
function findRules(nft: NftDriver, prefix: string): NftRuleRef[] {
  return (nft.listChain("inet", MASQ_TABLE, MASQ_CHAIN) ?? []).filter((r) => r.comment !== undefined && r.comment.startsWith(prefix));
}

/** A transaction deleting `rules` from masq_checks (empty when there are none). */
function deleteRules(rules: readonly NftRuleRef[], tx = new NftTransaction("inet", MASQ_TABLE)): NftTransaction {
  for (const r of rules) tx.deleteRule(MASQ_CHAIN, r.handle);
  return tx;
}

/** The nftables implementation of ipMasq. */
export function nftablesMasq(nft: NftDriver): MasqFeature {
  return {
    backend: "nftables",
    available: () => nft.available(),
    setup(t) {
      const stale = findRules(nft, masqInstanceHash(t.network, t.ifName, t.containerID));
      const tx = new NftTransaction("inet", MASQ_TABLE)
        .addTable({ comment: MASQ_TABLE_COMMENT })
        .addChain({ name: MASQ_CHAIN, comment: MASQ_CHAIN_COMMENT })
        .addChain({ name: "postrouting", type: "nat", hook: "postrouting", priority: 100 })
        .flushChain("postrouting")
        .addRule({ chain: "postrouting", rule: "ip daddr == 224.0.0.0/4  return" })
        .addRule({ chain: "postrouting", rule: "ip6 daddr == ff00::/8  return" })
        .addRule({ chain: "postrouting", rule: `goto ${MASQ_CHAIN}` });
      deleteRules(stale, tx);
      const comment = masqInstanceComment(t.network, t.ifName, t.containerID);
      for (const ip of t.ips) tx.addRule({ chain: MASQ_CHAIN, rule: masqRule(ip), comment });
      nft.run(tx);
    },
    /** Deletes the instance's rules (found by comment prefix; no addresses needed). */
    teardown(t) {
      nft.run(deleteRules(findRules(nft, masqInstanceHash(t.network, t.ifName, t.containerID))));
    },
    check(t) {
      const state = nft.listTable("inet", MASQ_TABLE);
      if (state === undefined) return [`nftables table inet ${MASQ_TABLE} not found`];
      const problems: string[] = [];
      if (!state.chains.some((c) => c.name === "postrouting" && c.hook === "postrouting")) problems.push(`nftables base chain inet ${MASQ_TABLE} postrouting not found`);
      else if (!state.rules.some((r) => r.chain === "postrouting" && normalizeRule(r.rule) === `goto ${MASQ_CHAIN}`)) problems.push(`nftables chain postrouting lacks goto ${MASQ_CHAIN}`);
      const comment = masqInstanceComment(t.network, t.ifName, t.containerID);
      const mine = state.rules.filter((r) => r.chain === MASQ_CHAIN && r.comment === comment).map((r) => normalizeRule(r.rule));
      for (const ip of t.ips) {
        const want = normalizeRule(masqRule(ip));
        if (!mine.includes(want)) problems.push(`nftables chain ${MASQ_CHAIN} lacks rule: ${want} comment "${comment}"`);
      }
      return problems;
    },
    /** Upstream GC: deletes the network's rules that belong to none of `keep`. */
    gc(network, keep) {
      const valid = new Set(keep.map((a) => masqInstanceComment(network, a.ifName, a.containerID)));
      nft.run(deleteRules(findRules(nft, masqNetworkHash(network)).filter((r) => !valid.has(r.comment!))));
    },
  };
}
