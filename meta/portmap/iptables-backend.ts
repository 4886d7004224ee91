/**
 * portmap with iptables: one iptables-save per table read and ONE iptables-restore per IP family
 * and call (nat, plus filter for the localnet guard, in the same restore input), instead of
 * upstream's process per rule.
 */
import { CommandError } from "../../shared/firewall/exec.ts";
import type { IptablesDriver } from "../../shared/firewall/iptables/driver.ts";
import { IptablesPlan } from "../../shared/firewall/iptables/chain.ts";
import { ruleTarget, sameRule } from "../../shared/firewall/iptables/rule.ts";
import { ruleLine } from "../../shared/firewall/iptables/save-format.ts";
import type { CIDR, IPFamily } from "../../shared/ip/ip.ts";
import type { PortmapConfig } from "./config.ts";
import {
  GUARD_ENTRY_RULE,
  GUARD_RULE,
  LOCALNET_GUARD_CHAIN,
  MARK_MASQ_CHAIN,
  MASQ_ENTRY_RULE,
  SETMARK_CHAIN,
  TOP_LEVEL_DNAT_CHAIN,
  TOP_LEVEL_ENTRY_RULE,
  dnatChainName,
  dnatChainRules,
  dnatEntryRules,
  markMasqRule,
  oldSnatChainName,
  parseDnatComment,
  parseDnatRule,
  setMarkRule,
  type ForwardedPort,
} from "./iptables-rules.ts";

const ATTEMPTS = 3;

/** A port another container already forwards. */
export interface ForeignPort extends ForwardedPort {
  owner: string;
}

function commentOf(rule: readonly string[]): string | undefined {
  const i = rule.indexOf("--comment");
  return i >= 0 ? rule[i + 1] : undefined;
}

function sameList(a: readonly (readonly string[])[], b: readonly (readonly string[])[]): boolean {
  return a.length === b.length && a.every((r, i) => sameRule(r, b[i]!));
}

/**
 * Reads, plans and applies (nat and optionally filter) in one restore; retried when the tables
 * changed meanwhile. `plan` may return extra nat lines appended after the planned ones (bulk rule
 * lists, written without the planner's per-rule duplicate scan, which is quadratic).
 */
function transact(ipt: IptablesDriver, family: IPFamily, plan: (nat: IptablesPlan, filter: () => IptablesPlan) => string[] | void): void {
  for (let attempt = 1; ; attempt++) {
    const nat = new IptablesPlan("nat", ipt.readTable(family, "nat"));
    let filter: IptablesPlan | undefined;
    const extra = plan(nat, () => (filter ??= new IptablesPlan("filter", ipt.readTable(family, "filter"))));
    const planned = nat.render();
    const inner = planned === "" ? "" : planned.slice("*nat\n".length, -"COMMIT\n".length);
    const natText = inner === "" && !extra?.length ? "" : `*nat\n${inner}${(extra ?? []).map((l) => `${l}\n`).join("")}COMMIT\n`;
    const text = natText + (filter?.render() ?? "");
    if (text === "") return;
    try {
      ipt.restore(family, text);
      return;
    } catch (err) {
      if (attempt >= ATTEMPTS || !(err instanceof CommandError)) throw err;
    }
  }
}

/** Ports forwarded by other containers' CNI-DN chains in this nat table. */
export function foreignPortsIptables(nat: IptablesPlan, myChain: string): ForeignPort[] {
  const out: ForeignPort[] = [];
  const seen = new Set<string>();
  for (const entry of nat.rulesOf(TOP_LEVEL_DNAT_CHAIN)) {
    const target = ruleTarget(entry);
    if (target === undefined || target === myChain || !target.startsWith("CNI-DN-") || seen.has(target)) continue;
    seen.add(target);
    const owner = parseDnatComment(commentOf(entry) ?? "");
    const ownerText = owner ? `container ${JSON.stringify(owner.containerID)} of network ${JSON.stringify(owner.network)}` : `iptables chain ${target}`;
    for (const r of nat.rulesOf(target)) {
      const p = parseDnatRule(r);
      if (p) out.push({ ...p, owner: ownerText });
    }
  }
  return out;
}

/** Makes the per-family rules for `container` exactly what `conf` asks for. */
export function forwardPortsIptables(
  ipt: IptablesDriver,
  conf: PortmapConfig,
  containerID: string,
  container: CIDR,
  opts: { guard: boolean; checkConflicts: (foreign: ForeignPort[], family: IPFamily) => void },
): void {
  const family = container.ip.family;
  const chain = dnatChainName(conf.name, containerID);
  transact(ipt, family, (nat, filter) => {
    opts.checkConflicts(foreignPortsIptables(nat, chain), family);
    if (conf.snat && conf.externalSetMarkChain === undefined) {
      nat.ensureChain({ table: "nat", name: SETMARK_CHAIN, rules: [setMarkRule(conf.markMasqBit)], entryRules: [] });
      nat.ensureChain({ table: "nat", name: MARK_MASQ_CHAIN, rules: [markMasqRule(conf.markMasqBit)], entryRules: [] });
      if (!nat.rulesOf("POSTROUTING").some((r) => sameRule(r, MASQ_ENTRY_RULE))) nat.insertAt("POSTROUTING", 1, MASQ_ENTRY_RULE);
    }
    nat.ensureChain({
      table: "nat",
      name: TOP_LEVEL_DNAT_CHAIN,
      rules: [],
      entryRules: [
        { chain: "PREROUTING", rule: TOP_LEVEL_ENTRY_RULE },
        { chain: "OUTPUT", rule: TOP_LEVEL_ENTRY_RULE },
      ],
    });
    // The container chain is made exact: stale rules from an earlier ADD are replaced.
    const rules = dnatChainRules(conf, container);
    const existed = nat.hasChain(chain);
    const rewrite = !existed || !sameList(nat.rulesOf(chain), rules);
    nat.ensureChainExists(chain);
    // Entry rules go first in CNI-HOSTPORT-DNAT (upstream HEAD: the newest container wins).
    const entries = dnatEntryRules(conf, containerID, family);
    const current = nat.rulesOf(TOP_LEVEL_DNAT_CHAIN).filter((r) => ruleTarget(r) === chain);
    if (!sameList(current, entries)) {
      for (const r of current) nat.deleteRule(TOP_LEVEL_DNAT_CHAIN, r);
      entries.forEach((r, i) => nat.insertAt(TOP_LEVEL_DNAT_CHAIN, i + 1, r));
    }
    if (opts.guard && family === 4) {
      const f = filter();
      f.ensureChain({ table: "filter", name: LOCALNET_GUARD_CHAIN, rules: [GUARD_RULE], entryRules: [] });
      if (!f.rulesOf("INPUT").some((r) => sameRule(r, GUARD_ENTRY_RULE))) f.insertAt("INPUT", 1, GUARD_ENTRY_RULE);
    }
    if (!rewrite) return [];
    return [...(existed ? [`-F ${chain}`] : []), ...rules.map((r) => ruleLine("-A", chain, r))];
  });
}

/**
 * Removes the container's chains (CNI-DN-…, legacy CNI-SN-…) and every rule jumping to them, in
 * both families, without needing the mappings. Returns the ports that were forwarded.
 */
export function unforwardPortsIptables(ipt: IptablesDriver, network: string, containerID: string): ForwardedPort[] {
  const chain = dnatChainName(network, containerID);
  const old = oldSnatChainName(network, containerID);
  const removed: ForwardedPort[] = [];
  for (const family of [4, 6] as const) {
    transact(ipt, family, (nat) => {
      removed.push(...nat.rulesOf(chain).flatMap((r) => parseDnatRule(r) ?? []));
      nat.deleteChain(chain);
      nat.deleteChain(old);
    });
  }
  return removed;
}

/** CHECK: problems with the rules for `container` (empty: exactly as ADD made them). Reads only. */
export function checkPortsIptables(ipt: IptablesDriver, conf: PortmapConfig, containerID: string, container: CIDR): string[] {
  const family = container.ip.family;
  const nat = new IptablesPlan("nat", ipt.readTable(family, "nat"));
  const chain = dnatChainName(conf.name, containerID);
  const problems: string[] = [];
  if (!nat.hasChain(chain)) return [`chain ${chain} not found in iptables table nat (IPv${family})`];
  const want = dnatChainRules(conf, container);
  if (!sameList(nat.rulesOf(chain), want)) problems.push(`IPv${family} chain ${chain} does not hold the expected rules`);
  const entries = nat.rulesOf(TOP_LEVEL_DNAT_CHAIN);
  for (const e of dnatEntryRules(conf, containerID, family)) {
    if (!entries.some((r) => sameRule(r, e))) problems.push(`IPv${family} ${TOP_LEVEL_DNAT_CHAIN} lacks rule: ${e.join(" ")}`);
  }
  for (const c of ["PREROUTING", "OUTPUT"]) {
    if (!nat.rulesOf(c).some((r) => sameRule(r, TOP_LEVEL_ENTRY_RULE))) problems.push(`IPv${family} ${c} does not jump to ${TOP_LEVEL_DNAT_CHAIN}`);
  }
  if (conf.snat && conf.externalSetMarkChain === undefined) {
    if (!nat.rulesOf(SETMARK_CHAIN).some((r) => sameRule(r, setMarkRule(conf.markMasqBit)))) problems.push(`IPv${family} ${SETMARK_CHAIN} lacks its mark rule`);
    if (!nat.rulesOf(MARK_MASQ_CHAIN).some((r) => sameRule(r, markMasqRule(conf.markMasqBit)))) problems.push(`IPv${family} ${MARK_MASQ_CHAIN} lacks its masquerade rule`);
    if (!nat.rulesOf("POSTROUTING").some((r) => sameRule(r, MASQ_ENTRY_RULE))) problems.push(`IPv${family} POSTROUTING does not jump to ${MARK_MASQ_CHAIN}`);
  }
  return problems;
}

/** GC: removes this network's CNI-DN chains whose container is not in `keep`. */
export function gcPortsIptables(ipt: IptablesDriver, network: string, keep: ReadonlySet<string>): void {
  for (const family of [4, 6] as const) {
    transact(ipt, family, (nat) => {
      const stale = new Map<string, string>();
      for (const entry of nat.rulesOf(TOP_LEVEL_DNAT_CHAIN)) {
        const target = ruleTarget(entry);
        const owner = parseDnatComment(commentOf(entry) ?? "");
        if (target === undefined || !target.startsWith("CNI-DN-") || owner === undefined) continue;
        if (owner.network !== network || keep.has(owner.containerID)) continue;
        // Only chains named for this owner (the comment may have been cut at 255 characters).
        if (target === dnatChainName(network, owner.containerID)) stale.set(target, owner.containerID);
      }
      for (const [c, containerID] of stale) {
        nat.deleteChain(c);
        nat.deleteChain(oldSnatChainName(network, containerID));
      }
    });
  }
}
