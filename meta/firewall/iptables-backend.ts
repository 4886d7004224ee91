/**
 * The iptables backend (upstream iptables.go + ingresspolicy.go): the rules of iptables-rules.ts,
 * applied as ONE iptables-restore per IP family and call (upstream runs one iptables process per
 * rule), through the iptables variant that holds the host's rules (shared/firewall/iptables/driver.ts).
 * ADD reads FORWARD and CNI-FORWARD only. DEL with iptables-nft reads CNI-FORWARD over netlink
 * and deletes the address rules in one kernel batch, no tool run (the driver's deleteRules); when
 * that cannot decide (a rule in CNI-FORWARD it does not read), and with iptables-legacy, DEL
 * reads nothing unless its restore fails.
 *
 * ADD touches only the families that have addresses (plus, for an ingress policy, upstream's
 * findProtos families). CHECK reads only: it never creates chains (upstream does). DEL removes the
 * per-address rules only; the shared chains, jumps and isolation rules stay, as upstream.
 */
import { annotate } from "../../shared/error/annotate.ts";
import { runAll } from "../../shared/firewall/backend.ts";
import type { IptablesPlan, IptRule } from "../../shared/firewall/iptables/chain.ts";
import type { IptablesDriver } from "../../shared/firewall/iptables/driver.ts";
import { readIptables, transactIptables } from "../../shared/firewall/iptables/transact.ts";
import type { IPFamily } from "../../shared/ip/addr.ts";
import type { FirewallRules, FirewallTarget } from "./backend.ts";
import { addressRules, adminJump, FILTER, FORWARD, forwardJump, isolationRules, PRIV_CHAIN, STAGE1, STAGE2 } from "./iptables-rules.ts";

/**
 * Plans the shared chains and this target's address rules (upstream setupChains + addRules),
 * reading FORWARD and CNI-FORWARD (the admin chain is known to exist when CNI-FORWARD jumps to it).
 */
export function planAdd(p: IptablesPlan, t: FirewallTarget, family: IPFamily): void {
  const addrs = t.addrs.filter((a) => a.family === family);
  if (addrs.length === 0) return;
  p.ensureChainExists(PRIV_CHAIN);
  p.ensureChainExists(t.conf.adminChain);
  p.ensureRule(FORWARD, forwardJump, "first");
  p.ensureRule(PRIV_CHAIN, adminJump(t.conf.adminChain), "first");
  for (const a of addrs) for (const r of addressRules(a.host)) p.ensureRule(PRIV_CHAIN, r, "last");
}

/** Plans the isolation chains for `t.bridge` (upstream setupIsolationChains). */
export function planIsolation(p: IptablesPlan, t: FirewallTarget): void {
  if (t.policy === "open" || t.bridge === undefined) return;
  const r = isolationRules(t.policy, t.bridge);
  p.ensureChainExists(STAGE1);
  p.ensureChainExists(STAGE2);
  p.ensureRule(FORWARD, r.forwardJump, "first");
  for (const rule of r.stage1Top) p.ensureRule(STAGE1, rule, "first");
  p.ensureRule(STAGE1, r.stage1Return, "last");
  p.ensureRule(STAGE2, r.stage2Top, "first");
  p.ensureRule(STAGE2, r.stage2Return, "last");
}

/** Problems with this target's rules in one family (empty: all present). */
export function checkFamily(p: IptablesPlan, t: FirewallTarget, family: IPFamily): string[] {
  const addrs = t.addrs.filter((a) => a.family === family);
  if (addrs.length === 0) return [];
  const problems: string[] = [];
  for (const chain of [PRIV_CHAIN, t.conf.adminChain]) {
    if (!p.hasChain(chain)) problems.push(`IPv${family} filter chain ${chain} not found`);
  }
  if (!p.holds(FORWARD, forwardJump)) problems.push(`expected ${FORWARD} rule [${forwardJump.join(" ")}] not found`);
  const admin = adminJump(t.conf.adminChain);
  if (!p.holds(PRIV_CHAIN, admin)) problems.push(`expected ${PRIV_CHAIN} rule [${admin.join(" ")}] not found`);
  for (const a of addrs) for (const r of addressRules(a.host)) if (!p.holds(PRIV_CHAIN, r)) problems.push(`expected rule [${r.join(" ")}] not found`);
  return problems;
}

/** Problems with the isolation rules of `t.bridge` in one family (upstream setupIsolationChains; empty for `open`). */
export function checkIsolation(p: IptablesPlan, t: FirewallTarget): string[] {
  if (t.policy === "open" || t.bridge === undefined) return [];
  const r = isolationRules(t.policy, t.bridge);
  const want: [string, IptRule][] = [
    [FORWARD, r.forwardJump],
    ...r.stage1Top.map((rule): [string, IptRule] => [STAGE1, rule]),
    [STAGE1, r.stage1Return],
    [STAGE2, r.stage2Top],
    [STAGE2, r.stage2Return],
  ];
  return want.filter(([chain, rule]) => !p.holds(chain, rule)).map(([chain, rule]) => `expected ${chain} rule [${rule.join(" ")}] not found`);
}

/** The ingress policy's problems in its families, read only (used with the firewalld backend, as upstream). */
export function checkIsolationIptables(ipt: IptablesDriver, t: FirewallTarget): string[] {
  if (t.policy === "open") return [];
  requireTools(ipt);
  return t.policyFamilies.flatMap((family) => readIptables(ipt, family, (tx) => checkIsolation(tx.table(FILTER), t).map((p) => `IPv${family}: ${p}`)));
}

function requireTools(ipt: IptablesDriver): void {
  if (!ipt.available()) throw new Error("could not initialize iptables: no iptables-save/iptables-restore found");
}

/** The ingress policy alone (used with the firewalld backend, as upstream). */
export function addIsolationIptables(ipt: IptablesDriver, t: FirewallTarget): void {
  if (t.policy === "open") return;
  requireTools(ipt);
  for (const family of t.policyFamilies) transactIptables(ipt, family, (tx) => planIsolation(tx.table(FILTER), t));
}

/** The iptables implementation of the firewall plugin. */
export function iptablesFirewall(ipt: IptablesDriver): FirewallRules {
  const families = (t: FirewallTarget): IPFamily[] => {
    const set = new Set<IPFamily>(t.addrs.map((a) => a.family));
    if (t.policy !== "open") for (const f of t.policyFamilies) set.add(f);
    return ([4, 6] as const).filter((f) => set.has(f));
  };
  const withAddrs = (t: FirewallTarget): IPFamily[] => ([4, 6] as const).filter((f) => t.addrs.some((a) => a.family === f));
  return {
    backend: "iptables",
    available: () => ipt.available(),
    setup(t) {
      requireTools(ipt);
      for (const family of families(t)) {
        annotate(`failed to set up IPv${family} firewall rules`, () =>
          transactIptables(ipt, family, (tx) => {
            const p = tx.table(FILTER);
            planAdd(p, t, family);
            if (t.policyFamilies.includes(family)) planIsolation(p, t);
          }),
        );
      }
    },
    /** The address rules (and, when `t` carries an ingress policy, the isolation rules). */
    check(t) {
      requireTools(ipt);
      return [...withAddrs(t).flatMap((family) => readIptables(ipt, family, (tx) => checkFamily(tx.table(FILTER), t, family))), ...checkIsolationIptables(ipt, t)];
    },
    teardown(t, expected) {
      annotate("failed to remove firewall rules", () =>
        runAll(withAddrs(t), (family) => `IPv${family}`, (family) => {
          const rules = t.addrs.filter((a) => a.family === family).flatMap((a) => addressRules(a.host));
          if (ipt.deleteRules?.(family, FILTER, PRIV_CHAIN, rules)) return;
          transactIptables(ipt, family, (tx) => {
            const p = tx.table(FILTER);
            for (const r of rules) p.deleteRule(PRIV_CHAIN, r, expected);
          });
        }),
      );
    },
    gc() {
      // The per-address rules carry no owner: GC takes their addresses from ADD's records (gc.ts).
    },
  };
}
