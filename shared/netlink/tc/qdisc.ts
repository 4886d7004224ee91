/**
 * Queueing disciplines (`tc qdisc add|replace|del|show`): TBF (with the rate table tc sends),
 * ingress and clsact; RTM_NEWQDISC / RTM_DELQDISC / RTM_GETQDISC. Builders are pure and
 * byte-checked against `tc` (test/fixtures/netlink/tc-iproute2-requests.json). Callers use the
 * Handle methods.
 */

import { attrMap, buildMessage, readU32, readU64, readU8 } from "../codec.ts";
import { NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST } from "../constants/netlink.ts";
import {
  TCA_KIND,
  TCA_OPTIONS,
  TCA_TBF_BURST,
  TCA_TBF_PARMS,
  TCA_TBF_RATE64,
  TCA_TBF_RTAB,
  TC_H_INGRESS,
  TC_H_ROOT,
  TC_RATESPEC_SIZE,
  TC_TBF_QOPT_SIZE,
} from "../constants/pkt-sched.ts";
import { RTM_DELQDISC, RTM_GETQDISC, RTM_NEWQDISC } from "../constants/rtnetlink.ts";
import type { NetlinkSocket } from "../socket.ts";
import { calcRateTable } from "./rate-table.ts";
import { OP_FLAGS, parseTcObject, tcHandle, u64Bytes, writeRateSpec, writeTcmsg, type QdiscOp, type TcObject } from "./msg.ts";

/** The ingress/clsact qdisc handle `ffff:`. */
export const INGRESS_HANDLE = tcHandle(0xffff, 0);

/** A token bucket filter: every size in bytes, `buffer` in psched ticks. */
export interface TbfSpec {
  /** ifindex of the device. */
  index: number;
  /** Qdisc handle (default `1:`). */
  handle?: number;
  /** Parent (default root). */
  parent?: number;
  /** Bytes per second. */
  rate: number;
  /** Bytes that may be queued (tc's `limit`). */
  limit: number;
  /** Bucket size in psched ticks at `rate` (tc_tbf_qopt.buffer). */
  buffer: number;
  /**
   * Also send TCA_TBF_BURST (bytes), as tc does; the kernel then derives the bucket from it in
   * nanoseconds instead of `buffer`. The bandwidth plugin leaves it out so the kernel keeps
   * exactly `buffer`, like the Go plugin's qdiscs.
   */
  burst?: number;
}

/** `tc qdisc add|replace dev X [parent P|root] handle H tbf rate R burst B limit L`. */
export function buildTbfRequest(op: QdiscOp, s: TbfSpec): Uint8Array {
  const { spec, table } = calcRateTable(s.rate);
  return buildMessage(RTM_NEWQDISC, OP_FLAGS[op], (w) => {
    writeTcmsg(w, { index: s.index, handle: s.handle ?? tcHandle(1, 0), parent: s.parent ?? TC_H_ROOT });
    w.attrString(TCA_KIND, "tbf");
    w.nest(TCA_OPTIONS, () => {
      const t = w.beginNest(TCA_TBF_PARMS);
      writeRateSpec(w, spec);
      w.bytes(new Uint8Array(TC_RATESPEC_SIZE)); // no peak rate
      w.u32(s.limit).u32(s.buffer).u32(0);
      w.endNest(t);
      if (s.burst !== undefined) w.attrU32(TCA_TBF_BURST, s.burst);
      if (s.rate >= 2 ** 32) w.attr(TCA_TBF_RATE64, u64Bytes(s.rate));
      w.attr(TCA_TBF_RTAB, table);
    });
  });
}

/** `tc qdisc add|replace dev X handle ffff: ingress`. */
export function buildIngressQdiscRequest(op: QdiscOp, index: number): Uint8Array {
  return buildMessage(RTM_NEWQDISC, OP_FLAGS[op], (w) => {
    writeTcmsg(w, { index, handle: INGRESS_HANDLE, parent: TC_H_INGRESS });
    w.attrString(TCA_KIND, "ingress");
  });
}

/** `tc qdisc add dev X clsact`. */
export function buildClsactQdiscAddRequest(index: number): Uint8Array {
  return buildMessage(RTM_NEWQDISC, OP_FLAGS.add, (w) => {
    writeTcmsg(w, { index, handle: INGRESS_HANDLE, parent: TC_H_INGRESS });
    w.attrString(TCA_KIND, "clsact");
  });
}

/** `tc qdisc del dev X root` (parent TC_H_ROOT) or `tc qdisc del dev X ingress` (kind "ingress"). */
export function buildQdiscDelRequest(index: number, where: "root" | "ingress"): Uint8Array {
  return buildMessage(RTM_DELQDISC, NLM_F_REQUEST | NLM_F_ACK, (w) => {
    if (where === "root") {
      writeTcmsg(w, { index, parent: TC_H_ROOT });
    } else {
      writeTcmsg(w, { index, handle: INGRESS_HANDLE, parent: TC_H_INGRESS });
      w.attrString(TCA_KIND, "ingress");
    }
  });
}

/** `tc qdisc show`: RTM_GETQDISC dump of every device (tc filters by device itself). */
export function buildQdiscDumpRequest(): Uint8Array {
  return buildMessage(RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP, (w) => writeTcmsg(w, { index: 0 }));
}

/** TBF parameters as the kernel reports them (tc_tbf_qopt; rate from TCA_TBF_RATE64 when present). */
export interface TbfParams {
  rate: number;
  peakRate: number;
  limit: number;
  buffer: number;
  mtu: number;
  linklayer: number;
}

/** A qdisc from a dump, with the TBF parameters decoded for kind "tbf". */
export interface Qdisc extends TcObject {
  tbf?: TbfParams;
}

/** Decodes the TCA_OPTIONS of a tbf qdisc. */
export function parseTbfOptions(options: Uint8Array): TbfParams | undefined {
  const a = attrMap(options);
  const parms = a.get(TCA_TBF_PARMS);
  if (parms === undefined || parms.byteLength < TC_TBF_QOPT_SIZE) return undefined;
  const rate64 = a.get(TCA_TBF_RATE64);
  return {
    rate: rate64 !== undefined && rate64.byteLength >= 8 ? readU64(rate64) : readU32(parms, 8),
    peakRate: readU32(parms, TC_RATESPEC_SIZE + 8),
    limit: readU32(parms, 2 * TC_RATESPEC_SIZE),
    buffer: readU32(parms, 2 * TC_RATESPEC_SIZE + 4),
    mtu: readU32(parms, 2 * TC_RATESPEC_SIZE + 8),
    linklayer: readU8(parms, 1),
  };
}

/** Decodes one RTM_NEWQDISC payload. */
export function parseQdisc(payload: Uint8Array): Qdisc {
  const q: Qdisc = parseTcObject(payload);
  if (q.kind === "tbf" && q.options !== undefined) {
    const tbf = parseTbfOptions(q.options);
    if (tbf !== undefined) q.tbf = tbf;
  }
  return q;
}

/** Equivalent to `tc qdisc add|replace dev X root handle 1: tbf rate R burst B limit L`. */
export function qdiscTbf(sock: NetlinkSocket, op: QdiscOp, s: TbfSpec): void {
  sock.request(buildTbfRequest(op, s), `tbf index=${s.index}`);
}

/** Equivalent to `tc qdisc add|replace dev X handle ffff: ingress`. */
export function qdiscIngress(sock: NetlinkSocket, op: QdiscOp, index: number): void {
  sock.request(buildIngressQdiscRequest(op, index), `ingress index=${index}`);
}

/** Equivalent to `tc qdisc add dev X clsact`. */
export function qdiscClsactAdd(sock: NetlinkSocket, index: number): void {
  sock.request(buildClsactQdiscAddRequest(index), `clsact index=${index}`);
}

/** Equivalent to `tc qdisc del dev X root|ingress`. */
export function qdiscDel(sock: NetlinkSocket, index: number, where: "root" | "ingress"): void {
  sock.request(buildQdiscDelRequest(index, where), `${where} qdisc index=${index}`);
}

/** Equivalent to `tc qdisc show [dev X]`: every qdisc, or those of ifindex `index`. */
export function qdiscList(sock: NetlinkSocket, index?: number): Qdisc[] {
  const out: Qdisc[] = [];
  for (const m of sock.request(buildQdiscDumpRequest(), "qdisc dump")) {
    if (m.type !== RTM_NEWQDISC) continue;
    const q = parseQdisc(m.payload);
    if (index === undefined || q.index === index) out.push(q);
  }
  return out;
}
