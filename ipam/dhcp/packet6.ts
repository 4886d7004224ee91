/**
 * DHCPv6 messages (RFC 8415 §8, §21): `msg-type` (1 byte), `transaction-id` (3 bytes), then options
 * as (code: u16, length: u16, value). Encode and decode, no I/O. Only what a stateful IA_NA client
 * uses: Client/Server Identifier, IA_NA with IA Address, Option Request, Elapsed Time, Status Code,
 * Preference, and the DNS options of RFC 3646.
 */
import { formatIP, ipFromBytes, ipToBytes, parseIP } from "../../shared/ip/addr.ts";
import { decodeDomainList } from "./domain-list.ts";

/** Message types. */
export const SOLICIT = 1;
export const ADVERTISE = 2;
export const REQUEST = 3;
export const RENEW = 5;
export const REBIND = 6;
export const REPLY = 7;
export const RELEASE = 8;

/** Option codes. */
export const OPTION_CLIENTID = 1;
export const OPTION_SERVERID = 2;
export const OPTION_IA_NA = 3;
export const OPTION_IAADDR = 5;
export const OPTION_ORO = 6;
export const OPTION_PREFERENCE = 7;
export const OPTION_ELAPSED_TIME = 8;
export const OPTION_STATUS_CODE = 13;
export const OPTION_DNS_SERVERS = 23;
export const OPTION_DOMAIN_LIST = 24;

/** Status codes (RFC 8415 §21.13). */
export const STATUS_SUCCESS = 0;
const STATUS_NAMES = ["Success", "UnspecFail", "NoAddrsAvail", "NoBinding", "NotOnLink", "UseMulticast", "NoPrefixAvail"];

/** All_DHCP_Relay_Agents_and_Servers (RFC 8415 §7.1). */
export const ALL_DHCP_SERVERS = "ff02::1:2";
/** The UDP ports clients listen on and servers listen on (RFC 8415 §7.2). */
export const DHCP6_CLIENT_PORT = 546;
export const DHCP6_SERVER_PORT = 547;
/** DUID-UUID (RFC 6355). */
export const DUID_UUID = 4;
/** An infinite lifetime. */
export const INFINITY = 0xffffffff;

export interface Dhcp6Option {
  code: number;
  value: Uint8Array;
}

export interface Dhcp6Message {
  type: number;
  /** 24-bit transaction id. */
  xid: number;
  options: Dhcp6Option[];
}

/** One IA_NA (RFC 8415 §21.4) with its addresses (§21.6). */
export interface IaNa {
  iaid: number;
  t1: number;
  t2: number;
  addresses: { address: string; preferred: number; valid: number; status?: number }[];
  status?: number;
}

export class Dhcp6DecodeError extends Error {
  override name = "Dhcp6DecodeError";
}

function u32(n: number): number[] {
  return [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
}

function readU32(b: Uint8Array, p: number): number {
  return new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(p);
}

function encodeOptions(options: readonly Dhcp6Option[]): number[] {
  const out: number[] = [];
  for (const o of options) out.push(o.code >> 8, o.code & 0xff, o.value.byteLength >> 8, o.value.byteLength & 0xff, ...o.value);
  return out;
}

/** Options in `b` (a message body, or the options part of IA_NA / IAADDR). */
export function decodeOptions(b: Uint8Array): Dhcp6Option[] {
  const out: Dhcp6Option[] = [];
  let p = 0;
  while (p < b.byteLength) {
    if (p + 4 > b.byteLength) throw new Dhcp6DecodeError("truncated option header");
    const code = ((b[p] ?? 0) << 8) | (b[p + 1] ?? 0);
    const len = ((b[p + 2] ?? 0) << 8) | (b[p + 3] ?? 0);
    if (p + 4 + len > b.byteLength) throw new Dhcp6DecodeError(`option ${code} overruns the message`);
    out.push({ code, value: b.slice(p + 4, p + 4 + len) });
    p += 4 + len;
  }
  return out;
}

export function encodeMessage6(m: Dhcp6Message): Uint8Array {
  return Uint8Array.from([m.type, (m.xid >> 16) & 0xff, (m.xid >> 8) & 0xff, m.xid & 0xff, ...encodeOptions(m.options)]);
}

export function decodeMessage6(b: Uint8Array): Dhcp6Message {
  if (b.byteLength < 4) throw new Dhcp6DecodeError(`message too short (${b.byteLength} bytes)`);
  return { type: b[0] ?? 0, xid: ((b[1] ?? 0) << 16) | ((b[2] ?? 0) << 8) | (b[3] ?? 0), options: decodeOptions(b.subarray(4)) };
}

/** The first option `code` of a message, or undefined. */
export function option6(m: Dhcp6Message, code: number): Uint8Array | undefined {
  return m.options.find((o) => o.code === code)?.value;
}

/** IA_NA option value: IAID, T1, T2, and one IA Address (lifetimes 0: the server chooses). */
export function iaNaOption(iaid: number, address?: string): Dhcp6Option {
  const inner: Dhcp6Option[] = [];
  if (address !== undefined) {
    const ip = parseIP(address);
    if (ip === null || ip.family !== 6) throw new RangeError(`not an IPv6 address: ${JSON.stringify(address)}`);
    inner.push({ code: OPTION_IAADDR, value: Uint8Array.from([...ipToBytes(ip), ...u32(0), ...u32(0)]) });
  }
  return { code: OPTION_IA_NA, value: Uint8Array.from([...u32(iaid), ...u32(0), ...u32(0), ...encodeOptions(inner)]) };
}

/** Status Code option: code, or undefined when absent (which means Success). */
function statusOf(options: readonly Dhcp6Option[]): { code: number; message: string } | undefined {
  const v = options.find((o) => o.code === OPTION_STATUS_CODE)?.value;
  if (v === undefined || v.byteLength < 2) return undefined;
  return { code: ((v[0] ?? 0) << 8) | (v[1] ?? 0), message: new TextDecoder().decode(v.subarray(2)) };
}

/** "NoAddrsAvail (2): message" for logs and errors. */
export function statusText(s: { code: number; message: string }): string {
  return `${STATUS_NAMES[s.code] ?? "status"} (${s.code})${s.message ? `: ${s.message}` : ""}`;
}

/** The message-level status (undefined = Success). */
export function messageStatus(m: Dhcp6Message): { code: number; message: string } | undefined {
  return statusOf(m.options);
}

/** The IA_NA with `iaid` in a message, parsed; undefined when absent. */
export function findIaNa(m: Dhcp6Message, iaid: number): (IaNa & { statusText?: string }) | undefined {
  for (const o of m.options) {
    if (o.code !== OPTION_IA_NA || o.value.byteLength < 12) continue;
    if (readU32(o.value, 0) !== iaid) continue;
    const inner = decodeOptions(o.value.subarray(12));
    const ia: IaNa & { statusText?: string } = { iaid, t1: readU32(o.value, 4), t2: readU32(o.value, 8), addresses: [] };
    const st = statusOf(inner);
    if (st !== undefined) {
      ia.status = st.code;
      ia.statusText = statusText(st);
    }
    for (const a of inner) {
      if (a.code !== OPTION_IAADDR || a.value.byteLength < 24) continue;
      const ip = ipFromBytes(a.value.subarray(0, 16));
      if (ip === null) continue;
      const addrStatus = statusOf(decodeOptions(a.value.subarray(24)));
      const entry: IaNa["addresses"][number] = { address: formatIP(ip), preferred: readU32(a.value, 16), valid: readU32(a.value, 20) };
      if (addrStatus !== undefined) entry.status = addrStatus.code;
      ia.addresses.push(entry);
    }
    return ia;
  }
  return undefined;
}

/** DNS servers (option 23) and domain list (option 24) of a message. */
export function dns6(m: Dhcp6Message): { nameservers: string[]; search: string[] } {
  const nameservers: string[] = [];
  const v = option6(m, OPTION_DNS_SERVERS);
  for (let p = 0; v !== undefined && p + 16 <= v.byteLength; p += 16) {
    const ip = ipFromBytes(v.subarray(p, p + 16));
    if (ip !== null) nameservers.push(formatIP(ip));
  }
  let search: string[] = [];
  const list = option6(m, OPTION_DOMAIN_LIST);
  if (list !== undefined) {
    try {
      search = decodeDomainList(list);
    } catch {
      search = [];
    }
  }
  return { nameservers, search };
}

/** Option Request Option listing `codes`. */
export function oroOption(codes: readonly number[]): Dhcp6Option {
  return { code: OPTION_ORO, value: Uint8Array.from(codes.flatMap((c) => [c >> 8, c & 0xff])) };
}

/** Elapsed Time in hundredths of a second, capped at 0xffff (RFC 8415 §21.9). */
export function elapsedOption(ms: number): Dhcp6Option {
  const v = Math.min(0xffff, Math.floor(ms / 10));
  return { code: OPTION_ELAPSED_TIME, value: Uint8Array.of(v >> 8, v & 0xff) };
}
