/**
 * MAC spoof-check for bridge ports (`macspoofchk`), with the nftables objects of upstream
 * pkg/link/spoofcheck.go, so either implementation can tear down what the other set up:
 *
 *   table bridge nat
 *     chain PREROUTING  { type filter hook prerouting priority -300 ; policy accept ; }
 *       iifname "<hostVeth>" jump cni-br-iface-<id>           comment "macspoofchk-<id>"
 *     chain cni-br-iface-<id>
 *       jump cni-br-iface-<id>-mac                             comment "macspoofchk-<id>"
 *     chain cni-br-iface-<id>-mac
 *       ether saddr <containerMac> return                      comment "macspoofchk-<id>"
 *       drop                                                   comment "macspoofchk-<id>"
 *
 * with `<id>` = `<containerID>-<ifName>`. Setup is one `nft -f -` transaction (declare, flush the
 * two per-attachment chains, add the rules). Teardown deletes the PREROUTING rules carrying the
 * attachment's comment and both chains, in one transaction; absent objects are not an error.
 *
 * Beyond upstream: a repeated setup replaces the attachment's PREROUTING jump instead of adding a
 * duplicate, and GC ({@link gcSpoofCheck}) collects the rules of attachments that are gone.
 */
import { annotate } from "../../shared/error/annotate.ts";
import type { NftDriver } from "../../shared/firewall/nftables/driver.ts";
import { normalizeRule } from "../../shared/firewall/nftables/state.ts";
import type { NftRuleRef } from "../../shared/netlink/nftables-rule.ts";
import { NftTransaction } from "../../shared/firewall/nftables/transaction.ts";

/** Name of bridge's teardown step that removes the spoof-check rules. */
export const SPOOFCHECK_STEP = "spoof-check rules";

export const SPOOFCHECK_TABLE = "nat";
export const SPOOFCHECK_BASE_CHAIN = "PREROUTING";
const COMMENT_PREFIX = "macspoofchk-";

export interface SpoofCheckTarget {
  containerID: string;
  ifName: string;
}

export interface SpoofCheckSetup extends SpoofCheckTarget {
  /** Host-side veth name (the bridge port). */
  hostVeth: string;
  /** The only source MAC allowed in from the port. */
  containerMac: string;
}

/** `<containerID>-<ifName>`, upstream's refID. */
export function spoofCheckID(t: SpoofCheckTarget): string {
  return `${t.containerID}-${t.ifName}`;
}

export function spoofCheckNames(t: SpoofCheckTarget | string): { ifaceChain: string; macChain: string; comment: string } {
  const id = typeof t === "string" ? t : spoofCheckID(t);
  return { ifaceChain: `cni-br-iface-${id}`, macChain: `cni-br-iface-${id}-mac`, comment: `${COMMENT_PREFIX}${id}` };
}

function quoted(s: string): string {
  if (!/^[A-Za-z0-9_.:@\-]+$/.test(s)) throw new Error(`invalid interface name ${JSON.stringify(s)}`);
  return `"${s}"`;
}

/** Deletes, in `tx`, the base-chain rules carrying `comment` (from `rules`, as just read). */
function deleteBaseRules(tx: NftTransaction, rules: readonly NftRuleRef[] | undefined, comment: string): void {
  for (const r of rules ?? []) {
    if (r.chain === SPOOFCHECK_BASE_CHAIN && r.comment === comment) tx.deleteRule(SPOOFCHECK_BASE_CHAIN, r.handle);
  }
}

/** The setup transaction (pure apart from the read of existing jumps). */
export function buildSpoofCheckSetup(s: SpoofCheckSetup, existing: NftTransaction = new NftTransaction("bridge", SPOOFCHECK_TABLE)): NftTransaction {
  const { ifaceChain, macChain, comment } = spoofCheckNames(s);
  existing
    .addTable()
    .addChain({ name: SPOOFCHECK_BASE_CHAIN, type: "filter", hook: "prerouting", priority: -300, policy: "accept" })
    .addChain({ name: ifaceChain })
    .addChain({ name: macChain })
    .flushChain(ifaceChain)
    .flushChain(macChain);
  for (const [chain, rule] of spoofCheckRules(s)) existing.addRule({ chain, rule, comment });
  return existing;
}

/** Installs the spoof-check rules for one attachment. */
export function setupSpoofCheck(s: SpoofCheckSetup, driver: NftDriver): void {
  annotate("failed to setup spoof-check", () => {
    const tx = new NftTransaction("bridge", SPOOFCHECK_TABLE);
    deleteBaseRules(tx, driver.listChain("bridge", SPOOFCHECK_TABLE, SPOOFCHECK_BASE_CHAIN), spoofCheckNames(s).comment);
    driver.run(buildSpoofCheckSetup(s, tx));
  });
}

/** The rules {@link buildSpoofCheckSetup} writes, as `[chain, body]` pairs (all with the attachment's comment). */
function spoofCheckRules(s: SpoofCheckSetup): [string, string][] {
  const { ifaceChain, macChain } = spoofCheckNames(s);
  return [
    [SPOOFCHECK_BASE_CHAIN, `iifname ${quoted(s.hostVeth)} jump ${ifaceChain}`],
    [ifaceChain, `jump ${macChain}`],
    [macChain, `ether saddr ${s.containerMac} return`],
    [macChain, "drop"],
  ];
}

/** `iifname == "x"` and `iifname "x"` read the same; MACs compare case-insensitively. */
function comparable(rule: string): string {
  return normalizeRule(rule).replaceAll(" == ", " ").toLowerCase();
}

/** Problems with the attachment's spoof-check rules (empty: all there); reads the table only. */
export function checkSpoofCheck(s: SpoofCheckSetup, driver: NftDriver): string[] {
  const table = driver.listTable("bridge", SPOOFCHECK_TABLE);
  if (table === undefined) return [`nftables table bridge ${SPOOFCHECK_TABLE} not found`];
  const problems: string[] = [];
  if (!table.chains.some((c) => c.name === SPOOFCHECK_BASE_CHAIN && c.hook === "prerouting")) problems.push(`nftables base chain bridge ${SPOOFCHECK_TABLE} ${SPOOFCHECK_BASE_CHAIN} not found`);
  const { comment } = spoofCheckNames(s);
  const have = new Set(table.rules.filter((r) => r.comment === comment).map((r) => `${r.chain}\n${comparable(r.rule)}`));
  for (const [chain, rule] of spoofCheckRules(s)) {
    if (!have.has(`${chain}\n${comparable(rule)}`)) problems.push(`nftables chain bridge ${SPOOFCHECK_TABLE} ${chain} lacks rule: ${rule} comment "${comment}"`);
  }
  return problems;
}

/** Deletes, in `tx`, the two chains of `t` (target or `<containerID>-<ifName>`) that are in `chains`, and drops them from it. */
function deleteChains(tx: NftTransaction, chains: Set<string>, t: SpoofCheckTarget | string): void {
  const { ifaceChain, macChain } = spoofCheckNames(t);
  // The iface chain jumps to the mac chain: delete the referrer first.
  for (const name of [ifaceChain, macChain]) if (chains.delete(name)) tx.flushChain(name).deleteChain(name);
}

/** Removes the spoof-check rules and chains of one attachment; a no-op when there are none. */
export function teardownSpoofCheck(t: SpoofCheckTarget, driver: NftDriver): void {
  annotate("failed to teardown spoof-check", () => {
    const table = driver.listTable("bridge", SPOOFCHECK_TABLE);
    if (table === undefined) return;
    const tx = new NftTransaction("bridge", SPOOFCHECK_TABLE);
    deleteBaseRules(tx, table.rules, spoofCheckNames(t).comment);
    deleteChains(tx, new Set(table.chains.map((c) => c.name)), t);
    driver.run(tx);
  });
}

/**
 * GC (beyond upstream, whose bridge GC only calls IPAM): removes, in one transaction, the rules and
 * chains of the attachments that are not in `keep`. The objects name only `<containerID>-<ifName>`,
 * not the network, so an attachment counts as this network's through the host veth its PREROUTING
 * jump names: `owned(hostVeth)` decides (bridge: a port of this network's bridge, or a veth that no
 * longer exists — then the rules match nothing and serve no network). Jumps that do not read
 * `iifname "<veth>" jump cni-br-iface-<id>` are left alone.
 */
export function gcSpoofCheck(keep: readonly SpoofCheckTarget[], owned: (hostVeth: string) => boolean, driver: NftDriver): void {
  annotate("failed to garbage-collect spoof-check", () => {
    const table = driver.listTable("bridge", SPOOFCHECK_TABLE);
    if (table === undefined) return;
    const valid = new Set(keep.map((a) => spoofCheckNames(a).comment));
    const chains = new Set(table.chains.map((c) => c.name));
    const tx = new NftTransaction("bridge", SPOOFCHECK_TABLE);
    for (const r of table.rules) {
      if (r.chain !== SPOOFCHECK_BASE_CHAIN || !r.comment?.startsWith(COMMENT_PREFIX) || valid.has(r.comment)) continue;
      const id = r.comment.slice(COMMENT_PREFIX.length);
      const jump = /^iifname (?:== )?"([^"]+)" jump (\S+)$/.exec(normalizeRule(r.rule));
      if (jump === null || jump[2] !== spoofCheckNames(id).ifaceChain || !owned(jump[1]!)) continue;
      tx.deleteRule(SPOOFCHECK_BASE_CHAIN, r.handle);
      deleteChains(tx, chains, id);
    }
    driver.run(tx);
  });
}
