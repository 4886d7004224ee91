/**
 * What sbr does inside the container netns (upstream doRoutes / tidyRules), over one Handle:
 * pick tables, add `from <ip>/32 lookup <table>` rules, the default route via the gateway in each
 * table, move the interface's main-table routes there, and on DEL remove the rules again.
 */
import { annotate, annotateError } from "../../shared/error/annotate.ts";
import { formatIP, parseIP, type IPAddr } from "../../shared/ip/addr.ts";
import { containsIP, networkAddress } from "../../shared/ip/cidr.ts";
import { isNotFound } from "../../shared/netlink/errors.ts";
import { routeSpecOf } from "../../shared/netlink/route.ts";
import { ruleSpecOf } from "../../shared/netlink/rule.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import { RT_SCOPE_LINK, RT_TABLE_MAIN, RT_TABLE_UNSPEC } from "../../shared/netlink/constants/rtnetlink.ts";
import type { SbrAddress, SbrConfig } from "./config.ts";

/** Upstream's first candidate table id. */
export const FIRST_TABLE_ID = 100;

/** The first id ≥ `candidate` that no rule points to and no route lives in. */
export function nextFreeTable(rules: readonly { table: number }[], routes: readonly { table: number }[], candidate: number): number {
  const used = new Set<number>([...rules.map((r) => r.table), ...routes.map((r) => r.table)]);
  let table = candidate;
  while (used.has(table)) table++;
  return table;
}

/** `/32` or `/128` of an address. */
function hostPrefix(ip: IPAddr): { address: string; prefixLen: number } {
  return { address: formatIP(ip), prefixLen: ip.family === 4 ? 32 : 128 };
}

function inSubnet(a: SbrAddress, text: string | undefined): boolean {
  if (text === undefined) return false;
  const ip = parseIP(text);
  return ip !== null && containsIP(a.cidr.ip, a.cidr.prefixLen, ip);
}

/** `table` configured: only `ip rule add from <ip>/32 lookup <table>` per address. */
export function addRulesOnly(nl: Handle, addrs: readonly SbrAddress[], table: number): void {
  for (const a of addrs) annotate("failed to add rule", () => nl.ruleAdd({ src: hostPrefix(a.cidr.ip), table }));
}

/**
 * The full setup (upstream doRoutes): one table per address, each with its rule, a default route
 * via the gateway (static one of the family first), and copies of the interface's main-table
 * routes that belong to the address (or to no address); finally the interface's routes leave the
 * main table (with addSourceHints, subnet routes stay there with a `src` hint instead).
 */
export function setupSourceRouting(nl: Handle, conf: SbrConfig, ifName: string, addrs: readonly SbrAddress[]): number[] {
  const rules = annotate("Failed to list all rules", () => nl.ruleList());
  // Every table counts (upstream looks only at main-table routes, so a table used by another agent
  // without a rule yet could be taken).
  const allRoutes = annotate("Failed to list all routes", () => nl.routeList({ table: RT_TABLE_UNSPEC }));
  let table = nextFreeTable(rules, allRoutes, FIRST_TABLE_ID);

  const index = annotate(`Cannot find network interface ${ifName}`, () => nl.linkByName(ifName).index);
  const ifRoutes = annotate("Unable to list routes", () => nl.routeList({ table: RT_TABLE_MAIN, oif: index })).filter((r) => r.multipath === undefined);
  const tables: number[] = [];
  const taken: { table: number }[] = [...allRoutes];

  for (const a of addrs) {
    annotate("Failed to add rule", () => nl.ruleAdd({ src: hostPrefix(a.cidr.ip), table }));
    const gw = (a.cidr.ip.family === 4 ? conf.gateway4 : conf.gateway6) ?? a.gateway;
    if (gw !== undefined) {
      annotate(`Failed to add default route to ${formatIP(gw)}`, () => nl.routeAdd({ family: a.cidr.ip.family, gw: formatIP(gw), oif: index, table }));
    }
    const staticGw = (a.cidr.ip.family === 4 ? conf.gateway4 : conf.gateway6) !== undefined;
    for (const r of ifRoutes) {
      // A static gateway's default route must not be overwritten by the interface's own default.
      if (staticGw && r.dst === undefined && r.family === a.cidr.ip.family) continue;
      if (!(inSubnet(a, r.src) || inSubnet(a, r.gw) || (r.src === undefined && r.gw === undefined))) continue;
      annotate("Failed to readd route", () => nl.routeReplace(routeSpecOf(r, table)));
    }
    tables.push(table);
    taken.push({ table });
    table = nextFreeTable(rules, taken, table + 1);
  }

  if (conf.addSourceHints) {
    for (const a of addrs) {
      const net = networkAddress(a.cidr.ip, a.cidr.prefixLen);
      try {
        nl.routeReplace({
          family: a.cidr.ip.family,
          dst: { address: formatIP(net), prefixLen: a.cidr.prefixLen },
          oif: index,
          src: formatIP(a.cidr.ip),
          scope: RT_SCOPE_LINK,
        });
      } catch {
        // upstream only logs this
      }
    }
    for (const r of ifRoutes) {
      if (r.scope === RT_SCOPE_LINK) continue;
      try {
        nl.routeDel(routeSpecOf(r));
      } catch {
        // upstream only logs this
      }
    }
    return tables;
  }

  for (const r of ifRoutes) {
    try {
      nl.routeDel(routeSpecOf(r));
    } catch (err) {
      if (isNotFound(err)) continue;
      throw annotateError("Failed to delete route", err);
    }
  }
  return tables;
}

/**
 * DEL (upstream tidyRules, made tolerant): removes every rule (of `table` when configured) whose
 * source is one of `linkAddrs` (the interface's current addresses), or exactly the /32 (/128) of
 * one of `resultAddrs` (the prevResult's addresses, used when the interface is already gone).
 * Continues past failures and reports the last one, as upstream.
 */
export function removeRules(nl: Handle, table: number | undefined, linkAddrs: readonly string[], resultAddrs: readonly IPAddr[]): void {
  const rules = annotate(table === undefined ? "Failed to list all rules to tidy" : `failed to list rules of table ${table} to tidy`, () => nl.ruleList());
  const exact = new Set(resultAddrs.map((ip) => `${formatIP(ip)}/${ip.family === 4 ? 32 : 128}`));
  const any = new Set(linkAddrs);
  let last: unknown;
  for (const r of rules) {
    if (r.src === undefined) continue;
    if (table !== undefined && r.table !== table) continue;
    if (!any.has(r.src.address) && !exact.has(`${r.src.address}/${r.src.prefixLen}`)) continue;
    try {
      nl.ruleDel(ruleSpecOf(r));
    } catch (err) {
      if (!isNotFound(err)) last = err;
    }
  }
  if (last !== undefined) throw annotateError("Failed to delete rule", last);
}
