/**
 * portmap with nftables (upstream `portmap_nftables.go` at HEAD), one `nft -f -` transaction per
 * IP family, in table `ip|ip6 cni_hostport` (comment "CNI portmap plugin"):
 *   chain hostports_all:   jump hostip_hostports ; jump hostports
 *   chain prerouting (nat, prerouting, -100):  [conditions] fib daddr type local jump hostports_all
 *   chain output     (nat, output, -100):      [conditions] fib daddr type local jump hostports_all
 *   chain hostports:       [ip daddr <hostIP>] <proto> dport <hp> dnat to <ip>:<cp>   comment "<cid>"
 *                          (inserted ahead of older containers' rules: the newest ADD wins a clash,
 *                          where upstream appends and the oldest wins)
 *   chain masquerading (nat, postrouting, 100), with snat:
 *                          ip saddr <ip> ip daddr <ip> masquerade                   comment "<cid>"
 *                          ip saddr 127.0.0.1 ip daddr <ip> masquerade              comment "<cid>" (IPv4)
 *   chain localnet_guard (filter, input, 0), IPv4 with snat (ours; upstream #729):
 *                          ip saddr != 127.0.0.0/8 ip daddr 127.0.0.0/8 ct state new,invalid drop
 * `fib daddr type local` on every entry is the CVE-2025-67499 fix: only traffic addressed to this
 * host is captured, never traffic routed through it. Rules are found again by their comment
 * (the container ID), as upstream, so Go and TypeScript delete each other's rules.
 */
import { nodeAddresses as configuredNodeAddresses } from "../../shared/iface/node-addresses.ts";
import type { NftDriver } from "../../shared/firewall/nftables/driver.ts";
import { runAll } from "../../shared/firewall/backend.ts";
import { normalizeRule, type NftRuleState, type NftTableState } from "../../shared/firewall/nftables/state.ts";
import { NftTransaction, type NftFamily } from "../../shared/firewall/nftables/transaction.ts";
import { formatIP, type IPFamily } from "../../shared/ip/addr.ts";
import type { CIDR } from "../../shared/ip/cidr.ts";
import type { PortmapFeature } from "./backend.ts";
import type { ForeignPort, ForwardedPort } from "./config.ts";
import { forwardedPort, hasHostDst, hostText, mappingsForFamily, type PortmapConfig } from "./config.ts";
import { sameHost } from "./conflicts.ts";
import { ipPort } from "./iptables-rules.ts";

export const NFT_TABLE = "cni_hostport";
export const NFT_TABLE_COMMENT = "CNI portmap plugin";
const HOSTPORTS = "hostports";
const HOSTIP_HOSTPORTS = "hostip_hostports";
const HOSTPORTS_ALL = "hostports_all";
const MASQUERADING = "masquerading";
const GUARD = "localnet_guard";
const MAPPING_CHAINS = [HOSTPORTS, HOSTIP_HOSTPORTS, MASQUERADING] as const;

export const GUARD_RULE_NFT = "ip saddr != 127.0.0.0/8 ip daddr 127.0.0.0/8 ct state new,invalid drop";

function nftFamily(family: IPFamily): NftFamily {
  return family === 6 ? "ip6" : "ip";
}

/** What one rule of hostports/hostip_hostports forwards, decoded from `nft -j` expressions. */
export interface NftForward extends ForwardedPort {
  toAddr: string;
  toPort: number;
}

type J = Record<string, any>;

/** Decodes `[ip daddr X] [ip protocol P th|P] dport N dnat [ip] [addr . port] to A:B` from a rule's JSON. */
export function parseNftForward(rule: NftRuleState): NftForward | undefined {
  let protocol = "";
  let hostPort = 0;
  let hostIP = "";
  let toAddr = "";
  let toPort = 0;
  for (const s of (rule.expr ?? []) as J[]) {
    if (s.match) {
      const left = s.match.left as J;
      const right = s.match.right;
      if (s.match.op !== "==" && s.match.op !== undefined) return undefined;
      if (left?.payload?.field === "dport") {
        hostPort = Number(right);
        if (left.payload.protocol !== "th") protocol = left.payload.protocol;
      } else if (left?.payload?.field === "daddr" && typeof right === "string") hostIP = right;
      else if (left?.payload?.field === "protocol" || left?.meta?.key === "l4proto") protocol = String(right);
    } else if (s.dnat) {
      const addr = s.dnat.addr;
      if (typeof addr === "string") {
        toAddr = addr;
        toPort = Number(s.dnat.port ?? 0);
      } else if (addr?.concat) {
        toAddr = String(addr.concat[0]);
        toPort = Number(addr.concat[1]);
      }
    }
  }
  if (protocol === "" || hostPort === 0 || toAddr === "") return undefined;
  return { protocol, hostPort, hostIP, toAddr, toPort };
}

/** True for a rule of the shape ADD writes: a dnat in hostports/hostip_hostports, a masquerade in masquerading. */
function isMappingRule(r: NftRuleState): boolean {
  const body = normalizeRule(r.rule);
  if (r.chain === MASQUERADING) return body.endsWith(" masquerade");
  return (r.chain === HOSTPORTS || r.chain === HOSTIP_HOSTPORTS) && body.includes(" dnat ");
}

/** Rules of the mapping chains carrying `comment`. */
function rulesWithComment(state: NftTableState | undefined, comment: string): NftRuleState[] {
  if (state === undefined) return [];
  return state.rules.filter((r) => (MAPPING_CHAINS as readonly string[]).includes(r.chain) && r.comment === comment);
}

/** Ports forwarded by other containers' rules in one family's table. */
export function foreignPortsNftables(state: NftTableState | undefined, containerID: string): ForeignPort[] {
  if (state === undefined) return [];
  const out: ForeignPort[] = [];
  for (const r of state.rules) {
    if ((r.chain !== HOSTPORTS && r.chain !== HOSTIP_HOSTPORTS) || r.comment === containerID) continue;
    const f = parseNftForward(r);
    if (f) out.push({ protocol: f.protocol, hostPort: f.hostPort, hostIP: f.hostIP, owner: r.comment ? `container ${JSON.stringify(r.comment)}` : `nftables rule handle ${r.handle}` });
  }
  return out;
}

/** The hostports rule bodies for `container`. */
export function nftForwardRules(conf: PortmapConfig, container: CIDR): string[] {
  const fam = nftFamily(container.ip.family);
  return mappingsForFamily(conf.mappings, container.ip.family).map((m) => {
    const dst = hasHostDst(m) ? `${fam} daddr ${hostText(m)} ` : "";
    return `${dst}${m.protocol} dport ${m.hostPort} dnat to ${ipPort(container, m.containerPort)}`;
  });
}

/** The masquerading rule bodies for `container` (empty without snat). */
export function nftMasqRules(conf: PortmapConfig, container: CIDR): string[] {
  if (!conf.snat) return [];
  const fam = nftFamily(container.ip.family);
  const ip = formatIP(container.ip);
  const any = container.ip.family === 6 ? "::/0" : "0.0.0.0/0";
  const out = [`${fam} saddr ${conf.masqAll ? any : ip} ${fam} daddr ${ip} masquerade`];
  if (container.ip.family === 4 && !conf.masqAll) out.push(`ip saddr 127.0.0.1 ip daddr ${ip} masquerade`);
  return out;
}

/** Builds the ADD transaction (exported for golden tests). `stale` = this container's current rules. */
export function buildForwardTx(conf: PortmapConfig, containerID: string, container: CIDR, stale: readonly NftRuleState[], guard: boolean): NftTransaction {
  const family = container.ip.family;
  const conditions = ((family === 6 ? conf.conditionsV6 : conf.conditionsV4) ?? []).join(" ");
  const entry = `${conditions ? `${conditions} ` : ""}fib daddr type local jump ${HOSTPORTS_ALL}`;
  const tx = new NftTransaction(nftFamily(family), NFT_TABLE)
    .addTable({ comment: NFT_TABLE_COMMENT })
    .addChain({ name: HOSTPORTS })
    .addChain({ name: HOSTIP_HOSTPORTS })
    .addChain({ name: HOSTPORTS_ALL })
    .flushChain(HOSTPORTS_ALL)
    .addRule({ chain: HOSTPORTS_ALL, rule: `jump ${HOSTIP_HOSTPORTS}` })
    .addRule({ chain: HOSTPORTS_ALL, rule: `jump ${HOSTPORTS}` })
    .addChain({ name: "prerouting", type: "nat", hook: "prerouting", priority: -100 })
    .flushChain("prerouting")
    .addRule({ chain: "prerouting", rule: entry })
    .addChain({ name: "output", type: "nat", hook: "output", priority: -100 })
    .flushChain("output")
    .addRule({ chain: "output", rule: entry });
  if (conf.snat) tx.addChain({ name: MASQUERADING, type: "nat", hook: "postrouting", priority: 100 });
  if (guard && family === 4) {
    tx.addChain({ name: GUARD, type: "filter", hook: "input", priority: 0 })
      .flushChain(GUARD)
      .addRule({ chain: GUARD, rule: GUARD_RULE_NFT });
  }
  for (const r of stale) tx.deleteRule(r.chain, r.handle);
  // Inserted at the top, last first (so they keep their order): the newest container's rules win.
  for (const rule of nftForwardRules(conf, container).reverse()) tx.insertRule({ chain: HOSTPORTS, rule, comment: containerID });
  for (const rule of nftMasqRules(conf, container)) tx.addRule({ chain: MASQUERADING, rule, comment: containerID });
  return tx;
}

/** True for `… fib daddr type local jump hostports_all` (the CVE-2025-67499 gate), read from the JSON. */
function isLocalGatedJump(r: NftRuleState): boolean {
  const expr = (r.expr ?? []) as J[];
  const fib = expr.some((s) => {
    const f = s.match?.left?.fib;
    return f !== undefined && f.result === "type" && JSON.stringify(f.flags ?? []).includes("daddr") && s.match.right === "local";
  });
  return fib && expr.some((s) => s.jump?.target === HOSTPORTS_ALL);
}

/** CHECK: problems with the rules for `container` (empty: all present); the localnet guard too when `guard` asks for it. */
function checkPorts(state: NftTableState | undefined, conf: PortmapConfig, containerID: string, container: CIDR, guard: boolean): string[] {
  const family = container.ip.family;
  if (state === undefined) return [`nftables table ${nftFamily(family)} ${NFT_TABLE} not found`];
  const problems: string[] = [];
  for (const base of ["prerouting", "output"]) {
    const ok = state.rules.some((r) => r.chain === base && isLocalGatedJump(r));
    if (!ok) problems.push(`nftables chain ${base} does not jump to ${HOSTPORTS_ALL}`);
  }
  for (const target of [HOSTIP_HOSTPORTS, HOSTPORTS]) {
    if (!state.rules.some((r) => r.chain === HOSTPORTS_ALL && normalizeRule(r.rule) === `jump ${target}`)) problems.push(`nftables chain ${HOSTPORTS_ALL} does not jump to ${target}`);
  }
  if (guard && family === 4 && !state.rules.some((r) => r.chain === GUARD && normalizeRule(r.rule).endsWith(" drop"))) problems.push(`nftables chain ${GUARD} lacks its guard rule`);
  const mine = rulesWithComment(state, containerID);
  const forwards = mine.filter((r) => r.chain !== MASQUERADING).flatMap((r) => parseNftForward(r) ?? []);
  for (const m of mappingsForFamily(conf.mappings, family)) {
    const hit = forwards.some(
      (f) =>
        f.protocol === m.protocol &&
        f.hostPort === m.hostPort &&
        (hasHostDst(m) ? f.hostIP !== "" && sameHost(f.hostIP, hostText(m)) : f.hostIP === "") &&
        sameHost(f.toAddr, formatIP(container.ip)) &&
        f.toPort === m.containerPort,
    );
    if (!hit) problems.push(`missing hostport rule for ${m.protocol} port ${m.hostPort} in "${HOSTPORTS}" chain`);
  }
  const masq = mine.filter((r) => r.chain === MASQUERADING).length;
  if (masq < nftMasqRules(conf, container).length) problems.push(`missing hostport rules in "${MASQUERADING}" chain`);
  return problems;
}

/** The nftables implementation of portmap (one table per IP family). */
/** The container address a dnat rule forwards to (from its JSON, else from its text). */
function dnatAddress(r: NftRuleState): string | undefined {
  const parsed = parseNftForward(r)?.toAddr;
  if (parsed !== undefined && parsed !== "") return parsed;
  const m = /\bdnat (?:ip6? )?to (?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):\d+/.exec(r.rule);
  return m?.[1] ?? m?.[2];
}

/**
 * `nodeAddresses`: the addresses configured in any network namespace of the node (GC keeps the
 * rules of a container whose address is among them: it is alive, whatever network it is in).
 */
export function nftablesPortmap(nft: NftDriver, nodeAddresses: () => ReadonlyMap<string, string> = configuredNodeAddresses): PortmapFeature {
  const read = (family: IPFamily): NftTableState | undefined => nft.listTable(nftFamily(family), NFT_TABLE);
  return {
    backend: "nftables",
    available: () => nft.available(),
    setup(t) {
      const family = t.container.ip.family;
      const state = read(family);
      t.foreign?.(foreignPortsNftables(state, t.containerID));
      nft.run(buildForwardTx(t.conf, t.containerID, t.container, rulesWithComment(state, t.containerID), t.guard ?? false));
    },
    /**
     * Deletes the container's rules (by comment) in its families (both when unknown); returns the
     * ports they forwarded. When nftables is the `expected` backend and the mappings are known, the
     * ports need no read of the rules: the rules are found chain by chain (handles and comments,
     * from the kernel) and deleted in one batch, without running `nft`.
     */
    teardown(t, expected) {
      const removed: ForwardedPort[] = [];
      const conf = t.conf;
      if (expected && conf !== undefined && conf.mappings.length > 0) {
        for (const family of t.families ?? ([4, 6] as const)) {
          const tx = new NftTransaction(nftFamily(family), NFT_TABLE);
          for (const chain of MAPPING_CHAINS) {
            for (const r of nft.listChain(nftFamily(family), NFT_TABLE, chain) ?? []) if (r.comment === t.containerID) tx.deleteRule(chain, r.handle);
          }
          nft.run(tx);
          removed.push(...mappingsForFamily(conf.mappings, family).map(forwardedPort));
        }
        return removed;
      }
      for (const family of t.families ?? ([4, 6] as const)) {
        const mine = rulesWithComment(read(family), t.containerID);
        const tx = new NftTransaction(nftFamily(family), NFT_TABLE);
        for (const r of mine) {
          const f = parseNftForward(r);
          if (f) removed.push({ protocol: f.protocol, hostPort: f.hostPort, hostIP: f.hostIP });
          tx.deleteRule(r.chain, r.handle);
        }
        nft.run(tx);
      }
      return removed;
    },
    check: (t) => checkPorts(read(t.container.ip.family), t.conf, t.containerID, t.container, t.guard ?? false),
    /**
     * Beyond upstream (whose GC leaves these): the rules name only the container (the comment Go's
     * DEL looks for), not the network, so a rule is stale when its container is in NO attachment of
     * `keep` — then it is removed whatever network made it (see docs/plugins/portmap.md) — unless
     * the address its dnat rules forward to is configured in some network namespace of the node: a
     * live container of another network keeps its mappings. Only rules of the shape ADD writes (a
     * dnat, a masquerade) with a comment are considered.
     */
    gc(_network, keep) {
      const kept = new Set(keep.map((a) => a.containerID));
      let configured: ReadonlyMap<string, string> | undefined;
      runAll([4, 6] as const, (family) => `IPv${family}`, (family) => {
        const candidates = (read(family)?.rules ?? []).filter((r) => r.comment !== undefined && !kept.has(r.comment) && isMappingRule(r));
        if (candidates.length === 0) return;
        configured ??= nodeAddresses();
        const inUse = configured;
        const alive = new Set(candidates.filter((r) => inUse.has(dnatAddress(r) ?? "")).map((r) => r.comment));
        const tx = new NftTransaction(nftFamily(family), NFT_TABLE);
        for (const r of candidates) if (!alive.has(r.comment)) tx.deleteRule(r.chain, r.handle);
        nft.run(tx);
      });
    },
  };
}
