/**
 * HTB (`tc qdisc|class ... htb`): the root qdisc with its default class, classes with rate/ceil
 * and their buckets, and the class dump; RTM_NEWQDISC / RTM_NEWTCLASS / RTM_GETTCLASS. Builders
 * are pure and byte-checked against `tc` (test/fixtures/netlink/tc-iproute2-requests.json). Callers use the
 * Handle methods.
 */

import { attrMap, buildMessage, readU32, readU64 } from "../codec.ts";
import { NLM_F_DUMP, NLM_F_REQUEST } from "../constants/netlink.ts";
import {
  TCA_HTB_CEIL64,
  TCA_HTB_CTAB,
  TCA_HTB_INIT,
  TCA_HTB_PARMS,
  TCA_HTB_RATE64,
  TCA_HTB_RTAB,
  TC_HTB_GLOB_SIZE,
  TC_HTB_OPT_SIZE,
  TC_HTB_PROTOVER,
} from "../constants/pkt-sched-htb.ts";
import { TCA_KIND, TCA_OPTIONS, TC_H_ROOT, TC_RATESPEC_SIZE } from "../constants/pkt-sched.ts";
import { RTM_GETTCLASS, RTM_NEWQDISC, RTM_NEWTCLASS } from "../constants/rtnetlink.ts";
import type { NetlinkSocket } from "../socket.ts";
import { parseTcObject, tcHandle, writeTcmsg, type TcObject } from "./msg.ts";
import { OP_FLAGS, u64Bytes, writeRateSpec, type QdiscOp } from "./msg.ts";
import { calcRateTable } from "./rate-table.ts";

const U32_LIMIT = 2 ** 32;

/** `tc qdisc add|replace dev X [parent P|root] handle H htb default D r2q R`. */
export interface HtbQdiscSpec {
  index: number;
  /** Default `1:`. */
  handle?: number;
  /** Default root. */
  parent?: number;
  /** Minor number of the class unclassified packets go to (tc's `default`, written in hex there). */
  defaultClass: number;
  /** Rate-to-quantum divisor (tc's default 10). */
  r2q?: number;
}

/** An HTB class: rates in bytes/s, buckets in psched ticks at those rates, quantum in bytes. */
export interface HtbClassSpec {
  index: number;
  /** The class id `maj:min`. */
  classId: number;
  /** The parent qdisc or class. */
  parent: number;
  rate: number;
  ceil: number;
  /** Bucket of `rate`, in psched ticks (tc computes it from `burst`). */
  buffer: number;
  /** Bucket of `ceil`, in psched ticks (from `cburst`). */
  cbuffer: number;
  /** Bytes served per DRR round; 0 lets the kernel derive it from rate / r2q. */
  quantum?: number;
  prio?: number;
}

/** `tc qdisc add|replace dev X root handle 1: htb default D r2q R`. */
export function buildHtbQdiscRequest(op: QdiscOp, s: HtbQdiscSpec): Uint8Array {
  return buildMessage(RTM_NEWQDISC, OP_FLAGS[op], (w) => {
    writeTcmsg(w, { index: s.index, handle: s.handle ?? tcHandle(1, 0), parent: s.parent ?? TC_H_ROOT });
    w.attrString(TCA_KIND, "htb");
    w.nest(TCA_OPTIONS, () => {
      const t = w.beginNest(TCA_HTB_INIT);
      // struct tc_htb_glob { version, rate2quantum, defcls, debug, direct_pkts }
      w.u32(TC_HTB_PROTOVER).u32(s.r2q ?? 10).u32(s.defaultClass).u32(0).u32(0);
      w.endNest(t);
    });
  });
}

/** `tc class add dev X parent P classid C htb rate R ceil C burst B cburst CB quantum Q`. */
export function buildHtbClassRequest(op: QdiscOp, s: HtbClassSpec): Uint8Array {
  const rate = calcRateTable(s.rate);
  const ceil = calcRateTable(s.ceil);
  return buildMessage(RTM_NEWTCLASS, OP_FLAGS[op], (w) => {
    writeTcmsg(w, { index: s.index, handle: s.classId, parent: s.parent });
    w.attrString(TCA_KIND, "htb");
    w.nest(TCA_OPTIONS, () => {
      if (s.rate >= U32_LIMIT) w.attr(TCA_HTB_RATE64, u64Bytes(s.rate));
      if (s.ceil >= U32_LIMIT) w.attr(TCA_HTB_CEIL64, u64Bytes(s.ceil));
      const t = w.beginNest(TCA_HTB_PARMS);
      writeRateSpec(w, rate.spec);
      writeRateSpec(w, ceil.spec);
      w.u32(s.buffer).u32(s.cbuffer).u32(s.quantum ?? 0).u32(0).u32(s.prio ?? 0);
      w.endNest(t);
      w.attr(TCA_HTB_RTAB, rate.table);
      w.attr(TCA_HTB_CTAB, ceil.table);
    });
  });
}

/** `tc class show dev X`: RTM_GETTCLASS dump of one device. */
export function buildClassDumpRequest(index: number): Uint8Array {
  return buildMessage(RTM_GETTCLASS, NLM_F_REQUEST | NLM_F_DUMP, (w) => writeTcmsg(w, { index }));
}

/** An HTB class as the kernel reports it. */
export interface HtbClassParams {
  rate: number;
  ceil: number;
  buffer: number;
  cbuffer: number;
  quantum: number;
  level: number;
  prio: number;
}

/** A class from a dump, with the HTB parameters decoded for kind "htb". */
export interface TcClass extends TcObject {
  htb?: HtbClassParams;
}

/** Decodes the TCA_OPTIONS of an htb class (rates from the *64 attributes when present). */
export function parseHtbClassOptions(options: Uint8Array): HtbClassParams | undefined {
  const a = attrMap(options);
  const p = a.get(TCA_HTB_PARMS);
  if (p === undefined || p.byteLength < TC_HTB_OPT_SIZE) return undefined;
  const rate64 = a.get(TCA_HTB_RATE64);
  const ceil64 = a.get(TCA_HTB_CEIL64);
  const at = 2 * TC_RATESPEC_SIZE;
  return {
    rate: rate64 !== undefined && rate64.byteLength >= 8 ? readU64(rate64) : readU32(p, 8),
    ceil: ceil64 !== undefined && ceil64.byteLength >= 8 ? readU64(ceil64) : readU32(p, TC_RATESPEC_SIZE + 8),
    buffer: readU32(p, at),
    cbuffer: readU32(p, at + 4),
    quantum: readU32(p, at + 8),
    level: readU32(p, at + 12),
    prio: readU32(p, at + 16),
  };
}

/** The default class minor of an htb qdisc's TCA_OPTIONS (tc_htb_glob.defcls). */
export function parseHtbDefaultClass(options: Uint8Array): number | undefined {
  const init = attrMap(options).get(TCA_HTB_INIT);
  if (init === undefined || init.byteLength < TC_HTB_GLOB_SIZE) return undefined;
  return readU32(init, 8);
}

/** Decodes one RTM_NEWTCLASS payload. */
export function parseClass(payload: Uint8Array): TcClass {
  const c: TcClass = parseTcObject(payload);
  if (c.kind === "htb" && c.options !== undefined) {
    const htb = parseHtbClassOptions(c.options);
    if (htb !== undefined) c.htb = htb;
  }
  return c;
}

/** Equivalent to `tc qdisc add|replace dev X root handle 1: htb default D`. */
export function qdiscHtb(sock: NetlinkSocket, op: QdiscOp, s: HtbQdiscSpec): void {
  sock.request(buildHtbQdiscRequest(op, s), `htb index=${s.index}`);
}

/** Equivalent to `tc class add|replace dev X parent P classid C htb rate R ceil C ...`. */
export function classHtb(sock: NetlinkSocket, op: QdiscOp, s: HtbClassSpec): void {
  sock.request(buildHtbClassRequest(op, s), `htb class index=${s.index}`);
}

/** Equivalent to `tc class show dev X`. */
export function classList(sock: NetlinkSocket, index: number): TcClass[] {
  const out: TcClass[] = [];
  for (const m of sock.request(buildClassDumpRequest(index), "class dump")) {
    if (m.type !== RTM_NEWTCLASS) continue;
    const c = parseClass(m.payload);
    if (c.index === index) out.push(c);
  }
  return out;
}
