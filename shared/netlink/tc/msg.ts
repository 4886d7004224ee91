/**
 * The parts every tc message shares: struct tcmsg, 32-bit handles (`maj:min`), the filter
 * protocol in network byte order, and the decoding of the common header of RTM_NEWQDISC /
 * RTM_NEWTCLASS / RTM_NEWTFILTER replies. Used by qdisc.ts, htb.ts and filter.ts.
 */

import { AF_UNSPEC } from "../../sys/constants.ts";
import { HOST_LITTLE_ENDIAN, attrMap, readI32, readString, readU32, type NlWriter } from "../codec.ts";
import { NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST } from "../constants/netlink.ts";
import { TCA_KIND, TCA_OPTIONS, TCMSG_SIZE, TC_H_MAJ_MASK, TC_H_MIN_MASK } from "../constants/pkt-sched.ts";

/** `maj:min` as the kernel's 32-bit handle (TC_H_MAKE). */
export function tcHandle(major: number, minor: number): number {
  return (((major << 16) & TC_H_MAJ_MASK) | (minor & TC_H_MIN_MASK)) >>> 0;
}

/** A handle as tc prints it: `1:`, `ffff:`, `1:1`, `ffff:fff1`. */
export function formatTcHandle(h: number): string {
  const maj = (h >>> 16) & 0xffff;
  const min = h & 0xffff;
  return `${maj.toString(16)}:${min === 0 ? "" : min.toString(16)}`;
}

/** A 16-bit value in network byte order, as stored in a host-order u16 (htons). */
export function htons(v: number): number {
  return HOST_LITTLE_ENDIAN ? ((v & 0xff) << 8) | ((v >>> 8) & 0xff) : v & 0xffff;
}

/** Inverse of {@link htons}. */
export const ntohs = htons;

/** The fields of struct tcmsg. */
export interface TcMsg {
  index: number;
  handle?: number;
  parent?: number;
  /** Filters: TC_H_MAKE(prio << 16, htons(protocol)); qdiscs: 0. */
  info?: number;
}

/** Writes a struct tcmsg (20 bytes, family AF_UNSPEC). */
export function writeTcmsg(w: NlWriter, m: TcMsg): void {
  w.u8(AF_UNSPEC).u8(0).u16(0).i32(m.index).u32(m.handle ?? 0).u32(m.parent ?? 0).u32(m.info ?? 0);
}

/** The common part of a qdisc/class/filter as the kernel reports it. */
export interface TcObject {
  /** ifindex of the device. */
  index: number;
  handle: number;
  parent: number;
  info: number;
  kind: string;
  /** TCA_OPTIONS payload (kind-specific attributes), if any. */
  options?: Uint8Array;
}

/** Decodes tcmsg + TCA_KIND + TCA_OPTIONS of one reply payload. */
export function parseTcObject(payload: Uint8Array): TcObject {
  const attrs = attrMap(payload, TCMSG_SIZE);
  const kind = attrs.get(TCA_KIND);
  const options = attrs.get(TCA_OPTIONS);
  return {
    index: readI32(payload, 4),
    handle: readU32(payload, 8),
    parent: readU32(payload, 12),
    info: readU32(payload, 16),
    kind: kind === undefined ? "" : readString(kind),
    ...(options === undefined ? {} : { options }),
  };
}

/** `add` fails when a qdisc is already attached there (EEXIST); `replace` swaps it. */
export type QdiscOp = "add" | "replace";

/** The nlmsg flags of each {@link QdiscOp} (also used for HTB qdiscs and classes). */
export const OP_FLAGS: Readonly<Record<QdiscOp, number>> = {
  add: NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE,
  replace: NLM_F_REQUEST | NLM_F_ACK | NLM_F_REPLACE | NLM_F_CREATE,
};

/** The struct tc_ratespec fields tc fills alongside a rate table. */
export interface RateSpec {
  cellLog: number;
  linklayer: number;
  overhead: number;
  cellAlign: number;
  mpu: number;
  /** Bytes per second, clamped to u32 (the full value goes into a *_RATE64 attribute). */
  rate: number;
}

/** Writes a struct tc_ratespec (qdiscs and HTB classes). */
export function writeRateSpec(w: NlWriter, s: RateSpec): void {
  w.u8(s.cellLog).u8(s.linklayer).u16(s.overhead).u16(s.cellAlign & 0xffff).u16(s.mpu).u32(s.rate);
}

/** A u64 attribute payload in host order (the *_RATE64 attributes). */
export function u64Bytes(v: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(v), HOST_LITTLE_ENDIAN);
  return b;
}
