/**
 * sbr: source-based routing for a chained interface (upstream plugins/meta/sbr at HEAD). For each
 * address of CNI_IFNAME in the prevResult: a rule `from <ip>/32 lookup <table>` (tables from 100
 * up, first free), a default route via the gateway in that table, and the interface's main-table
 * routes moved there. `table` adds only the rules; `gateways` gives a static gateway per family;
 * `addSourceHints` keeps subnet routes in main with a `src` hint. Everything runs under an
 * exclusive flock on the netns file, like upstream (so Go and TS instances serialise against each
 * other). Output = prevResult.
 *
 * Deliberate differences from upstream: DIFFERENCES.md, "sbr".
 */
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { prevResultFrom } from "../../shared/cni/result/prevresult.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { annotate } from "../../shared/error/annotate.ts";
import { formatIP } from "../../shared/ip/addr.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { lockFd } from "../../shared/sys/fd-lock.ts";
import { loadSbrConfig, relevantAddresses, type SbrAddress } from "./config.ts";
import { addRulesOnly, removeRules, setupSourceRouting } from "./routing.ts";

function add(args: CmdArgs): Result {
  const conf = loadSbrConfig(args);
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InternalError("This plugin must be called as chained plugin");
  const addrs = relevantAddresses(prev, args.ifName);

  using ns = openContainerNetns(args.netns);
  // Upstream's lock: an exclusive flock on the netns file itself (the one just opened; nothing is created).
  using _lock = lockFd(ns.fd, args.scope.lockWaiter);
  using nl = Handle.open(ns);
  if (conf.table !== undefined) addRulesOnly(nl, addrs, conf.table);
  else setupSourceRouting(nl, conf, args.ifName, addrs);
  return prev;
}

function check(args: CmdArgs): void {
  const conf = loadSbrConfig(args);
  const prev = prevResultFrom(args);
  if (prev === undefined) return;
  const addrs = relevantAddresses(prev, args.ifName);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  const rules = nl.ruleList();
  for (const a of addrs) {
    const ip = formatIP(a.cidr.ip);
    const full = a.cidr.ip.family === 4 ? 32 : 128;
    const rule = rules.find(
      (r) => r.src?.address === ip && r.src.prefixLen === full && (conf.table === undefined ? r.table >= 100 : r.table === conf.table),
    );
    if (rule === undefined) throw new InternalError(`sbr: no rule for source ${ip}/${full}${conf.table === undefined ? "" : ` to table ${conf.table}`}`);
    if (conf.table !== undefined) continue;
    const gw = (a.cidr.ip.family === 4 ? conf.gateway4 : conf.gateway6) ?? a.gateway;
    if (gw === undefined) continue;
    const routes = nl.routeList({ table: rule.table, family: a.cidr.ip.family });
    if (!routes.some((r) => r.dst === undefined && r.gw === formatIP(gw))) {
      throw new InternalError(`sbr: table ${rule.table} has no default route via ${formatIP(gw)}`);
    }
  }
}

/** The prevResult's addresses of CNI_IFNAME (for a DEL after the interface is gone). */
function resultAddresses(args: CmdArgs): SbrAddress[] {
  try {
    const prev = prevResultFrom(args);
    return prev === undefined ? [] : relevantAddresses(prev, args.ifName);
  } catch {
    return [];
  }
}

function del(args: CmdArgs): void {
  const conf = loadSbrConfig(args, { forDel: true });
  const ns = openNetnsForDel(args.netns);
  if (ns === undefined) return;
  using owned = ns;
  using _lock = lockFd(owned.fd, args.scope.lockWaiter);
  using nl = Handle.open(owned);
  // When the interface is gone, only the prevResult's addresses say which rules are ours.
  const link = annotate(`Failed to get link ${args.ifName}`, () => nl.linkFind(args.ifName));
  const linkAddrs = link === undefined ? [] : annotate("Failed to list all addrs", () => nl.addrList({ index: link.index })).map((a) => a.address);
  removeRules(nl, conf.table, linkAddrs, resultAddresses(args).map((a) => a.cidr.ip));
}

export const sbrPlugin: PluginSpec = { name: "sbr", versions: ALL_VERSIONS, add, check, del, status: () => {}, gc: () => {} };
