/**
 * The iptables backend (upstream iptables.go + ingresspolicy.go): the rules of iptables-rules.ts,
 * planned against one iptables-save read and applied as ONE iptables-restore per IP family and
 * call (upstream runs one iptables process per rule), through the iptables variant that holds the
 * host's rules (shared/firewall/iptables/driver.ts).
 *
 * ADD touches only the families that have addresses (plus, for an ingress policy, upstream's
 * findProtos families). CHECK reads only: it never creates chains (upstream does). DEL removes the
 * per-address rules only; the shared chains, jumps and isolation rules stay, as upstream.
 */
import { transactIptables } from "../../shared/firewall/iptables/transact.ts";
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { IptablesPlan, type IptRule } from "../../shared/firewall/iptables/chain.ts";
import type { IptablesDriver } from "../../shared/firewall/iptables/driver.ts";
import { sameRule } from "../../shared/firewall/iptables/rule.ts";
import type { IPFamily } from "../../shared/ip/ip.ts";
import type { FirewallBackend, FirewallTarget } from "./backend.ts";
import { addressRules, adminJump, FILTER, FORWARD, forwardJump, isolationRules, PRIV_CHAIN, STAGE1, STAGE2 } from "./iptables-rules.ts";

/** How often a transaction is recomputed when the table changed under it (concurrent plugins). */

function has(p: IptablesPlan, chain: string, rule: IptRule): boolean {
  return p.rulesOf(chain).some((r) => sameRule(r, rule));
}

/** Upstream InsertUnique(prepend=true) / ensureFirstChainRule. */
function insertFirstUnique(p: IptablesPlan, chain: string, rule: IptRule): void {
  if (!has(p, chain, rule)) p.insertAt(chain, 1, rule);
}

function transact(ipt: IptablesDriver, family: IPFamily, plan: (p: IptablesPlan) => void): void {
  transactIptables(ipt, family, FILTER, plan);
}

/** Plans the shared chains and this target's address rules (upstream setupChains + addRules). */
export function planAdd(p: IptablesPlan, t: FirewallTarget, family: IPFamily): void {
  const addrs = t.addrs.filter((a) => a.family === family);
  if (addrs.length > 0) {
    p.ensureChainExists(PRIV_CHAIN);
    p.ensureChainExists(t.conf.adminChain);
    insertFirstUnique(p, FORWARD, forwardJump);
    insertFirstUnique(p, PRIV_CHAIN, adminJump(t.conf.adminChain));
    for (const a of addrs) for (const r of addressRules(a.host)) p.appendUnique(PRIV_CHAIN, r);
  }
}

/** Plans the isolation chains for `t.bridge` (upstream setupIsolationChains). */
export function planIsolation(p: IptablesPlan, t: FirewallTarget): void {
  if (t.policy === "open" || t.bridge === undefined) return;
  const r = isolationRules(t.policy, t.bridge);
  p.ensureChainExists(STAGE1);
  p.ensureChainExists(STAGE2);
  insertFirstUnique(p, FORWARD, r.forwardJump);
  for (const rule of r.stage1Top) insertFirstUnique(p, STAGE1, rule);
  p.appendUnique(STAGE1, r.stage1Return);
  insertFirstUnique(p, STAGE2, r.stage2Top);
  p.appendUnique(STAGE2, r.stage2Return);
}

/** Problems with this target's rules in one family (empty: all present). */
export function checkFamily(p: IptablesPlan, t: FirewallTarget, family: IPFamily): string[] {
  const addrs = t.addrs.filter((a) => a.family === family);
  if (addrs.length === 0) return [];
  const problems: string[] = [];
  for (const chain of [PRIV_CHAIN, t.conf.adminChain]) {
    if (!p.hasChain(chain)) problems.push(`IPv${family} filter chain ${chain} not found`);
  }
  if (!has(p, FORWARD, forwardJump)) problems.push(`expected ${FORWARD} rule [${forwardJump.join(" ")}] not found`);
  const admin = adminJump(t.conf.adminChain);
  if (!has(p, PRIV_CHAIN, admin)) problems.push(`expected ${PRIV_CHAIN} rule [${admin.join(" ")}] not found`);
  for (const a of addrs) for (const r of addressRules(a.host)) if (!has(p, PRIV_CHAIN, r)) problems.push(`expected rule [${r.join(" ")}] not found`);
  return problems;
}

export function iptablesBackend(ipt: IptablesDriver): FirewallBackend & { addIsolation(t: FirewallTarget): void } {
  const families = (t: FirewallTarget): IPFamily[] => {
    const set = new Set<IPFamily>(t.addrs.map((a) => a.family));
    if (t.policy !== "open") for (const f of t.policyFamilies) set.add(f);
    return ([4, 6] as const).filter((f) => set.has(f));
  };
  const requireTools = (): void => {
    if (!ipt.available()) throw new InternalError("could not initialize iptables: no iptables-save/iptables-restore found");
  };
  return {
    name: "iptables",
    add(t) {
      requireTools();
      for (const family of families(t)) {
        try {
          transact(ipt, family, (p) => {
            planAdd(p, t, family);
            if (t.policyFamilies.includes(family)) planIsolation(p, t);
          });
        } catch (err) {
          throw new InternalError(`failed to set up IPv${family} firewall rules: ${messageOf(err)}`, { cause: err });
        }
      }
    },
    /** The ingress policy alone (used with the firewalld backend, as upstream). */
    addIsolation(t) {
      if (t.policy === "open") return;
      requireTools();
      for (const family of t.policyFamilies) transact(ipt, family, (p) => planIsolation(p, t));
    },
    check(t) {
      requireTools();
      for (const family of [4, 6] as const) {
        if (!t.addrs.some((a) => a.family === family)) continue;
        const problems = checkFamily(new IptablesPlan(FILTER, ipt.readTable(family, FILTER)), t, family);
        if (problems.length > 0) throw new InternalError(problems.join("; "));
      }
    },
    del(t) {
      if (!ipt.available()) return;
      const errors: string[] = [];
      for (const family of [4, 6] as const) {
        const addrs = t.addrs.filter((a) => a.family === family);
        if (addrs.length === 0) continue;
        try {
          transact(ipt, family, (p) => {
            for (const a of addrs) for (const r of addressRules(a.host)) p.deleteRule(PRIV_CHAIN, r);
          });
        } catch (err) {
          errors.push(`IPv${family}: ${messageOf(err)}`);
        }
      }
      if (errors.length > 0) throw new InternalError(`failed to remove firewall rules: ${errors.join("; ")}`);
    },
    gc() {
      // The per-address rules carry no owner: nothing can be attributed (as upstream).
    },
  };
}
