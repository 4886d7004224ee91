/**
 * tc actions as filters carry them (TCA_*_ACT: a list of nests numbered from 1, each
 * { TCA_ACT_KIND, TCA_ACT_OPTIONS }); only mirred is encoded (`action mirred egress redirect dev X`).
 */

import { attrMap, parseAttrs, readI32, readString, readU32, type NlWriter } from "../codec.ts";
import { NLA_F_NESTED } from "../constants/netlink.ts";
import { TCA_ACT_KIND, TCA_ACT_OPTIONS, TC_ACT_STOLEN } from "../constants/pkt-cls.ts";
import { TCA_EGRESS_REDIR, TCA_MIRRED_PARMS, TC_MIRRED_SIZE } from "../constants/tc-act.ts";

/** `mirred egress redirect dev X` (defaults) or another mirred mode / verdict. */
export interface MirredAction {
  kind: "mirred";
  /** Target ifindex. */
  ifindex: number;
  /** TCA_EGRESS_REDIR (default), TCA_EGRESS_MIRROR, TCA_INGRESS_REDIR, TCA_INGRESS_MIRROR. */
  eaction?: number;
  /** Verdict after the action (default TC_ACT_STOLEN, as tc uses for a redirect). */
  verdict?: number;
}

/** An action as listed by the kernel. */
export interface TcAction {
  kind: string;
  /** For mirred: the parameters. */
  mirred?: { eaction: number; ifindex: number; verdict: number; index: number };
}

/** Writes the action list (numbered nests 1..n) into the nest the caller opened. */
export function writeActions(w: NlWriter, actions: readonly MirredAction[]): void {
  actions.forEach((a, i) => {
    w.nest(i + 1, () => {
      w.attrString(TCA_ACT_KIND, a.kind);
      w.nest(
        TCA_ACT_OPTIONS,
        () => {
          const t = w.beginNest(TCA_MIRRED_PARMS);
          // tc_gen { index, capab, action, refcnt, bindcnt }, eaction, ifindex
          w.u32(0).u32(0).i32(a.verdict ?? TC_ACT_STOLEN).i32(0).i32(0).i32(a.eaction ?? TCA_EGRESS_REDIR).u32(a.ifindex);
          w.endNest(t);
        },
        NLA_F_NESTED,
      );
    });
  });
}

/** Decodes a TCA_*_ACT list. */
export function parseActions(list: Uint8Array): TcAction[] {
  const out: TcAction[] = [];
  for (const entry of parseAttrs(list)) {
    const a = attrMap(entry.data);
    const kindRaw = a.get(TCA_ACT_KIND);
    const action: TcAction = { kind: kindRaw === undefined ? "" : readString(kindRaw) };
    const opts = a.get(TCA_ACT_OPTIONS);
    if (action.kind === "mirred" && opts !== undefined) {
      const parms = attrMap(opts).get(TCA_MIRRED_PARMS);
      if (parms !== undefined && parms.byteLength >= TC_MIRRED_SIZE) {
        action.mirred = { index: readU32(parms, 0), verdict: readI32(parms, 8), eaction: readI32(parms, 20), ifindex: readU32(parms, 24) };
      }
    }
    out.push(action);
  }
  return out;
}
