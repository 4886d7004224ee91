/**
 * vrf: a chained meta plugin that puts CNI_IFNAME into a VRF inside the container netns (upstream
 * plugins/meta/vrf at HEAD). ADD finds or creates the VRF `vrfname` (with `table`, or the lowest
 * table ≥ 1 no other VRF in the netns uses), sets it up and enslaves the interface, keeping its
 * global IPv6 addresses (the kernel drops them on enslaving) and moving its universe-scope routes
 * into the VRF's table. CHECK: the VRF exists and holds the interface. DEL: releases the
 * interface and deletes the VRF when no member remains. Output = prevResult.
 *
 * Deliberate differences from upstream: DIFFERENCES.md, "vrf".
 */
import { t } from "../../shared/cni/decode.ts";
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { InternalError, InvalidConfigError } from "../../shared/cni/errors.ts";
import { loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import { prevResultFrom } from "../../shared/cni/result/prevresult.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { versionsFrom } from "../../shared/cni/version.ts";
import { annotate } from "../../shared/error/annotate.ts";
import { settleIPv6, sleepSync } from "../../shared/iface/settle.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { isExists } from "../../shared/netlink/errors.ts";
import { routeSpecOf } from "../../shared/netlink/route.ts";
import type { Link } from "../../shared/netlink/link.ts";
import { IFA_F_NODAD } from "../../shared/netlink/constants/if-addr.ts";
import { RT_SCOPE_UNIVERSE, RT_TABLE_MAIN } from "../../shared/netlink/constants/rtnetlink.ts";

const vrfSchema = t.object("VRFNetConf", { ...netConfFields, vrfname: t.string(), table: t.uint32() });

interface VrfConfig {
  vrfName: string;
  /** 0 = pick one. */
  table: number;
}

/** How long ADD waits for the interface's IPv6 addresses to leave DAD after enslaving. */
const IPV6_SETTLE_MS = 10_000;

/** Decodes and validates the config; `forDel` relaxes nothing: upstream's DEL parses the config as strictly. */
function loadVrfConfig(args: CmdArgs, _opts: LoadOptions = {}): VrfConfig {
  const c = loadNetConf(vrfSchema, args);
  const vrfName = c.vrfname ?? "";
  if (vrfName === "") throw new InvalidConfigError("configuration is expected to have a valid vrf name");
  return { vrfName, table: c.table ?? 0 };
}

/** A VRF device and its routing table. */
interface Vrf {
  index: number;
  name: string;
  table: number;
}

/** The lowest table ≥ 1 that no VRF in the list uses (upstream findFreeRoutingTableID). */
export function freeVrfTable(vrfs: readonly { table: number }[]): number {
  const used = new Set(vrfs.map((v) => v.table));
  let table = 1;
  while (used.has(table)) table++;
  return table;
}

/** The VRFs among the listed links. */
function vrfsOf(links: readonly Link[]): Vrf[] {
  return links.filter((l) => l.kind === "vrf").map((l) => ({ index: l.index, name: l.name, table: l.vrfTable ?? 0 }));
}

/** The VRF named `name` in the handle's netns, if there is one. */
function findVrf(nl: Handle, name: string): Vrf | undefined {
  return vrfsOf(nl.linkList()).find((v) => v.name === name);
}

/** Finds or creates (and sets up) the VRF. */
function ensureVrf(nl: Handle, conf: VrfConfig): Vrf {
  const links = nl.linkList();
  const vrfs = vrfsOf(links);
  const existing = vrfs.find((v) => v.name === conf.vrfName);
  if (existing !== undefined) {
    if (conf.table !== 0 && conf.table !== existing.table) {
      throw new InternalError(`VRF ${conf.vrfName} already exist with different routing table ${conf.table}`);
    }
    return existing;
  }
  if (links.some((l) => l.name === conf.vrfName)) throw new InternalError(`Netlink ${conf.vrfName} is not a VRF`);
  const table = conf.table !== 0 ? conf.table : freeVrfTable(vrfs);
  annotate(`could not add VRF ${conf.vrfName}`, () => nl.linkAddVrf({ name: conf.vrfName, table }));
  const link = nl.linkByName(conf.vrfName);
  annotate(`could not set link up for VRF ${conf.vrfName}`, () => nl.linkSetUp(link.index));
  return { index: link.index, name: conf.vrfName, table };
}

/** Upstream addInterface: enslave, keep IPv6 addresses, move universe routes into the table. */
function enslave(nl: Handle, ifName: string, vrf: Vrf): void {
  const link = annotate(`failed getting link ${ifName}`, () => nl.linkByName(ifName));
  const masterIndex = link.masterIndex;
  if (masterIndex !== undefined && masterIndex !== 0) {
    const master = annotate(`interface ${ifName} has already a master set, could not retrieve the name`, () => nl.linkByIndex(masterIndex));
    throw new InternalError(`interface ${ifName} has already a master set: ${master.name}`);
  }
  const v6 = nl.addrList({ index: link.index, family: 6 }).filter((a) => a.scope === RT_SCOPE_UNIVERSE);
  const routes = nl.routeList({ table: RT_TABLE_MAIN, oif: link.index }).filter((r) => r.scope === RT_SCOPE_UNIVERSE && r.multipath === undefined);
  annotate(`could not set vrf ${vrf.name} as master of ${ifName}`, () => nl.linkSetMaster(link.index, vrf.index));

  // Enslaving to a VRF flushes IPv6 addresses: put back the ones that went away.
  const after = new Set(nl.addrList({ index: link.index, family: 6 }).map((a) => `${a.address}/${a.prefixLen}`));
  const readded = v6.filter((a) => !after.has(`${a.address}/${a.prefixLen}`));
  for (const a of readded) {
    annotate(`could not restore address ${a.address}/${a.prefixLen} to ${ifName} @ ${vrf.name}`, () => {
      try {
        // NODAD: the address already passed DAD before it was enslaved; a tentative address could
        // not serve as the source of the routes re-added below ("Invalid source address").
        nl.addrAdd(link.index, { address: a.address, prefixLen: a.prefixLen, family: 6, flags: IFA_F_NODAD });
      } catch (err) {
        if (!isExists(err)) throw err;
      }
    });
  }
  if (readded.length > 0) {
    let wait = 10;
    for (let i = 0; i < 8; i++) {
      const inTable = nl.routeList({ table: vrf.table, family: 6, oif: link.index });
      if (readded.every((a) => inTable.some((r) => r.dst?.prefixLen === a.prefixLen))) break;
      sleepSync(wait);
      wait *= 2;
    }
  }
  // Enslaving restarts DAD on kept IPv6 addresses; a tentative address cannot be a route's source.
  if (v6.length > 0) settleIPv6(nl, link.index, IPV6_SETTLE_MS);
  for (const r of routes) annotate(`could not add route to ${ifName} @ ${vrf.name}`, () => nl.routeReplace(routeSpecOf(r, vrf.table)));
}

function add(args: CmdArgs): Result {
  const conf = loadVrfConfig(args);
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InternalError("missing prevResult from earlier plugin");
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  annotate("cmdAdd failed", () => enslave(nl, args.ifName, ensureVrf(nl, conf)));
  return prev;
}

function check(args: CmdArgs): void {
  const conf = loadVrfConfig(args);
  if (prevResultFrom(args) === undefined) throw new InternalError("missing prevResult from earlier plugin");
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  const vrf = findVrf(nl, conf.vrfName);
  if (vrf === undefined) throw new InternalError(`failed to find vrf ${conf.vrfName}`);
  const link = nl.linkFind(args.ifName);
  if (link === undefined || link.masterIndex !== vrf.index) {
    throw new InternalError(`failed to find ${args.ifName} associated to vrf ${conf.vrfName}`);
  }
}

function del(args: CmdArgs): void {
  const conf = loadVrfConfig(args, { forDel: true });
  const ns = openNetnsForDel(args.netns);
  if (ns === undefined) return;
  using owned = ns;
  using nl = Handle.open(owned);
  const vrf = findVrf(nl, conf.vrfName);
  if (vrf === undefined) return;
  const link = nl.linkFind(args.ifName);
  if (link !== undefined && link.masterIndex === vrf.index) {
    annotate(`failed to reset master of ${args.ifName}`, () => nl.linkSetNoMaster(link.index));
  }
  const members = nl.linkList().filter((l) => l.masterIndex === vrf.index);
  if (members.length === 0) annotate(`failed deleting vrf ${conf.vrfName}`, () => nl.linkDel(vrf.index));
}

export const vrfPlugin: PluginSpec = { name: "vrf", versions: versionsFrom("0.3.1"), add, check, del, status: () => {}, gc: () => {} };
