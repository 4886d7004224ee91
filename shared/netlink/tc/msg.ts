/**
 * The parts every tc message shares: struct tcmsg, 32-bit handles (`maj:min`), the filter
 * protocol in network byte order, and the decoding of the common header of RTM_NEWQDISC /
 * RTM_NEWTCLASS / RTM_NEWTFILTER replies. Used by qdisc.ts, htb.ts and filter.ts.
 */

import { AF_UNSPEC } from "../../sys/constants.ts";
import { HOST_LITTLE_ENDIAN, attrMap, readI32, readString, readU32, type NlWriter } from "../codec.ts";
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
