/**
 * The tc objects the plugin manages on the shaped device (the host veth, or the container interface
 * when shaping from inside the container netns: site.ts), all over netlink (Handle's tc methods,
 * shared/netlink/tc/):
 * - the device's own sending direction: TBF `1:` at its root (with subnet lists: the HTB of
 *   htb-setup.ts instead, on the device and on the IFB);
 * - its receiving direction: an IFB in the same netns (MTU and txqueuelen of the device, up), an
 *   ingress qdisc `ffff:` on the device (or the existing clsact/ingress one), a u32 match-all
 *   filter there (protocol all, classid 1:1) whose mirred action redirects to the IFB, and TBF `1:`
 *   at the IFB's root. Removal takes the ingress qdisc away again once no filter is left on it.
 * Leftovers of an earlier attachment (a failed DEL) are replaced rather than failing with EEXIST.
 * Removal treats only not-found (the device is gone) as "nothing there"; any other error is thrown.
 */
import { annotate } from "../../shared/error/annotate.ts";
import { isExists, isNotFound } from "../../shared/netlink/errors.ts";
import type { Filter } from "../../shared/netlink/tc/filter.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Qdisc } from "../../shared/netlink/tc/qdisc.ts";
import { ETH_P_ALL } from "../../shared/netlink/constants/pkt-cls.ts";
import { TC_H_MIN_INGRESS, TC_H_ROOT } from "../../shared/netlink/constants/pkt-sched.ts";
import { TCA_EGRESS_REDIR } from "../../shared/netlink/constants/tc-act.ts";
import { tcHandle } from "../../shared/netlink/tc/msg.ts";
import { INGRESS_HANDLE } from "../../shared/netlink/tc/qdisc.ts";
import { isOurRoot } from "./htb-setup.ts";
import type { TbfNumbers } from "./tbf-params.ts";

/** The TBF handle upstream uses (`1:`). */
export const TBF_HANDLE = tcHandle(1, 0);
/** The classid the redirect filter carries (upstream: 1:1). */
const FILTER_CLASSID = tcHandle(1, 1);

/** The root qdisc of a device, if any (dump entries whose parent is TC_H_ROOT). */
export function rootQdisc(nl: Handle, index: number): Qdisc | undefined {
  return nl.qdiscList(index).find((q) => q.parent === TC_H_ROOT);
}

/**
 * `tc qdisc add dev X root handle 1: tbf rate R burst B limit L` — or `replace` when our TBF is
 * already there (a leftover).
 */
export function setupTbf(nl: Handle, index: number, n: TbfNumbers, errPrefix: string): void {
  const current = rootQdisc(nl, index);
  const op = current?.kind === "tbf" && current.handle === TBF_HANDLE ? "replace" : "add";
  annotate(errPrefix, () => {
    // a leftover HTB of a subnet configuration (htb-setup.ts) cannot be replaced by a TBF in place
    if (current?.kind === "htb" && current.handle === TBF_HANDLE) nl.qdiscDel(index, "root");
    nl.qdiscTbf(op, { index, handle: TBF_HANDLE, parent: TC_H_ROOT, rate: n.rate, limit: n.limit, buffer: n.buffer });
  });
}

/** Where filters attach on an ingress hook qdisc: ingress `ffff:` or clsact `ffff:fff2`; undefined for any other qdisc. */
function hookParentOf(q: Qdisc): number | undefined {
  if (q.handle !== INGRESS_HANDLE) return undefined;
  if (q.kind === "clsact") return tcHandle(0xffff, TC_H_MIN_INGRESS);
  if (q.kind === "ingress") return INGRESS_HANDLE;
  return undefined;
}

/** The parent of the device's ingress hook, if it has one. */
function hookParent(nl: Handle, index: number): number | undefined {
  for (const q of nl.qdiscList(index)) {
    const parent = hookParentOf(q);
    if (parent !== undefined) return parent;
  }
  return undefined;
}

/** The ingress hook's parent, adding an ingress qdisc when the device has neither ingress nor clsact. */
function ensureHookParent(nl: Handle, index: number): number {
  const parent = hookParent(nl, index);
  if (parent !== undefined) return parent;
  annotate("create ingress qdisc", () => {
    try {
      nl.qdiscIngress("add", index);
    } catch (err) {
      if (!isExists(err)) throw err;
    }
  });
  return INGRESS_HANDLE;
}

/** A filter this plugin made: u32, protocol all, classid 1:1, mirred egress redirect. */
function isOurRedirect(f: Filter): boolean {
  return f.kind === "u32" && f.protocol === ETH_P_ALL && f.classId === FILTER_CLASSID && f.actions.some((a) => a.mirred?.eaction === TCA_EGRESS_REDIR);
}

/** Whether `f` redirects to `ifbIndex` (any of our redirects when undefined). */
function redirectsToIndex(f: Filter, ifbIndex: number | undefined): boolean {
  return isOurRedirect(f) && (ifbIndex === undefined || f.actions.some((a) => a.mirred?.ifindex === ifbIndex));
}

/** Priorities of our redirect filters on `parent`. */
function ourFilterPrios(filters: readonly Filter[]): number[] {
  return [...new Set(filters.filter(isOurRedirect).map((f) => f.priority))];
}

/** The filters on `parent`; none when the device is gone (only not-found means absent: any other error is thrown). */
function filtersOn(nl: Handle, index: number, parent: number): Filter[] {
  try {
    return nl.filterList(index, parent);
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
}

/** The filters on the device's ingress hook with its parent; undefined when it has no hook. */
function hookFilters(nl: Handle, index: number): { parent: number; filters: Filter[] } | undefined {
  const parent = hookParent(nl, index);
  return parent === undefined ? undefined : { parent, filters: filtersOn(nl, index, parent) };
}

/** Device → IFB: ingress hook, then the match-all redirect filter (replacing a leftover one). */
export function setupRedirect(nl: Handle, index: number, ifbIndex: number): void {
  const parent = ensureHookParent(nl, index);
  const filters = annotate("add filter", () => nl.filterList(index, parent));
  for (const prio of ourFilterPrios(filters)) nl.filterDel(index, parent, prio, ETH_P_ALL);
  const taken = new Set(filters.filter((f) => !isOurRedirect(f)).map((f) => f.priority));
  let priority = 1;
  while (taken.has(priority)) priority++;
  annotate("add filter", () =>
    nl.filterAddU32({
      index,
      parent,
      priority,
      protocol: ETH_P_ALL,
      classId: FILTER_CLASSID,
      actions: [{ kind: "mirred", ifindex: ifbIndex, eaction: TCA_EGRESS_REDIR }],
    }),
  );
}

/** Whether the device's ingress hook redirects to `ifbIndex` (CHECK). */
export function redirectsTo(nl: Handle, index: number, ifbIndex: number): boolean {
  return hookFilters(nl, index)?.filters.some((f) => redirectsToIndex(f, ifbIndex)) ?? false;
}

/**
 * Removes from the device our redirect filters towards `ifbIndex` (all of ours when undefined),
 * so a device that outlives the attachment is not left redirecting into a deleted IFB; then the
 * ingress qdisc `ffff:` that ADD adds for them, once no filter at all is left on it (a clsact
 * qdisc, which ADD never adds, stays).
 */
export function removeRedirects(nl: Handle, index: number, ifbIndex: number | undefined): void {
  const hook = hookFilters(nl, index);
  if (hook === undefined) return;
  // a priority is one classifier: deleting it takes its u32 hash table nodes along
  const prios = new Set(hook.filters.filter((f) => redirectsToIndex(f, ifbIndex)).map((f) => f.priority));
  for (const prio of prios) {
    try {
      nl.filterDel(index, hook.parent, prio, ETH_P_ALL);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  if (hook.parent !== INGRESS_HANDLE || hook.filters.some((f) => !prios.has(f.priority))) return;
  try {
    nl.qdiscDel(index, "ingress");
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Removes the device's root qdisc when it is ours (TBF or HTB `1:`); a device that is gone has none. */
export function removeRootQdisc(nl: Handle, index: number): void {
  if (!isOurRoot(rootQdisc(nl, index))) return;
  try {
    nl.qdiscDel(index, "root");
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * Every device of the netns whose ingress hook redirects to one of `ifbIndexes` with a filter of
 * ours, by IFB index (GC: the sources of stale IFBs).
 */
export function redirectSources(nl: Handle, ifbIndexes: ReadonlySet<number>): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const q of nl.qdiscList()) {
    const parent = hookParentOf(q);
    if (parent === undefined) continue;
    for (const f of filtersOn(nl, q.index, parent)) {
      for (const target of isOurRedirect(f) ? f.actions.map((a) => a.mirred?.ifindex) : []) {
        if (target === undefined || !ifbIndexes.has(target)) continue;
        const sources = out.get(target) ?? [];
        if (!sources.includes(q.index)) sources.push(q.index);
        out.set(target, sources);
      }
    }
  }
  return out;
}
