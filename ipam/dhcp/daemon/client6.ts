/**
 * DHCPv6 client exchanges for one IA_NA (RFC 8415 §18): SOLICIT/ADVERTISE then REQUEST/REPLY to
 * acquire, RENEW (to the server that granted the lease) and REBIND (to any server), RELEASE. Every
 * message goes to All_DHCP_Relay_Agents_and_Servers (ff02::1:2) from the link-local address; the
 * server answers the link-local address. Re-sends and back-off are those of DHCPv4 (client.ts),
 * so `-timeout`, `-resendmax` and `-resendtimeout` mean the same for both families.
 *
 * Identity: the DUID is a DUID-UUID (RFC 6355) derived from the lease key
 * `<containerID>/<network>/<ifname>` — the same identity DHCPv4 uses as its client id. It is stable
 * for the life of the container interface, survives a MAC change (tuning `mac`, a re-created
 * macvlan) and a daemon restart, and two containers never share it (a DUID-LL from the MAC could,
 * when a runtime reuses MACs across namespaces). The IAID is derived from the interface name.
 */
import { createHash } from "node:crypto";
import {
  ADVERTISE,
  ALL_DHCP_SERVERS,
  DUID_UUID,
  OPTION_CLIENTID,
  OPTION_DNS_SERVERS,
  OPTION_DOMAIN_LIST,
  OPTION_SERVERID,
  REBIND,
  RELEASE,
  RENEW,
  REPLY,
  REQUEST,
  SOLICIT,
  STATUS_SUCCESS,
  decodeMessage6,
  elapsedOption,
  encodeMessage6,
  findIaNa,
  iaNaOption,
  messageStatus,
  option6,
  oroOption,
  statusText,
  type Dhcp6Message,
  type Dhcp6Option,
} from "../packet6.ts";
import { DhcpNakError, exchangeBytes } from "./client.ts";
import type { DhcpSocket } from "./dhcp-socket.ts";

export interface Client6Params {
  duid: Uint8Array;
  iaid: number;
  timeoutMs: number;
}

/** Options asked for in every message: DNS servers and domain list (RFC 3646). */
const ORO = [OPTION_DNS_SERVERS, OPTION_DOMAIN_LIST];

/** DUID-UUID for a lease key: a name-based (version 5 style) UUID of the key. */
export function duidFor(key: string): Uint8Array {
  const h = createHash("sha1").update("cni dhcp DUID-UUID\0").update(key).digest();
  const uuid = Uint8Array.from(h.subarray(0, 16));
  uuid[6] = ((uuid[6] ?? 0) & 0x0f) | 0x50; // version 5
  uuid[8] = ((uuid[8] ?? 0) & 0x3f) | 0x80; // RFC 4122 variant
  return Uint8Array.from([DUID_UUID >> 8, DUID_UUID & 0xff, ...uuid]);
}

/** IAID for an interface name (its first 4 SHA-256 bytes). */
export function iaidFor(ifName: string): number {
  return createHash("sha256").update(ifName).digest().readUInt32BE(0);
}

function randomXid6(): number {
  return (crypto.getRandomValues(new Uint32Array(1))[0] ?? 1) & 0xffffff;
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  return a !== undefined && a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);
}

/** The leased address of a REPLY (or ADVERTISE) for our IA_NA, or undefined. */
export function leasedAddress(m: Dhcp6Message, iaid: number): { address: string; preferred: number; valid: number } | undefined {
  const ia = findIaNa(m, iaid);
  if (ia === undefined || (ia.status ?? STATUS_SUCCESS) !== STATUS_SUCCESS) return undefined;
  return ia.addresses.find((a) => (a.status ?? STATUS_SUCCESS) === STATUS_SUCCESS && a.valid > 0);
}

/** Why a message grants no address (for errors), or undefined when it does. */
function refusal(m: Dhcp6Message, iaid: number): string | undefined {
  const st = messageStatus(m);
  if (st !== undefined && st.code !== STATUS_SUCCESS) return statusText(st);
  const ia = findIaNa(m, iaid);
  if (ia === undefined) return "no IA_NA for our IAID";
  if (ia.statusText !== undefined && (ia.status ?? STATUS_SUCCESS) !== STATUS_SUCCESS) return ia.statusText;
  return leasedAddress(m, iaid) === undefined ? "no usable address in the IA_NA" : undefined;
}

function build(p: Client6Params, type: number, xid: number, started: number, extra: Dhcp6Option[], address?: string): Dhcp6Message {
  return {
    type,
    xid,
    options: [{ code: OPTION_CLIENTID, value: p.duid }, ...extra, iaNaOption(p.iaid, address), oroOption(ORO), elapsedOption(Date.now() - started)],
  };
}

/** Sends `msg`, returns the first message of type `want` with our xid and DUID. */
function exchange6(sock: DhcpSocket, p: Client6Params, msg: Dhcp6Message, want: number, cancelled: () => boolean): Promise<Dhcp6Message> {
  const ours = (m: Dhcp6Message): boolean =>
    m.type === want && m.xid === msg.xid && sameBytes(option6(m, OPTION_CLIENTID), p.duid) && option6(m, OPTION_SERVERID) !== undefined;
  return exchangeBytes(sock, p.timeoutMs, encodeMessage6(msg), ALL_DHCP_SERVERS, decodeMessage6, ours, cancelled);
}

/** A REPLY that must grant our IA_NA an address; a refusal is a {@link DhcpNakError}. */
function granted(reply: Dhcp6Message, p: Client6Params, what: string): Dhcp6Message {
  const why = refusal(reply, p.iaid);
  if (why !== undefined) throw new DhcpNakError(`server refused the ${what}: ${why}`);
  return reply;
}

/** SOLICIT → ADVERTISE (the first one; an advertisement without an address fails the attempt) → REQUEST → REPLY; `hint` asks for an address. */
export async function solicitOnce(sock: DhcpSocket, p: Client6Params, cancelled: () => boolean, hint?: string): Promise<Dhcp6Message> {
  const started = Date.now();
  const xid = randomXid6();
  const solicit = build(p, SOLICIT, xid, started, [], hint);
  const advertise = await exchange6(sock, p, solicit, ADVERTISE, cancelled);
  if (refusal(advertise, p.iaid) !== undefined) throw new DhcpNakError(`server advertised no address: ${refusal(advertise, p.iaid)}`);
  const serverId = option6(advertise, OPTION_SERVERID) ?? new Uint8Array(0);
  const offered = leasedAddress(advertise, p.iaid)?.address;
  const request = build(p, REQUEST, randomXid6(), started, [{ code: OPTION_SERVERID, value: serverId }], offered);
  return granted(await exchange6(sock, p, request, REPLY, cancelled), p, "REQUEST");
}

/** RENEW for the lease of `reply` to the server that granted it. */
export async function renew6Once(sock: DhcpSocket, p: Client6Params, reply: Dhcp6Message, cancelled: () => boolean): Promise<Dhcp6Message> {
  const serverId = option6(reply, OPTION_SERVERID) ?? new Uint8Array(0);
  const msg = build(p, RENEW, randomXid6(), Date.now(), [{ code: OPTION_SERVERID, value: serverId }], leasedAddress(reply, p.iaid)?.address);
  return granted(await exchange6(sock, p, msg, REPLY, cancelled), p, "RENEW");
}

/** REBIND for the lease of `reply`, to any server. */
export async function rebind6Once(sock: DhcpSocket, p: Client6Params, reply: Dhcp6Message, cancelled: () => boolean): Promise<Dhcp6Message> {
  const msg = build(p, REBIND, randomXid6(), Date.now(), [], leasedAddress(reply, p.iaid)?.address);
  return granted(await exchange6(sock, p, msg, REPLY, cancelled), p, "REBIND");
}

/** Sends RELEASE for the lease of `reply` (RFC 8415 §18.2.7); the REPLY is not awaited. */
export function sendRelease6(sock: DhcpSocket, p: Client6Params, reply: Dhcp6Message): void {
  const serverId = option6(reply, OPTION_SERVERID) ?? new Uint8Array(0);
  const msg: Dhcp6Message = {
    type: RELEASE,
    xid: randomXid6(),
    options: [
      { code: OPTION_CLIENTID, value: p.duid },
      { code: OPTION_SERVERID, value: serverId },
      iaNaOption(p.iaid, leasedAddress(reply, p.iaid)?.address),
      elapsedOption(0),
    ],
  };
  sock.send(encodeMessage6(msg), ALL_DHCP_SERVERS);
}
