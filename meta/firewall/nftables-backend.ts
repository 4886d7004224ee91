/**
 * The nftables backend (beyond upstream, whose nftables PR #462 was never merged): the same
 * policy as the iptables backend, in one table of our own, applied as ONE `nft -f -` per call
 * (shared/firewall NftTransaction):
 *
 *   table inet cni_plugins_firewall
 *     chain forward { type filter hook forward priority filter; policy accept; }
 *         jump isolation-stage-1 ; jump cni-forward
 *     chain cni-forward
 *         jump <admin>                                             comment "admin <admin>"
 *         ip daddr <ip> ct state established,related accept        comment "<net-hash> <instance-hash>"
 *         ip saddr <ip> accept                                     comment "<net-hash> <instance-hash>"
 *     chain <admin>                                                (for the administrator's own rules)
 *     chain isolation-stage-1
 *         iifname "<br>" oifname "<br>" drop                       comment "isolated <br>"      (isolated)
 *         iifname "<br>" oifname != "<br>" jump isolation-stage-2  comment "same-bridge <br>"
 *     chain isolation-stage-2
 *         oifname "<br>" drop                                      comment "stage-2 <br>"
 *
 * The per-address rules carry a comment derived from network, container ID and ifname, so DEL
 * and GC find them without prevResult. An `accept` here does not override a drop in another
 * base chain (nftables semantics): on a host whose own forward chain drops, the administrator
 * must accept CNI traffic there; the isolation drops always apply.
 */
import { annotate } from "../../shared/error/annotate.ts";
import { hashPrefix } from "../../shared/firewall/naming.ts";
import type { NftDriver } from "../../shared/firewall/nftables/driver.ts";
import type { NftRuleState, NftTableState } from "../../shared/firewall/nftables/state.ts";
import { NftTransaction } from "../../shared/firewall/nftables/transaction.ts";
import type { FirewallRules, FirewallTarget } from "./backend.ts";
import type { HostAddress } from "./target.ts";

export const NFT_TABLE = "cni_plugins_firewall";
export const NFT_TABLE_COMMENT = "Firewall rules for plugins from github.com/containernetworking/plugins";
export const NFT_FORWARD = "forward";
export const NFT_PRIV = "cni-forward";
export const NFT_STAGE1 = "isolation-stage-1";
export const NFT_STAGE2 = "isolation-stage-2";

/** The comment prefix shared by every per-address rule of one network. */
export function networkTag(network: string): string {
  return hashPrefix(`firewall\0${network}`, 16);
}

/** The comment of one attachment's per-address rules. */
export function instanceComment(network: string, containerID: string, ifName: string): string {
  return `${networkTag(network)} ${hashPrefix(`${network}\0${containerID}\0${ifName}`, 16)}`;
}

/** The two per-address rule bodies. */
export function nftAddressRules(a: HostAddress): string[] {
  const fam = a.family === 6 ? "ip6" : "ip";
  return [`${fam} daddr ${a.ip} ct state established,related accept`, `${fam} saddr ${a.ip} accept`];
}

const commented = (state: NftTableState | undefined, chain: string, comment: string): NftRuleState[] =>
  state?.rules.filter((r) => r.chain === chain && r.comment === comment) ?? [];

/** Plans table, chains and this target's rules against `state` (the table as just read). */
export function planNftAdd(state: NftTableState | undefined, t: FirewallTarget): NftTransaction {
  const admin = t.conf.adminChain;
  const tx = new NftTransaction("inet", NFT_TABLE)
    .addTable({ comment: NFT_TABLE_COMMENT })
    .addChain({ name: NFT_FORWARD, type: "filter", hook: "forward", priority: 0, policy: "accept" })
    .addChain({ name: NFT_PRIV })
    .addChain({ name: admin })
    .addChain({ name: NFT_STAGE1 })
    .addChain({ name: NFT_STAGE2 })
    .flushChain(NFT_FORWARD)
    .addRule({ chain: NFT_FORWARD, rule: `jump ${NFT_STAGE1}` })
    .addRule({ chain: NFT_FORWARD, rule: `jump ${NFT_PRIV}` });
  if (commented(state, NFT_PRIV, `admin ${admin}`).length === 0) tx.insertRule({ chain: NFT_PRIV, rule: `jump ${admin}`, comment: `admin ${admin}` });
  const comment = instanceComment(t.conf.name, t.containerID, t.ifName);
  for (const r of commented(state, NFT_PRIV, comment)) tx.deleteRule(NFT_PRIV, r.handle);
  for (const a of t.addrs) for (const rule of nftAddressRules(a)) tx.addRule({ chain: NFT_PRIV, rule, comment });
  if (t.policy !== "open" && t.bridge !== undefined) {
    const br = JSON.stringify(t.bridge);
    if (commented(state, NFT_STAGE1, `same-bridge ${t.bridge}`).length === 0) {
      tx.insertRule({ chain: NFT_STAGE1, rule: `iifname ${br} oifname != ${br} jump ${NFT_STAGE2}`, comment: `same-bridge ${t.bridge}` });
    }
    if (t.policy === "isolated" && commented(state, NFT_STAGE1, `isolated ${t.bridge}`).length === 0) {
      tx.insertRule({ chain: NFT_STAGE1, rule: `iifname ${br} oifname ${br} drop`, comment: `isolated ${t.bridge}` });
    }
    if (commented(state, NFT_STAGE2, `stage-2 ${t.bridge}`).length === 0) {
      tx.insertRule({ chain: NFT_STAGE2, rule: `oifname ${br} drop`, comment: `stage-2 ${t.bridge}` });
    }
  }
  return tx;
}

/** Problems with this target's rules (empty: all present), the isolation rules too when `t` carries an ingress policy. */
export function checkNft(state: NftTableState | undefined, t: FirewallTarget): string[] {
  if (t.addrs.length === 0) return [];
  if (state === undefined) return [`nftables table inet ${NFT_TABLE} not found`];
  const problems: string[] = [];
  const base = state.chains.find((c) => c.name === NFT_FORWARD);
  if (base?.hook !== "forward") problems.push(`nftables base chain ${NFT_FORWARD} not found`);
  else if (!state.rules.some((r) => r.chain === NFT_FORWARD && r.rule.trim() === `jump ${NFT_PRIV}`)) problems.push(`nftables chain ${NFT_FORWARD} lacks jump ${NFT_PRIV}`);
  if (commented(state, NFT_PRIV, `admin ${t.conf.adminChain}`).length === 0) problems.push(`nftables chain ${NFT_PRIV} lacks jump ${t.conf.adminChain}`);
  const mine = commented(state, NFT_PRIV, instanceComment(t.conf.name, t.containerID, t.ifName)).map((r) => r.rule.replace(/\s+/g, " ").replace(/ == /g, " "));
  for (const a of t.addrs) {
    const fam = a.family === 6 ? "ip6" : "ip";
    for (const [dir, extra] of [["daddr", "ct state"], ["saddr", "accept"]] as const) {
      const needle = `${fam} ${dir} ${a.ip} `;
      if (!mine.some((r) => r.includes(needle) && r.includes(extra))) problems.push(`nftables chain ${NFT_PRIV} lacks the ${dir} rule for ${a.ip}`);
    }
  }
  if (t.policy !== "open" && t.bridge !== undefined) {
    if (!state.rules.some((r) => r.chain === NFT_FORWARD && r.rule.trim() === `jump ${NFT_STAGE1}`)) problems.push(`nftables chain ${NFT_FORWARD} lacks jump ${NFT_STAGE1}`);
    const wanted: [string, string][] = [[NFT_STAGE1, `same-bridge ${t.bridge}`], [NFT_STAGE2, `stage-2 ${t.bridge}`]];
    if (t.policy === "isolated") wanted.push([NFT_STAGE1, `isolated ${t.bridge}`]);
    for (const [chain, comment] of wanted) if (commented(state, chain, comment).length === 0) problems.push(`nftables chain ${chain} lacks the rule "${comment}"`);
  }
  return problems;
}

/** The nftables implementation of the firewall plugin. */
export function nftablesFirewall(nft: NftDriver): FirewallRules {
  const read = (): NftTableState | undefined => nft.listTable("inet", NFT_TABLE);
  /** Deletes the cni-forward rules whose comment `drop` accepts (only that chain is read). */
  const deleteRules = (drop: (comment: string) => boolean): void => {
    const tx = new NftTransaction("inet", NFT_TABLE);
    for (const r of nft.listChain("inet", NFT_TABLE, NFT_PRIV) ?? []) if (r.comment !== undefined && drop(r.comment)) tx.deleteRule(NFT_PRIV, r.handle);
    nft.run(tx);
  };
  return {
    backend: "nftables",
    available: () => nft.available(),
    setup(t) {
      annotate("failed to set up nftables firewall rules", () => nft.run(planNftAdd(read(), t)));
    },
    check: (t) => checkNft(read(), t),
    teardown(t) {
      const mine = instanceComment(t.conf.name, t.containerID, t.ifName);
      deleteRules((c) => c === mine);
    },
    gc(network, keep) {
      const tag = `${networkTag(network)} `;
      const valid = new Set(keep.map((k) => instanceComment(network, k.containerID, k.ifName)));
      deleteRules((c) => c.startsWith(tag) && !valid.has(c));
    },
  };
}
