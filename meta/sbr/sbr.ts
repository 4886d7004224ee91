/**
 * sbr: source-based routing for a chained interface (upstream plugins/meta/sbr at HEAD,
 * upstream-matrix §2.14). For each address of CNI_IFNAME in the prevResult: a rule
 * `from <ip>/32 lookup <table>` (tables from 100 up, first free), a default route via the gateway
 * in that table, and the interface's main-table routes moved there. `table` adds only the rules;
 * `gateways` gives a static gateway per family; `addSourceHints` keeps subnet routes in main with a
 * `src` hint. Everything runs under an exclusive flock on the netns file, like upstream (so Go and
 * TS instances serialise against each other). Output = prevResult.
 *
 * Deliberate differences from upstream (Go 1.1.1 / HEAD):
 * - DEL succeeds when CNI_NETNS is unset or gone (upstream fails, and creates an empty regular file
 *   at a missing path through its lock), and when the interface is gone: then the rules for the
 *   prevResult's addresses (exact /32, /128) are removed (upstream 1.1.1 fails, HEAD leaves them);
 * - CHECK verifies the rules (and, without `table`, the default route of each table); upstream's
 *   CHECK does nothing;
 * - table selection also counts routes in non-main tables (upstream only sees main-table routes);
 * - `table` must be 1..2^32-1; no log lines on stderr.
 */
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { prevResultFrom } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { formatIP } from "../../shared/ip/ip.ts";
import { Handle } from "../../shared/netlink/index.ts";
import { ruleList } from "../../shared/netlink/rule.ts";
import type { NetNS } from "../../shared/netns/index.ts";
import { LOCK_EX } from "../../shared/sys/constants.ts";
import { libc } from "../../shared/sys/index.ts";
import { loadSbrConfig, relevantAddresses, type SbrAddress } from "./config.ts";
import { addRulesOnly, removeRules, setupSourceRouting } from "./routing.ts";

/**
 * Takes upstream's lock: an exclusive flock on the netns file itself, held until `ns` is closed.
 * The file is the one already opened (and validated) as `ns`; nothing is ever created.
 */
function lockNetns(ns: NetNS): void {
  libc.flock(ns.fd, LOCK_EX);
}

function add(args: CmdArgs): Result {
  const conf = loadSbrConfig(args);
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InternalError("This plugin must be called as chained plugin");
  const addrs = relevantAddresses(prev, args.ifName);

  using ns = openContainerNetns(args.netns);
  lockNetns(ns);
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
  const rules = ruleList(nl);
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
  const conf = loadSbrConfig(args);
  const ns = openNetnsForDel(args.netns);
  if (ns === undefined) return;
  using owned = ns;
  lockNetns(owned);
  using nl = Handle.open(owned);
  let linkAddrs: string[] = [];
  try {
    const link = nl.linkByName(args.ifName);
    linkAddrs = nl.addrList({ index: link.index }).map((a) => a.address);
  } catch {
    // the interface is gone: fall back to the prevResult's addresses
  }
  removeRules(nl, conf.table, linkAddrs, resultAddresses(args).map((a) => a.cidr.ip));
}

export const sbrPlugin: PluginSpec = {
  name: "sbr",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status: () => {},
  gc: () => {},
};
