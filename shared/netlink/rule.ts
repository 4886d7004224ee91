/**
 * Policy-routing rules (RTM_NEWRULE/RTM_DELRULE/RTM_GETRULE), as `ip rule` sends them: a
 * struct fib_rule_hdr, then FRA_SRC / FRA_DST, FRA_PRIORITY and, for tables ≥ 256, FRA_TABLE
 * (smaller tables travel in the header byte, as iproute2 and Go's netlink do). Builders are pure
 * and byte-checked against iproute2 (rule.test.ts); callers use the Handle methods.
 */

import { AF_INET, AF_INET6, AF_UNSPEC } from "../sys/constants.ts";
import { attrMap, buildMessage, readString, readU32, readU8 } from "./codec.ts";
import {
  FIB_RULE_HDR_SIZE,
  FR_ACT_TO_TBL,
  FR_ACT_UNSPEC,
  FRA_DST,
  FRA_FWMARK,
  FRA_IIFNAME,
  FRA_OIFNAME,
  FRA_PRIORITY,
  FRA_SRC,
  FRA_TABLE,
} from "./constants/fib-rules.ts";
import { NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST } from "./constants/netlink.ts";
import { RT_TABLE_MAIN, RT_TABLE_UNSPEC, RTM_DELRULE, RTM_GETRULE, RTM_NEWRULE } from "./constants/rtnetlink.ts";
import { bytesToIp, familyOf, ipToBytes } from "./_addr-bytes.ts";
import type { NetlinkSocket } from "./socket.ts";
import type { RoutePrefix } from "./route.ts";

/** What a rule to add or delete says (`ip rule add|del [from P] [to P] [pref N] lookup T`). */
export interface RuleSpec {
  /** Defaults to the family of `src`/`dst`, else IPv4. */
  family?: 4 | 6;
  src?: RoutePrefix;
  dst?: RoutePrefix;
  /** FRA_PRIORITY (`pref`); absent = the kernel picks one on add, matches any on delete. */
  priority?: number;
  /** Lookup table; add defaults to main (as `ip rule add`); delete: absent matches any table. */
  table?: number;
  /** FR_ACT_*; add defaults to FR_ACT_TO_TBL, delete to FR_ACT_UNSPEC (match any). */
  action?: number;
}

/** A rule as the kernel reports it. */
export interface RuleEntry {
  family: 4 | 6;
  src?: RoutePrefix;
  dst?: RoutePrefix;
  priority?: number;
  table: number;
  action: number;
  flags: number;
  tos: number;
  iifname?: string;
  oifname?: string;
  fwmark?: number;
}

function ruleFamily(r: RuleSpec): 4 | 6 {
  if (r.family !== undefined) return r.family;
  if (r.src !== undefined) return familyOf(r.src.address);
  if (r.dst !== undefined) return familyOf(r.dst.address);
  return 4;
}

function checkPrefix(family: 4 | 6, p: RoutePrefix): void {
  const max = family === 4 ? 32 : 128;
  if (!Number.isInteger(p.prefixLen) || p.prefixLen < 0 || p.prefixLen > max) {
    throw new RangeError(`invalid prefix length ${p.prefixLen} for IPv${family}`);
  }
}

function buildRuleRequest(cmd: typeof RTM_NEWRULE | typeof RTM_DELRULE, nlFlags: number, r: RuleSpec): Uint8Array {
  const family = ruleFamily(r);
  const isDel = cmd === RTM_DELRULE;
  if (r.src !== undefined) checkPrefix(family, r.src);
  if (r.dst !== undefined) checkPrefix(family, r.dst);
  const table = r.table ?? (isDel ? RT_TABLE_UNSPEC : RT_TABLE_MAIN);
  const action = r.action ?? (isDel ? FR_ACT_UNSPEC : FR_ACT_TO_TBL);
  return buildMessage(cmd, nlFlags, (w) => {
    // struct fib_rule_hdr
    w.u8(family === 4 ? AF_INET : AF_INET6).u8(r.dst?.prefixLen ?? 0).u8(r.src?.prefixLen ?? 0).u8(0);
    w.u8(table < 256 ? table : RT_TABLE_UNSPEC).u8(0).u8(0).u8(action);
    w.u32(0);
    if (r.src !== undefined && r.src.prefixLen > 0) w.attr(FRA_SRC, ipToBytes(r.src.address, family));
    if (r.dst !== undefined && r.dst.prefixLen > 0) w.attr(FRA_DST, ipToBytes(r.dst.address, family));
    if (r.priority !== undefined) w.attrU32(FRA_PRIORITY, r.priority);
    if (table >= 256) w.attrU32(FRA_TABLE, table);
  });
}

/** RTM_NEWRULE with NLM_F_CREATE|NLM_F_EXCL (`ip rule add ...`). */
export function buildRuleAddRequest(r: RuleSpec): Uint8Array {
  return buildRuleRequest(RTM_NEWRULE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, r);
}

/** RTM_DELRULE (`ip rule del ...`). */
export function buildRuleDelRequest(r: RuleSpec): Uint8Array {
  return buildRuleRequest(RTM_DELRULE, NLM_F_REQUEST | NLM_F_ACK, r);
}

/** RTM_GETRULE dump of one family, or of all (`ip rule list` / `ip -6 rule list`). */
export function buildRuleDumpRequest(family?: 4 | 6): Uint8Array {
  return buildMessage(RTM_GETRULE, NLM_F_REQUEST | NLM_F_DUMP, (w) => {
    w.u8(family === undefined ? AF_UNSPEC : family === 4 ? AF_INET : AF_INET6).u8(0).u8(0).u8(0);
    w.u8(0).u8(0).u8(0).u8(0).u32(0);
  });
}

/** Decodes one RTM_NEWRULE payload; undefined for families other than IPv4/IPv6. */
export function parseRule(payload: Uint8Array): RuleEntry | undefined {
  const af = readU8(payload, 0);
  if (af !== AF_INET && af !== AF_INET6) return undefined;
  const a = attrMap(payload, FIB_RULE_HDR_SIZE);
  const tableAttr = a.get(FRA_TABLE);
  const r: RuleEntry = {
    family: af === AF_INET ? 4 : 6,
    table: tableAttr === undefined ? readU8(payload, 4) : readU32(tableAttr),
    tos: readU8(payload, 3),
    action: readU8(payload, 7),
    flags: readU32(payload, 8),
  };
  const src = a.get(FRA_SRC);
  if (src !== undefined) r.src = { address: bytesToIp(src), prefixLen: readU8(payload, 2) };
  const dst = a.get(FRA_DST);
  if (dst !== undefined) r.dst = { address: bytesToIp(dst), prefixLen: readU8(payload, 1) };
  const prio = a.get(FRA_PRIORITY);
  if (prio !== undefined) r.priority = readU32(prio);
  const iif = a.get(FRA_IIFNAME);
  if (iif !== undefined) r.iifname = readString(iif);
  const oif = a.get(FRA_OIFNAME);
  if (oif !== undefined) r.oifname = readString(oif);
  const mark = a.get(FRA_FWMARK);
  if (mark !== undefined) r.fwmark = readU32(mark);
  return r;
}

function describe(r: RuleSpec): string {
  const p = (x: RoutePrefix | undefined): string => (x === undefined ? "all" : `${x.address}/${x.prefixLen}`);
  return [`from ${p(r.src)}`, r.dst === undefined ? "" : `to ${p(r.dst)}`, r.priority === undefined ? "" : `pref ${r.priority}`, r.table === undefined ? "" : `lookup ${r.table}`]
    .filter((s) => s !== "")
    .join(" ");
}

/** Equivalent to `ip [-4|-6] rule list` (both families when `family` is omitted). */
export function ruleList(sock: NetlinkSocket, family?: 4 | 6): RuleEntry[] {
  const out: RuleEntry[] = [];
  for (const m of sock.request(buildRuleDumpRequest(family), "dump")) {
    if (m.type !== RTM_NEWRULE) continue;
    const r = parseRule(m.payload);
    if (r === undefined) continue;
    if (family !== undefined && r.family !== family) continue;
    out.push(r);
  }
  return out;
}

/** Equivalent to `ip rule add [from P] [to P] [pref N] lookup T` (EEXIST for an identical rule). */
export function ruleAdd(sock: NetlinkSocket, r: RuleSpec): void {
  sock.request(buildRuleAddRequest(r), describe(r));
}

/** Equivalent to `ip rule del [from P] [to P] [pref N] [lookup T]` (ENOENT when none matches). */
export function ruleDel(sock: NetlinkSocket, r: RuleSpec): void {
  sock.request(buildRuleDelRequest(r), describe(r));
}

/** The spec that deletes exactly `e` (as listed). */
export function ruleSpecOf(e: RuleEntry): RuleSpec {
  return {
    family: e.family,
    ...(e.src !== undefined ? { src: e.src } : {}),
    ...(e.dst !== undefined ? { dst: e.dst } : {}),
    ...(e.priority !== undefined ? { priority: e.priority } : {}),
    table: e.table,
    action: e.action,
  };
}
