/**
 * u32 filters (`tc filter add|del|show`): RTM_NEWTFILTER / RTM_DELTFILTER / RTM_GETTFILTER with
 * selector keys, an optional classid and mirred actions. Builders are pure and byte-checked
 * against `tc` (test/fixtures/netlink/tc-iproute2-requests.json). Callers use the
 * Handle methods.
 */

import { attrMap, buildMessage, parseAttrs, readI32, readU32, readU8 } from "../codec.ts";
import { NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST } from "../constants/netlink.ts";
import { TCA_U32_ACT, TCA_U32_CLASSID, TCA_U32_SEL, TC_U32_KEY_SIZE, TC_U32_SEL_SIZE, TC_U32_TERMINAL } from "../constants/pkt-cls.ts";
import { TCA_CHAIN, TCA_KIND, TCA_OPTIONS, TCMSG_SIZE } from "../constants/pkt-sched.ts";
import { RTM_DELTFILTER, RTM_GETTFILTER, RTM_NEWTFILTER } from "../constants/rtnetlink.ts";
import type { NetlinkSocket } from "../socket.ts";
import { parseActions, writeActions, type MirredAction, type TcAction } from "./action.ts";
import { htons, ntohs, parseTcObject, tcHandle, writeTcmsg } from "./msg.ts";

/** One 32-bit match: (packet word at `off` & mask) == value; mask/value as big-endian u32 numbers. */
export interface U32Key {
  mask: number;
  value: number;
  /** Byte offset from the network header. */
  off: number;
  offmask?: number;
}

/** `tc filter add dev X parent P protocol PROTO prio N u32 match ... [classid C] [action ...]`. */
export interface U32FilterSpec {
  index: number;
  parent: number;
  priority: number;
  /** ETH_P_* in host order (ETH_P_ALL for `protocol all`). */
  protocol: number;
  /** Keys ANDed together; empty or omitted = `match u32 0 0` (every packet). */
  keys?: readonly U32Key[];
  classId?: number;
  actions?: readonly MirredAction[];
}

/** tcm_info of a filter: priority in the upper half, protocol (network order) in the lower. */
export function filterInfo(priority: number, protocol: number): number {
  return tcHandle(priority, htons(protocol));
}

function selector(keys: readonly U32Key[]): Uint8Array {
  const list = keys.length === 0 ? [{ mask: 0, value: 0, off: 0 }] : keys;
  const b = new Uint8Array(TC_U32_SEL_SIZE + TC_U32_KEY_SIZE * list.length);
  const v = new DataView(b.buffer);
  const le = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;
  v.setUint8(0, TC_U32_TERMINAL);
  v.setUint8(2, list.length);
  list.forEach((k, i) => {
    const at = TC_U32_SEL_SIZE + i * TC_U32_KEY_SIZE;
    v.setUint32(at, k.mask >>> 0, false); // network byte order
    v.setUint32(at + 4, (k.value & k.mask) >>> 0, false);
    v.setInt32(at + 8, k.off, le);
    v.setInt32(at + 12, k.offmask ?? 0, le);
  });
  return b;
}

/** `tc filter add ... u32 ...` (NLM_F_EXCL|NLM_F_CREATE; the kernel picks the handle). */
export function buildU32FilterAddRequest(s: U32FilterSpec): Uint8Array {
  return buildMessage(RTM_NEWTFILTER, NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE, (w) => {
    writeTcmsg(w, { index: s.index, parent: s.parent, info: filterInfo(s.priority, s.protocol) });
    w.attrString(TCA_KIND, "u32");
    w.nest(TCA_OPTIONS, () => {
      if (s.classId !== undefined) w.attrU32(TCA_U32_CLASSID, s.classId);
      if (s.actions !== undefined && s.actions.length > 0) {
        const actions = s.actions;
        w.nest(TCA_U32_ACT, () => writeActions(w, actions));
      }
      w.attr(TCA_U32_SEL, selector(s.keys ?? []));
    });
  });
}

/** `tc filter del dev X parent P protocol PROTO prio N` (removes every filter of that priority). */
export function buildFilterDelRequest(index: number, parent: number, priority: number, protocol: number): Uint8Array {
  return buildMessage(RTM_DELTFILTER, NLM_F_REQUEST | NLM_F_ACK, (w) => {
    writeTcmsg(w, { index, parent, info: filterInfo(priority, protocol) });
  });
}

/** `tc filter show dev X parent P`. */
export function buildFilterDumpRequest(index: number, parent: number): Uint8Array {
  return buildMessage(RTM_GETTFILTER, NLM_F_REQUEST | NLM_F_DUMP, (w) => writeTcmsg(w, { index, parent }));
}

/** A filter entry as the kernel lists it (a u32 filter shows as several entries: tp, hash table, key node). */
export interface Filter {
  index: number;
  parent: number;
  handle: number;
  priority: number;
  /** ETH_P_* in host order. */
  protocol: number;
  kind: string;
  chain?: number;
  classId?: number;
  keys?: U32Key[];
  actions: TcAction[];
}

/** Decodes one RTM_NEWTFILTER payload. */
export function parseFilter(payload: Uint8Array): Filter {
  const o = parseTcObject(payload);
  const f: Filter = {
    index: o.index,
    parent: o.parent,
    handle: o.handle,
    priority: o.info >>> 16,
    protocol: ntohs(o.info & 0xffff),
    kind: o.kind,
    actions: [],
  };
  const chain = attrMap(payload, TCMSG_SIZE).get(TCA_CHAIN);
  if (chain !== undefined && chain.byteLength >= 4) f.chain = readU32(chain);
  if (o.kind === "u32" && o.options !== undefined) {
    for (const a of parseAttrs(o.options)) {
      if (a.type === TCA_U32_CLASSID && a.data.byteLength >= 4) f.classId = readU32(a.data);
      else if (a.type === TCA_U32_ACT) f.actions = parseActions(a.data);
      else if (a.type === TCA_U32_SEL && a.data.byteLength >= TC_U32_SEL_SIZE) {
        const n = readU8(a.data, 2);
        const v = new DataView(a.data.buffer, a.data.byteOffset, a.data.byteLength);
        const keys: U32Key[] = [];
        for (let i = 0; i < n && TC_U32_SEL_SIZE + (i + 1) * TC_U32_KEY_SIZE <= a.data.byteLength; i++) {
          const at = TC_U32_SEL_SIZE + i * TC_U32_KEY_SIZE;
          keys.push({ mask: v.getUint32(at, false), value: v.getUint32(at + 4, false), off: readI32(a.data, at + 8), offmask: readI32(a.data, at + 12) });
        }
        f.keys = keys;
      }
    }
  }
  return f;
}

/** Equivalent to `tc filter add dev X parent P protocol PROTO prio N u32 match ... [classid C] [action ...]`. */
export function filterAddU32(sock: NetlinkSocket, s: U32FilterSpec): void {
  sock.request(buildU32FilterAddRequest(s), `u32 filter index=${s.index} prio=${s.priority}`);
}

/** Equivalent to `tc filter del dev X parent P protocol PROTO prio N`. */
export function filterDel(sock: NetlinkSocket, index: number, parent: number, priority: number, protocol: number): void {
  sock.request(buildFilterDelRequest(index, parent, priority, protocol), `filter index=${index} prio=${priority}`);
}

/** Equivalent to `tc filter show dev X parent P`. */
export function filterList(sock: NetlinkSocket, index: number, parent: number): Filter[] {
  const out: Filter[] = [];
  for (const m of sock.request(buildFilterDumpRequest(index, parent), "filter dump")) {
    if (m.type === RTM_NEWTFILTER) out.push(parseFilter(m.payload));
  }
  return out;
}
