/**
 * portmap with iptables: ONE iptables-restore per IP family and call (nat, plus filter for the
 * localnet guard, in the same restore input), instead of upstream's process per rule. The rules are
 * those of iptables-rules.ts. On the hot path ADD reads CNI-HOSTPORT-DNAT only (plus another
 * container's chain when it names one of our ports), DEL with the mappings reads nothing; the
 * shared chains are asserted in the restore and read only when that fails (see chain.ts).
 */
import type { IptablesPlan, IptRule } from "../../shared/firewall/iptables/chain.ts";
import type { IptablesDriver } from "../../shared/firewall/iptables/driver.ts";
import { chainNeedle, hasRule, ruleComment, ruleTarget, sameRules } from "../../shared/firewall/iptables/rule.ts";
import { readIptables, transactIptables } from "../../shared/firewall/iptables/transact.ts";
import { runAll } from "../../shared/firewall/backend.ts";
import type { IPFamily } from "../../shared/ip/addr.ts";
import type { PortmapFeature } from "./backend.ts";
import type { ForeignPort, ForwardedPort } from "./config.ts";
import { forwardedPort, mappingsForFamily, type PortMapping, type PortmapConfig } from "./config.ts";
import {
  GUARD_ENTRY_RULE,
  GUARD_RULE,
  LOCALNET_GUARD_CHAIN,
  MARK_MASQ_CHAIN,
  MASQ_ENTRY_RULE,
  OLD_TOP_LEVEL_SNAT_CHAIN,
  SETMARK_CHAIN,
  TOP_LEVEL_DNAT_CHAIN,
  TOP_LEVEL_ENTRY_RULE,
  dnatChainName,
  dnatChainRules,
  dnatEntryRules,
  markMasqRule,
  oldSnatChainName,
  parseDnatComment,
  parseDnatEntry,
  parseDnatRule,
  setMarkRule,
} from "./iptables-rules.ts";

/**
 * The bytes an entry rule forwarding `port` certainly holds: the port in its multiport match
 * (struct xt_multiport_v1 keeps ports in host order). Every portmap writes its entry rules with
 * `-m multiport --dports`, so other containers' entries that lack them forward other ports.
 */
function portNeedle(port: number): Uint8Array {
  return new Uint8Array(new Uint16Array([port]).buffer);
}

/**
 * Ports forwarded by other containers' CNI-DN chains in this nat table that could clash with
 * `mine`: only the entry rules holding one of `mine`'s ports are decoded (on a node of hundreds of
 * pods, CNI-HOSTPORT-DNAT holds a rule per pod), and only the chains whose entry rule names one of
 * `mine`'s protocol/port pairs are read.
 */
export function foreignPortsIptables(nat: IptablesPlan, myChain: string, mine: readonly PortMapping[]): ForeignPort[] {
  const out: ForeignPort[] = [];
  const seen = new Set<string>();
  const candidates = new Set<IptRule>();
  for (const port of new Set(mine.map((m) => m.hostPort))) for (const r of nat.rulesMentioning(TOP_LEVEL_DNAT_CHAIN, portNeedle(port))) candidates.add(r);
  for (const entry of candidates) {
    const target = ruleTarget(entry);
    if (target === undefined || target === myChain || !target.startsWith("CNI-DN-") || seen.has(target)) continue;
    const sends = parseDnatEntry(entry);
    if (sends !== undefined && !mine.some((m) => m.protocol === sends.protocol && sends.ports.includes(m.hostPort))) continue;
    seen.add(target);
    const owner = parseDnatComment(ruleComment(entry) ?? "");
    const ownerText = owner ? `container ${JSON.stringify(owner.containerID)} of network ${JSON.stringify(owner.network)}` : `iptables chain ${target}`;
    for (const r of nat.rulesOf(target)) {
      const p = parseDnatRule(r);
      if (p) out.push({ ...p, owner: ownerText });
    }
  }
  return out;
}

/**
 * Removes the container's chains (CNI-DN-…, and upstream's older CNI-SN-…) and every jump to them;
 * returns the ports that were forwarded. With `conf` (the mappings), an optimistic plan deletes the
 * entry rules ADD made without reading anything.
 */
function planUnforward(nat: IptablesPlan, network: string, containerID: string, family: IPFamily, conf?: PortmapConfig): ForwardedPort[] {
  const chain = dnatChainName(network, containerID);
  const old = oldSnatChainName(network, containerID);
  if (nat.optimistic && conf !== undefined && conf.mappings.length > 0) {
    nat.deleteChain(chain, [TOP_LEVEL_DNAT_CHAIN], dnatEntryRules(conf, containerID, family).map((rule) => ({ chain: TOP_LEVEL_DNAT_CHAIN, rule })));
    nat.deleteChain(old, [OLD_TOP_LEVEL_SNAT_CHAIN], []);
    return mappingsForFamily(conf.mappings, family).map(forwardedPort);
  }
  // Without a CNI-DN chain there is nothing of this container (upstream's CNI-SN chains came with one).
  if (!nat.hasChain(chain)) return [];
  const removed = nat.rulesOf(chain).flatMap((r) => parseDnatRule(r) ?? []);
  nat.deleteChain(chain, [TOP_LEVEL_DNAT_CHAIN]);
  nat.deleteChain(old, [OLD_TOP_LEVEL_SNAT_CHAIN]);
  return removed;
}

/** The iptables implementation of portmap. */
export function iptablesPortmap(ipt: IptablesDriver): PortmapFeature {
  return {
    backend: "iptables",
    available: () => ipt.available(),
    /**
     * Makes the family's rules for `t.container` exactly what `t.conf` asks for. Reads
     * CNI-HOSTPORT-DNAT (conflicts, this container's entries); the shared chains and jumps are
     * asserted (after the first container they are all there) and this container's chain is
     * assumed new when no entry jumps to it.
     */
    setup(t) {
      const { conf, containerID, container } = t;
      const family = container.ip.family;
      const chain = dnatChainName(conf.name, containerID);
      transactIptables(ipt, family, (tx) => {
        const nat = tx.table("nat");
        t.foreign?.(foreignPortsIptables(nat, chain, mappingsForFamily(conf.mappings, family)));
        const current = nat.rulesMentioning(TOP_LEVEL_DNAT_CHAIN, chainNeedle(chain)).filter((r) => ruleTarget(r) === chain);
        if (conf.snat && conf.externalSetMarkChain === undefined) {
          nat.ensureChain({ table: "nat", name: SETMARK_CHAIN, rules: [setMarkRule(conf.markMasqBit)], entryRules: [] }, true);
          nat.ensureChain({ table: "nat", name: MARK_MASQ_CHAIN, rules: [markMasqRule(conf.markMasqBit)], entryRules: [] }, true);
          nat.ensureRule("POSTROUTING", MASQ_ENTRY_RULE, "first", true);
        }
        nat.ensureChain(
          {
            table: "nat",
            name: TOP_LEVEL_DNAT_CHAIN,
            rules: [],
            entryRules: [
              { chain: "PREROUTING", rule: TOP_LEVEL_ENTRY_RULE },
              { chain: "OUTPUT", rule: TOP_LEVEL_ENTRY_RULE },
            ],
          },
          true,
        );
        // The container chain is made exact: stale rules from an earlier ADD are replaced.
        nat.replaceChain(chain, dnatChainRules(conf, container), current.length === 0);
        // Entry rules go first in CNI-HOSTPORT-DNAT (upstream HEAD: the newest container wins).
        const entries = dnatEntryRules(conf, containerID, family);
        if (!sameRules(current, entries)) {
          for (const r of current) nat.deleteRule(TOP_LEVEL_DNAT_CHAIN, r);
          entries.forEach((r, i) => nat.insertAt(TOP_LEVEL_DNAT_CHAIN, i + 1, r));
        }
        if (t.guard && family === 4) {
          const filter = tx.table("filter");
          filter.ensureChain({ table: "filter", name: LOCALNET_GUARD_CHAIN, rules: [GUARD_RULE], entryRules: [] }, true);
          filter.ensureRule("INPUT", GUARD_ENTRY_RULE, "first", true);
        }
      });
    },
    /**
     * Removes the container's chains and every rule jumping to them, in its families (both when
     * unknown), without needing the mappings (when iptables is the `expected` backend, the mappings
     * spare the reads). Returns the ports that were forwarded.
     */
    teardown(t, expected) {
      const ports = runAll<IPFamily, ForwardedPort[]>(t.families ?? [4, 6], (family) => `IPv${family}`, (family) => {
        // With the mappings known, the ports need no read: the chains can go in one kernel step.
        const conf = t.conf;
        if (expected && conf !== undefined && conf.mappings.length > 0) {
          const removals = [
            { chain: dnatChainName(t.network, t.containerID), referrers: [TOP_LEVEL_DNAT_CHAIN] },
            { chain: oldSnatChainName(t.network, t.containerID), referrers: [OLD_TOP_LEVEL_SNAT_CHAIN] },
          ];
          if (ipt.removeChains?.(family, "nat", removals)) return mappingsForFamily(conf.mappings, family).map(forwardedPort);
        }
        let removed: ForwardedPort[] = [];
        transactIptables(ipt, family, (tx) => {
          removed = planUnforward(tx.table("nat"), t.network, t.containerID, family, expected ? t.conf : undefined);
        });
        return removed;
      });
      return ports.flat();
    },
    /**
     * Problems with the rules for `t.container` (empty: exactly as ADD made them), including the
     * localnet guard when `t.guard` asks for it. Reads only.
     */
    check(t) {
      const { conf, containerID, container } = t;
      const family = container.ip.family;
      return readIptables(ipt, family, (tx) => {
        const nat = tx.table("nat");
        const chain = dnatChainName(conf.name, containerID);
        if (!nat.hasChain(chain)) return [`chain ${chain} not found in iptables table nat (IPv${family})`];
        const problems: string[] = [];
        if (!sameRules(nat.rulesOf(chain), dnatChainRules(conf, container))) problems.push(`IPv${family} chain ${chain} does not hold the expected rules`);
        for (const e of dnatEntryRules(conf, containerID, family)) {
          if (!hasRule(nat.rulesOf(TOP_LEVEL_DNAT_CHAIN), e)) problems.push(`IPv${family} ${TOP_LEVEL_DNAT_CHAIN} lacks rule: ${e.join(" ")}`);
        }
        for (const c of ["PREROUTING", "OUTPUT"]) {
          if (!hasRule(nat.rulesOf(c), TOP_LEVEL_ENTRY_RULE)) problems.push(`IPv${family} ${c} does not jump to ${TOP_LEVEL_DNAT_CHAIN}`);
        }
        if (conf.snat && conf.externalSetMarkChain === undefined) {
          if (!hasRule(nat.rulesOf(SETMARK_CHAIN), setMarkRule(conf.markMasqBit))) problems.push(`IPv${family} ${SETMARK_CHAIN} lacks its mark rule`);
          if (!hasRule(nat.rulesOf(MARK_MASQ_CHAIN), markMasqRule(conf.markMasqBit))) problems.push(`IPv${family} ${MARK_MASQ_CHAIN} lacks its masquerade rule`);
          if (!hasRule(nat.rulesOf("POSTROUTING"), MASQ_ENTRY_RULE)) problems.push(`IPv${family} POSTROUTING does not jump to ${MARK_MASQ_CHAIN}`);
        }
        if (t.guard && family === 4) {
          const filter = tx.table("filter");
          if (!hasRule(filter.rulesOf(LOCALNET_GUARD_CHAIN), GUARD_RULE)) problems.push(`IPv4 ${LOCALNET_GUARD_CHAIN} lacks its guard rule`);
          if (!hasRule(filter.rulesOf("INPUT"), GUARD_ENTRY_RULE)) problems.push(`IPv4 INPUT does not jump to ${LOCALNET_GUARD_CHAIN}`);
        }
        return problems;
      });
    },
    /** Removes this network's CNI-DN chains whose container is not in `keep`. */
    gc(network, keep) {
      const kept = new Set(keep.map((a) => a.containerID));
      runAll([4, 6] as const, (family) => `IPv${family}`, (family) =>
        transactIptables(ipt, family, (tx) => {
          const nat = tx.table("nat");
          const stale = new Set<string>();
          for (const entry of nat.rulesOf(TOP_LEVEL_DNAT_CHAIN)) {
            const owner = parseDnatComment(ruleComment(entry) ?? "");
            if (owner === undefined || owner.network !== network || kept.has(owner.containerID)) continue;
            // Only chains named for this owner (the comment may have been cut at 255 characters).
            if (ruleTarget(entry) === dnatChainName(network, owner.containerID)) stale.add(owner.containerID);
          }
          for (const containerID of stale) planUnforward(nat, network, containerID, family);
        }),
      );
    },
  };
}
