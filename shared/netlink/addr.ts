/**
 * Interface addresses (RTM_NEWADDR/RTM_DELADDR/RTM_GETADDR).
 *
 * Adding an IPv4 address sets IFA_BROADCAST by default, computed from the prefix as
 * `ip addr add A/P brd + dev X` does (and as upstream's netlink library does, so the kernel state
 * matches the Go plugins); pass `broadcast: null` to send none, like a bare `ip addr add`.
 */

import { AF_INET, AF_INET6, AF_UNSPEC } from "../sys/constants.ts";
import { attrMap, buildMessage, readString, readU32, readU8, type NlWriter } from "./codec.ts";
import {
  IFA_ADDRESS,
  IFA_BROADCAST,
  IFA_CACHEINFO,
  IFA_FLAGS,
  IFA_LABEL,
  IFA_LOCAL,
} from "./constants/if-addr.ts";
import { NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST } from "./constants/netlink.ts";
import { IFADDRMSG_SIZE, RTM_DELADDR, RTM_GETADDR, RTM_NEWADDR } from "./constants/rtnetlink.ts";
import { bytesToIp, familyOf, ipToBytes, ipv4Broadcast } from "./_addr-bytes.ts";
import type { NetlinkSocket } from "./socket.ts";

/** An address as the kernel reports it. */
export interface Addr {
  index: number;
  family: 4 | 6;
  /** The local address ("10.1.2.3", "fd00::2"). */
  address: string;
  prefixLen: number;
  /** RT_SCOPE_* */
  scope: number;
  /** IFA_F_* (from IFA_FLAGS when present, which carries the bits above 0xff). */
  flags: number;
  label?: string;
  /** Peer address of a point-to-point address (IFA_ADDRESS when it differs from IFA_LOCAL). */
  peer?: string;
  broadcast?: string;
  /** Seconds; 0xffffffff means forever. */
  validLft?: number;
  preferredLft?: number;
}

export interface AddrSpec {
  address: string;
  prefixLen: number;
  family?: 4 | 6;
  /** IFA_F_* (e.g. IFA_F_NODAD); values above 0xff go into IFA_FLAGS. */
  flags?: number;
  /** RT_SCOPE_*; default 0 (global). */
  scope?: number;
  /** IPv4 only: undefined = computed (`brd +`), a string = that address, null = none. */
  broadcast?: string | null;
  /** IPv4 label (IFA_LABEL), e.g. "eth0:1". */
  label?: string;
  /** Point-to-point peer (IFA_ADDRESS); defaults to the address itself. */
  peer?: string;
}

export interface AddrFilter {
  index?: number;
  family?: 4 | 6;
}

function afOf(family: 4 | 6): number {
  return family === 4 ? AF_INET : AF_INET6;
}

/** Writes a struct ifaddrmsg (8 bytes). */
function writeIfaddrmsg(w: NlWriter, family: number, prefixLen: number, flags: number, scope: number, index: number): void {
  w.u8(family).u8(prefixLen).u8(flags).u8(scope).u32(index);
}

function checkPrefix(family: 4 | 6, prefixLen: number): void {
  const max = family === 4 ? 32 : 128;
  if (!Number.isInteger(prefixLen) || prefixLen < 0 || prefixLen > max) {
    throw new RangeError(`invalid prefix length ${prefixLen} for IPv${family}`);
  }
}

/** RTM_NEWADDR (`ip addr add A/P [brd +] dev X`); `replace` uses NLM_F_REPLACE instead of EXCL. */
export function buildAddrAddRequest(index: number, spec: AddrSpec, replace = false): Uint8Array {
  const family = spec.family ?? familyOf(spec.address);
  checkPrefix(family, spec.prefixLen);
  const local = ipToBytes(spec.address, family);
  const peer = spec.peer === undefined ? local : ipToBytes(spec.peer, family);
  const flags = spec.flags ?? 0;
  let brd: Uint8Array | undefined;
  if (family === 4 && spec.broadcast !== null) {
    if (spec.broadcast !== undefined) brd = ipToBytes(spec.broadcast, 4);
    else if (spec.prefixLen < 31) brd = ipv4Broadcast(local, spec.prefixLen);
  }
  const nlFlags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL);
  return buildMessage(RTM_NEWADDR, nlFlags, (w) => {
    writeIfaddrmsg(w, afOf(family), spec.prefixLen, flags <= 0xff ? flags : 0, spec.scope ?? 0, index);
    w.attr(IFA_LOCAL, local);
    w.attr(IFA_ADDRESS, peer);
    if (brd !== undefined) w.attr(IFA_BROADCAST, brd);
    if (spec.label !== undefined && family === 4) w.attrString(IFA_LABEL, spec.label);
    if (flags > 0xff) w.attrU32(IFA_FLAGS, flags);
  });
}

/** RTM_DELADDR (`ip addr del A/P dev X`). */
export function buildAddrDelRequest(index: number, spec: { address: string; prefixLen: number; family?: 4 | 6 }): Uint8Array {
  const family = spec.family ?? familyOf(spec.address);
  checkPrefix(family, spec.prefixLen);
  const local = ipToBytes(spec.address, family);
  return buildMessage(RTM_DELADDR, NLM_F_REQUEST | NLM_F_ACK, (w) => {
    writeIfaddrmsg(w, afOf(family), spec.prefixLen, 0, 0, index);
    w.attr(IFA_LOCAL, local);
    w.attr(IFA_ADDRESS, local);
  });
}

/** RTM_GETADDR dump (`ip addr show`), optionally of one family. */
export function buildAddrDumpRequest(family?: 4 | 6): Uint8Array {
  return buildMessage(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, (w) => {
    writeIfaddrmsg(w, family === undefined ? AF_UNSPEC : afOf(family), 0, 0, 0, 0);
  });
}

/** Decodes one RTM_NEWADDR payload; undefined for families other than IPv4/IPv6. */
export function parseAddr(payload: Uint8Array): Addr | undefined {
  const af = readU8(payload, 0);
  if (af !== AF_INET && af !== AF_INET6) return undefined;
  const a = attrMap(payload, IFADDRMSG_SIZE);
  const local = a.get(IFA_LOCAL);
  const address = a.get(IFA_ADDRESS);
  const main = local ?? address;
  if (main === undefined) return undefined;
  const flagsAttr = a.get(IFA_FLAGS);
  const out: Addr = {
    index: readU32(payload, 4),
    family: af === AF_INET ? 4 : 6,
    address: bytesToIp(main),
    prefixLen: readU8(payload, 1),
    scope: readU8(payload, 3),
    flags: flagsAttr === undefined ? readU8(payload, 2) : readU32(flagsAttr),
  };
  if (local !== undefined && address !== undefined) {
    const peer = bytesToIp(address);
    if (peer !== out.address) out.peer = peer;
  }
  const label = a.get(IFA_LABEL);
  if (label !== undefined) out.label = readString(label);
  const brd = a.get(IFA_BROADCAST);
  if (brd !== undefined) out.broadcast = bytesToIp(brd);
  const ci = a.get(IFA_CACHEINFO);
  if (ci !== undefined && ci.byteLength >= 8) {
    out.preferredLft = readU32(ci, 0);
    out.validLft = readU32(ci, 4);
  }
  return out;
}

/** Equivalent to `ip addr show [dev X]`, filtered by index/family. */
export function addrList(sock: NetlinkSocket, filter: AddrFilter = {}): Addr[] {
  const out: Addr[] = [];
  for (const m of sock.request(buildAddrDumpRequest(filter.family), "dump")) {
    if (m.type !== RTM_NEWADDR) continue;
    const addr = parseAddr(m.payload);
    if (addr === undefined) continue;
    if (filter.index !== undefined && addr.index !== filter.index) continue;
    if (filter.family !== undefined && addr.family !== filter.family) continue;
    out.push(addr);
  }
  return out;
}

/** Equivalent to `ip addr add A/P brd + dev X` (EEXIST when present). */
export function addrAdd(sock: NetlinkSocket, index: number, spec: AddrSpec): void {
  sock.request(buildAddrAddRequest(index, spec), `${spec.address}/${spec.prefixLen} index=${index}`);
}

/** Equivalent to `ip addr replace A/P brd + dev X`. */
export function addrReplace(sock: NetlinkSocket, index: number, spec: AddrSpec): void {
  sock.request(buildAddrAddRequest(index, spec, true), `${spec.address}/${spec.prefixLen} index=${index}`);
}

/** Equivalent to `ip addr del A/P dev X` (EADDRNOTAVAIL when absent). */
export function addrDel(sock: NetlinkSocket, index: number, spec: { address: string; prefixLen: number; family?: 4 | 6 }): void {
  sock.request(buildAddrDelRequest(index, spec), `${spec.address}/${spec.prefixLen} index=${index}`);
}
