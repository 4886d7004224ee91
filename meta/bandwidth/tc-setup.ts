/**
 * The tc objects the plugin manages, all over netlink (Handle's tc methods, shared/netlink/tc/):
 * - ingress shaping: TBF `1:` at the root of the host veth (with subnet lists: the HTB of
 *   htb-setup.ts instead, on the host veth and on the IFB);
 * - egress shaping: an IFB (MTU and txqueuelen of the host veth, up), an ingress qdisc `ffff:` on
 *   the host veth (or the existing clsact/ingress one), a u32 match-all filter there (protocol
 *   all, classid 1:1) whose mirred action redirects to the IFB, and TBF `1:` at the IFB's root.
 * Leftovers of an earlier attachment (a failed DEL) are replaced rather than failing with EEXIST.
 */
import { annotate } from "../../shared/error/annotate.ts";
import { isExists, isNotFound, type Filter, type Handle, type Link, type Qdisc } from "../../shared/netlink/index.ts";
import { ETH_P_ALL } from "../../shared/netlink/constants/pkt-cls.ts";
import { TC_H_MIN_INGRESS, TC_H_ROOT } from "../../shared/netlink/constants/pkt-sched.ts";
import { TCA_EGRESS_REDIR } from "../../shared/netlink/constants/tc-act.ts";
import { tcHandle } from "../../shared/netlink/tc/msg.ts";
import { INGRESS_HANDLE } from "../../shared/netlink/tc/qdisc.ts";
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

/** Where filters attach on the host veth's ingress hook: an ingress qdisc (`ffff:`) or clsact (`ffff:fff2`). */
function ingressParent(nl: Handle, host: Link): number {
  const hook = nl.qdiscList(host.index).find((q) => q.handle === INGRESS_HANDLE && (q.kind === "ingress" || q.kind === "clsact"));
  if (hook?.kind === "clsact") return tcHandle(0xffff, TC_H_MIN_INGRESS);
  if (hook?.kind === "ingress") return INGRESS_HANDLE;
  annotate("create ingress qdisc", () => {
    try {
      nl.qdiscIngress("add", host.index);
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

/** Priorities of our redirect filters on `parent`. */
function ourFilterPrios(filters: readonly Filter[]): number[] {
  return [...new Set(filters.filter(isOurRedirect).map((f) => f.priority))];
}

/** Host veth → IFB: ingress hook, then the match-all redirect filter (replacing a leftover one). */
export function setupRedirect(nl: Handle, host: Link, ifbIndex: number): void {
  const parent = ingressParent(nl, host);
  const filters = annotate("add filter", () => nl.filterList(host.index, parent));
  for (const prio of ourFilterPrios(filters)) nl.filterDel(host.index, parent, prio, ETH_P_ALL);
  const taken = new Set(filters.filter((f) => !isOurRedirect(f)).map((f) => f.priority));
  let priority = 1;
  while (taken.has(priority)) priority++;
  annotate("add filter", () =>
    nl.filterAddU32({
      index: host.index,
      parent,
      priority,
      protocol: ETH_P_ALL,
      classId: FILTER_CLASSID,
      actions: [{ kind: "mirred", ifindex: ifbIndex, eaction: TCA_EGRESS_REDIR }],
    }),
  );
}

/** Whether the host veth's ingress hook redirects to `ifbIndex` (CHECK). */
export function redirectsTo(nl: Handle, host: Link, ifbIndex: number): boolean {
  for (const parent of [INGRESS_HANDLE, tcHandle(0xffff, TC_H_MIN_INGRESS)]) {
    let filters: Filter[];
    try {
      filters = nl.filterList(host.index, parent);
    } catch {
      continue;
    }
    if (filters.some((f) => isOurRedirect(f) && f.actions.some((a) => a.mirred?.ifindex === ifbIndex))) return true;
  }
  return false;
}

/**
 * DEL: removes from the host veth our redirect filters (towards `ifbIndex` when known) and, when
 * `root`, our root TBF or HTB (`1:`), so a veth that outlives the attachment is not left
 * redirecting into a deleted IFB.
 */
export function removeHostShaping(nl: Handle, host: Link, o: { ifbIndex: number | undefined; root: boolean }): void {
  const ifbIndex = o.ifbIndex;
  for (const parent of [INGRESS_HANDLE, tcHandle(0xffff, TC_H_MIN_INGRESS)]) {
    let filters: Filter[];
    try {
      filters = nl.filterList(host.index, parent);
    } catch {
      continue;
    }
    const mine = filters.filter((f) => isOurRedirect(f) && (ifbIndex === undefined || f.actions.some((a) => a.mirred?.ifindex === ifbIndex)));
    for (const prio of new Set(mine.map((f) => f.priority))) {
      try {
        nl.filterDel(host.index, parent, prio, ETH_P_ALL);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }
  if (!o.root) return;
  const root = rootQdisc(nl, host.index);
  if ((root?.kind === "tbf" || root?.kind === "htb") && root.handle === TBF_HANDLE) {
    try {
      nl.qdiscDel(host.index, "root");
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
