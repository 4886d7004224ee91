/**
 * nf_tables over NETLINK_NETFILTER, for what the firewall backends need on every DEL without
 * starting a tool: whether a table or chain exists (`nft list table|chain …` answering "No such
 * file or directory"), the handles, comments and jump targets of ONE chain's rules
 * (`nft -a list chain …`), deleting rules by handle (`nft delete rule … handle N`) and removing a
 * chain with the rules that jump to it (`iptables -D … -j C; -F C; -X C`), each change in one
 * atomic batch. The tools pay for their start and, on a node with a large ruleset, for reading a
 * cache of the whole ruleset; these requests read only the chains they name.
 *
 * nft stores a rule's `comment "…"` as a NUL-terminated NFTNL_UDATA_RULE_COMMENT TLV in
 * NFTA_RULE_USERDATA. Tables created by iptables-nft (`ip nat`, `ip6 filter`, …) are nf_tables
 * tables too, so their chains can be looked up and removed here; iptables-nft (1.8.9) keeps
 * `-m comment --comment` in an xt match expression instead, but its `-j`/`-g` to a chain is the
 * same `immediate` verdict as nft's `jump`/`goto`. A rule's expressions are handed out as named
 * attribute maps ({@link nftRules}); shared/firewall/iptables/nft-rules.ts reads iptables-nft's
 * back into iptables arguments.
 *
 * Messages are `struct nlmsghdr` with type `NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_*`, a 4-byte
 * `struct nfgenmsg` (family = NFPROTO_*, NFNETLINK_V0, res_id 0), then NFTA_* attributes; rule
 * handles are big-endian u64. Changes travel in a batch (NFNL_MSG_BATCH_BEGIN … BATCH_END, whose
 * res_id is NFNL_SUBSYS_NFTABLES in network order), which the kernel applies all or nothing.
 *
 * The socket acts on the netns it was opened in: `openNetlinkSocket(NETLINK_NETFILTER)`
 * (kernel-transport.ts) opens it in the calling thread's.
 */
import { attrMap, buildMessage, containsBytes, parseAttrs, readBe32, readBe64, readString, type NlWriter } from "./codec.ts";
import { NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST } from "./constants/netlink.ts";
import {
  NFGENMSG_SIZE,
  NFNETLINK_V0,
  NFNL_MSG_BATCH_BEGIN,
  NFNL_MSG_BATCH_END,
  NFNL_SUBSYS_NFTABLES,
} from "./constants/nfnetlink.ts";
import {
  NFPROTO_ARP,
  NFPROTO_BRIDGE,
  NFPROTO_INET,
  NFPROTO_IPV4,
  NFPROTO_IPV6,
  NFPROTO_NETDEV,
  NFPROTO_UNSPEC,
  NFT_GOTO,
  NFT_JUMP,
  NFT_MSG_DELCHAIN,
  NFT_MSG_DELRULE,
  NFT_MSG_GETCHAIN,
  NFT_MSG_GETRULE,
  NFT_MSG_GETTABLE,
  NFT_REG_VERDICT,
  NFTA_CHAIN_NAME,
  NFTA_CHAIN_TABLE,
  NFTA_DATA_VERDICT,
  NFTA_EXPR_DATA,
  NFTA_EXPR_NAME,
  NFTA_IMMEDIATE_DATA,
  NFTA_IMMEDIATE_DREG,
  NFTA_LIST_ELEM,
  NFTA_RULE_CHAIN,
  NFTA_RULE_EXPRESSIONS,
  NFTA_RULE_HANDLE,
  NFTA_RULE_TABLE,
  NFTA_RULE_USERDATA,
  NFTA_TABLE_NAME,
  NFTA_VERDICT_CHAIN,
  NFTA_VERDICT_CODE,
  NFTNL_UDATA_RULE_COMMENT,
  type NftFamilyName,
} from "./constants/nf-tables.ts";
import { isNotFound, NetlinkError } from "./errors.ts";
import type { NftExpr, NftRule, NftRuleRef } from "./nftables-rule.ts";
import type { NetlinkSocket } from "./socket.ts";
import { EINVAL, ENOENT, EOPNOTSUPP, EPROTONOSUPPORT, SyscallError } from "../sys/errno.ts";


const NFPROTO: Readonly<Record<NftFamilyName, number>> = {
  ip: NFPROTO_IPV4,
  ip6: NFPROTO_IPV6,
  inet: NFPROTO_INET,
  arp: NFPROTO_ARP,
  bridge: NFPROTO_BRIDGE,
  netdev: NFPROTO_NETDEV,
};

/** The nft family name of an nfgen_family (NFPROTO_*) value, undefined for one nft does not name. */
export function nftFamilyOf(nfproto: number): NftFamilyName | undefined {
  return (Object.keys(NFPROTO) as NftFamilyName[]).find((f) => NFPROTO[f] === nfproto);
}

const msgType = (cmd: number): number => (NFNL_SUBSYS_NFTABLES << 8) | cmd;

function writeNfgenmsg(w: NlWriter, family: number, resId = 0): void {
  w.u8(family).u8(NFNETLINK_V0).u8(resId >> 8).u8(resId & 0xff);
}

function be64(v: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(v), false);
  return b;
}

/** An nf_tables message: nfgenmsg for `family`, then what `fill` writes. */
function nftMessage(cmd: number, flags: number, family: NftFamilyName, fill: (w: NlWriter) => void): Uint8Array {
  return buildMessage(msgType(cmd), flags, (w) => {
    writeNfgenmsg(w, NFPROTO[family]);
    fill(w);
  });
}

/** A chain message naming `<table> <chain>` (NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME). */
function chainMessage(cmd: number, family: NftFamilyName, table: string, chain: string): Uint8Array {
  return nftMessage(cmd, NLM_F_REQUEST | NLM_F_ACK, family, (w) => w.attrString(NFTA_CHAIN_TABLE, table).attrString(NFTA_CHAIN_NAME, chain));
}

/** A rule message naming `<table> <chain>` and, when given, one rule's handle. */
function ruleMessage(cmd: number, flags: number, family: NftFamilyName, table: string, chain: string, handle?: number): Uint8Array {
  return nftMessage(cmd, flags, family, (w) => {
    w.attrString(NFTA_RULE_TABLE, table).attrString(NFTA_RULE_CHAIN, chain);
    if (handle !== undefined) w.attr(NFTA_RULE_HANDLE, be64(handle));
  });
}

/** `nft list table <family> <table>` as a GET (NFT_MSG_GETTABLE): answered with the table or ENOENT. */
export function buildGetTableRequest(family: NftFamilyName, table: string): Uint8Array {
  return nftMessage(NFT_MSG_GETTABLE, NLM_F_REQUEST | NLM_F_ACK, family, (w) => w.attrString(NFTA_TABLE_NAME, table));
}

/** `nft list chain <family> <table> <chain>` as a GET (NFT_MSG_GETCHAIN): the chain or ENOENT. */
export function buildGetChainRequest(family: NftFamilyName, table: string, chain: string): Uint8Array {
  return chainMessage(NFT_MSG_GETCHAIN, family, table, chain);
}

/** `delete chain <family> <table> <chain>` (NFT_MSG_DELCHAIN), for a batch. */
export function buildDeleteChainRequest(family: NftFamilyName, table: string, chain: string): Uint8Array {
  return chainMessage(NFT_MSG_DELCHAIN, family, table, chain);
}

/** The rules of one chain (NFT_MSG_GETRULE dump, filtered by the kernel on table and chain). */
export function buildRuleDumpRequest(family: NftFamilyName, table: string, chain: string): Uint8Array {
  return ruleMessage(NFT_MSG_GETRULE, NLM_F_REQUEST | NLM_F_DUMP, family, table, chain);
}

/** `delete rule <family> <table> <chain> handle <n>` (NFT_MSG_DELRULE), for a batch. */
export function buildDeleteRuleRequest(family: NftFamilyName, table: string, rule: { chain: string; handle: number }): Uint8Array {
  return ruleMessage(NFT_MSG_DELRULE, NLM_F_REQUEST | NLM_F_ACK, family, table, rule.chain, rule.handle);
}

/** `flush chain <family> <table> <chain>`: NFT_MSG_DELRULE naming the chain and no handle, for a batch. */
export function buildFlushChainRequest(family: NftFamilyName, table: string, chain: string): Uint8Array {
  return ruleMessage(NFT_MSG_DELRULE, NLM_F_REQUEST | NLM_F_ACK, family, table, chain);
}

/** NFNL_MSG_BATCH_BEGIN or _END for the nf_tables subsystem. */
export function buildBatchDelimiter(type: typeof NFNL_MSG_BATCH_BEGIN | typeof NFNL_MSG_BATCH_END): Uint8Array {
  return buildMessage(type, NLM_F_REQUEST, (w) => writeNfgenmsg(w, NFPROTO_UNSPEC, NFNL_SUBSYS_NFTABLES));
}

/** The comment in a rule's NFTA_RULE_USERDATA (TLVs `u8 type, u8 len, value`), if any. */
export function commentFromUserdata(udata: Uint8Array): string | undefined {
  for (let at = 0; at + 2 <= udata.byteLength; ) {
    const type = udata[at]!;
    const len = udata[at + 1]!;
    const value = udata.subarray(at + 2, at + 2 + len);
    if (type === NFTNL_UDATA_RULE_COMMENT) return readString(value);
    at += 2 + len;
  }
  return undefined;
}

/** The expressions of NFTA_RULE_EXPRESSIONS, in order (an element without a name is skipped). */
export function parseExpressions(expressions: Uint8Array): NftExpr[] {
  const out: NftExpr[] = [];
  for (const elem of parseAttrs(expressions)) {
    if (elem.type !== NFTA_LIST_ELEM) continue;
    const expr = attrMap(elem.data);
    const name = expr.get(NFTA_EXPR_NAME);
    if (name === undefined) continue;
    const data = expr.get(NFTA_EXPR_DATA);
    out.push({ name: readString(name), attrs: data === undefined ? new Map() : attrMap(data) });
  }
  return out;
}

/** The verdict of an `immediate` expression that sets the verdict register: code and chain (jump/goto), if it is one. */
export function immediateVerdict(expr: NftExpr): { code: number; chain?: string } | undefined {
  if (expr.name !== "immediate") return undefined;
  const dreg = expr.attrs.get(NFTA_IMMEDIATE_DREG);
  const value = expr.attrs.get(NFTA_IMMEDIATE_DATA);
  if (dreg === undefined || dreg.byteLength !== 4 || readBe32(dreg) !== NFT_REG_VERDICT || value === undefined) return undefined;
  const verdict = attrMap(value).get(NFTA_DATA_VERDICT);
  if (verdict === undefined) return undefined;
  const v = attrMap(verdict);
  const code = v.get(NFTA_VERDICT_CODE);
  if (code === undefined || code.byteLength !== 4) return undefined;
  const chain = v.get(NFTA_VERDICT_CHAIN);
  return chain === undefined ? { code: readBe32(code) | 0 } : { code: readBe32(code) | 0, chain: readString(chain) };
}

/** The target chain of a rule's `immediate` verdict expression that jumps or goes to a chain, if any. */
export function jumpTarget(expressions: readonly NftExpr[]): string | undefined {
  for (const expr of expressions) {
    const v = immediateVerdict(expr);
    if (v !== undefined && (v.code === NFT_JUMP || v.code === NFT_GOTO) && v.chain !== undefined) return v.chain;
  }
  return undefined;
}

/** Decodes one NFT_MSG_NEWRULE of a dump; undefined when it lacks a chain or a handle. */
export function parseRule(payload: Uint8Array): (NftRule & { table: string }) | undefined {
  if (payload.byteLength < NFGENMSG_SIZE) return undefined;
  const a = attrMap(payload, NFGENMSG_SIZE);
  const table = a.get(NFTA_RULE_TABLE);
  const chain = a.get(NFTA_RULE_CHAIN);
  const handle = a.get(NFTA_RULE_HANDLE);
  if (table === undefined || chain === undefined || handle === undefined || handle.byteLength !== 8) return undefined;
  const exprs = a.get(NFTA_RULE_EXPRESSIONS);
  const expressions = exprs === undefined ? [] : parseExpressions(exprs);
  const rule: NftRule & { table: string } = { table: readString(table), chain: readString(chain), handle: readBe64(handle), expressions };
  const udata = a.get(NFTA_RULE_USERDATA);
  const comment = udata === undefined ? undefined : commentFromUserdata(udata);
  if (comment !== undefined) rule.comment = comment;
  const jump = jumpTarget(expressions);
  if (jump !== undefined) rule.jump = jump;
  return rule;
}

/** {@link parseRule} without the expressions: what finding and deleting a rule needs. */
export function parseRuleRef(payload: Uint8Array): (NftRuleRef & { table: string }) | undefined {
  const rule = parseRule(payload);
  if (rule === undefined) return undefined;
  const { expressions: _expressions, ...ref } = rule;
  return ref;
}

const GET_TYPES = new Set([NFT_MSG_GETTABLE, NFT_MSG_GETCHAIN, NFT_MSG_GETRULE].map(msgType));

/**
 * True when `err` says the kernel has no nf_tables: no NETLINK_NETFILTER at all
 * (EPROTONOSUPPORT), EINVAL answering a GET (nfnetlink's answer for an unregistered subsystem;
 * a well-formed GET is never invalid otherwise), or EOPNOTSUPP refusing a batch.
 */
export function isNftablesMissing(err: unknown): boolean {
  if (!(err instanceof SyscallError)) return false;
  if (err.errno === EPROTONOSUPPORT || err.errno === EOPNOTSUPP) return true;
  return err.errno === EINVAL && err instanceof NetlinkError && GET_TYPES.has(err.msgType);
}

function existsBy(sock: NetlinkSocket, req: Uint8Array, detail: string): boolean {
  try {
    sock.request(req, detail);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** True when table `<family> <table>` exists. */
export function nftTableExists(sock: NetlinkSocket, family: NftFamilyName, table: string): boolean {
  return existsBy(sock, buildGetTableRequest(family, table), `${family} ${table}`);
}

/** True when chain `<family> <table> <chain>` exists (false also when the table does not). */
export function nftChainExists(sock: NetlinkSocket, family: NftFamilyName, table: string, chain: string): boolean {
  return existsBy(sock, buildGetChainRequest(family, table, chain), `${family} ${table} ${chain}`);
}

/**
 * The rules of `<family> <table> <chain>` in order, undecoded: each one's NFT_MSG_NEWRULE payload
 * (decode with {@link parseChainRule}); [] when the chain or table does not exist. Searching
 * these bytes costs far less than decoding them: a caller that looks for particular rules in a
 * chain of hundreds decodes only those whose bytes contain what it looks for.
 */
export function nftRulePayloads(sock: NetlinkSocket, family: NftFamilyName, table: string, chain: string): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const m of sock.request(buildRuleDumpRequest(family, table, chain), `${family} ${table} ${chain}`)) {
    if (m.payload[0] === NFPROTO[family]) out.push(m.payload);
  }
  return out;
}

/** One payload of {@link nftRulePayloads} decoded; undefined when it is not a rule of `<table> <chain>`. */
export function parseChainRule(payload: Uint8Array, table: string, chain: string): NftRule | undefined {
  const r = parseRule(payload);
  // The kernel filters on table and chain; checked again for kernels that ignore the filter.
  if (r === undefined || r.table !== table || r.chain !== chain) return undefined;
  const { table: _table, ...rule } = r;
  return rule;
}

/** True when `payload` contains one of `needles`. */
function mentionsAny(payload: Uint8Array, needles: readonly Uint8Array[]): boolean {
  return needles.some((n) => containsBytes(payload, n));
}

/** The rules of `<family> <table> <chain>` with their expressions, in order; [] when the chain or table does not exist. */
export function nftRules(sock: NetlinkSocket, family: NftFamilyName, table: string, chain: string): NftRule[] {
  return nftRulePayloads(sock, family, table, chain).flatMap((p) => parseChainRule(p, table, chain) ?? []);
}

/** The rules of `<family> <table> <chain>` in order (handle, comment, jump), [] when the chain or table does not exist. */
export function nftRuleList(sock: NetlinkSocket, family: NftFamilyName, table: string, chain: string): NftRuleRef[] {
  return nftRules(sock, family, table, chain).map(({ expressions: _expressions, ...ref }) => ref);
}

/**
 * Deletes `rules` (by handle) from `<family> <table>` in one batch, which the kernel applies all or
 * nothing. A rule already gone (ENOENT: deleted by someone else meanwhile, or its chain or table)
 * is not an error: the batch is sent again without it. Any other refusal throws a NetlinkError
 * naming the rule. Returns how many rules this call deleted.
 */
export function nftRulesDelete(sock: NetlinkSocket, family: NftFamilyName, table: string, rules: readonly { chain: string; handle: number }[]): number {
  let left = [...rules];
  while (left.length > 0) {
    const failed = sendBatch(sock, left.map((r) => buildDeleteRuleRequest(family, table, r)), NFT_MSG_DELRULE, `${family} ${table}`);
    if (failed.length === 0) return left.length;
    const hard = failed.find((f) => f.errno !== ENOENT);
    if (hard !== undefined) {
      const r = left[hard.i]!;
      throw new NetlinkError(msgType(NFT_MSG_DELRULE), hard.errno, `${family} ${table} ${r.chain} handle ${r.handle}`, hard.extMsg);
    }
    const gone = new Set(failed.map((f) => f.i));
    left = left.filter((_, i) => !gone.has(i));
  }
  return 0;
}

/**
 * Deletes, in one batch, the rules of `<family> <table> <chain>` that `pick` takes: it answers per
 * rule true (delete), false (keep) or undefined (cannot tell). Returns how many rules it deleted
 * (a rule gone meanwhile is no error, as in {@link nftRulesDelete}), or undefined, having deleted
 * nothing, when `pick` could not tell for some rule. A chain or table that does not exist has no
 * rules. `mentions`: every rule `pick` could take contains one of these byte strings; the others
 * are kept without being decoded or asked about.
 */
export function nftDeleteRulesWhere(
  sock: NetlinkSocket,
  family: NftFamilyName,
  table: string,
  chain: string,
  pick: (rule: NftRule) => boolean | undefined,
  mentions?: readonly Uint8Array[],
): number | undefined {
  const picked: NftRule[] = [];
  for (const payload of nftRulePayloads(sock, family, table, chain)) {
    if (mentions !== undefined && !mentionsAny(payload, mentions)) continue;
    const rule = parseChainRule(payload, table, chain);
    if (rule === undefined) continue;
    const take = pick(rule);
    if (take === undefined) return undefined;
    if (take) picked.push(rule);
  }
  return nftRulesDelete(sock, family, table, picked);
}

/** Sends `ops` as one batch; the operations the kernel refused (by index), empty when it applied them all. */
function sendBatch(sock: NetlinkSocket, ops: readonly Uint8Array[], blame: number, detail: string): { i: number; errno: number; extMsg?: string }[] {
  const msgs = [buildBatchDelimiter(NFNL_MSG_BATCH_BEGIN), ...ops, buildBatchDelimiter(NFNL_MSG_BATCH_END)];
  const answers = sock.requestBatch(msgs, msgType(blame), detail).slice(1, -1);
  return answers.flatMap((a, i) => (a !== undefined && a.errno !== 0 ? [{ i, ...a }] : []));
}

/** A chain to remove and the chains whose rules may jump to it. */
export interface ChainRemoval {
  chain: string;
  referrers: readonly string[];
}

/**
 * Removes each chain of `removals` that exists, with every rule of its referrer chains that jumps
 * or goes to it, in ONE batch (all or nothing): `iptables -D <referrer> … -j <chain>` for each such
 * rule, `-F <chain>`, `-X <chain>`. Chains that do not exist are skipped. Returns the chains it
 * removed. A refusal (a jump from a chain not named, a concurrent change) throws a NetlinkError
 * and changes nothing.
 */
export function nftRemoveChains(sock: NetlinkSocket, family: NftFamilyName, table: string, removals: readonly ChainRemoval[]): string[] {
  const present = removals.filter((r) => nftChainExists(sock, family, table, r.chain));
  if (present.length === 0) return [];
  // A rule jumping to a chain holds the chain's name: only rules that contain it are decoded.
  const listed = new Map<string, Uint8Array[]>();
  const ops: Uint8Array[] = [];
  const what: string[] = [];
  for (const r of present) {
    const name = new TextEncoder().encode(r.chain);
    for (const referrer of r.referrers) {
      let payloads = listed.get(referrer);
      if (payloads === undefined) listed.set(referrer, (payloads = nftRulePayloads(sock, family, table, referrer)));
      for (const payload of payloads) {
        if (!mentionsAny(payload, [name])) continue;
        const rule = parseChainRule(payload, table, referrer);
        if (rule?.jump !== r.chain) continue;
        ops.push(buildDeleteRuleRequest(family, table, rule));
        what.push(`${referrer} handle ${rule.handle}`);
      }
    }
    ops.push(buildFlushChainRequest(family, table, r.chain), buildDeleteChainRequest(family, table, r.chain));
    what.push(`flush ${r.chain}`, `delete ${r.chain}`);
  }
  const failed = sendBatch(sock, ops, NFT_MSG_DELCHAIN, `${family} ${table}`);
  if (failed.length > 0) {
    const f = failed[0]!;
    throw new NetlinkError(msgType(NFT_MSG_DELCHAIN), f.errno, `${family} ${table}: ${what[f.i]}`, f.extMsg);
  }
  return present.map((r) => r.chain);
}
