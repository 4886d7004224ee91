/**
 * DHCPv4 messages (RFC 2131 §2 fixed header + RFC 2132 options): encode and decode, no I/O.
 *
 * Options are kept as raw bytes keyed by code, in insertion order. Repeated occurrences of one
 * option in a received message are concatenated (RFC 3396 long options); option overload (52) is
 * not interpreted (sname/file are ignored).
 */

/** BOOTP op codes. */
export const BOOTREQUEST = 1;
export const BOOTREPLY = 2;

/** DHCP message types (option 53). */
export const DHCPDISCOVER = 1;
export const DHCPOFFER = 2;
export const DHCPREQUEST = 3;
export const DHCPDECLINE = 4;
export const DHCPACK = 5;
export const DHCPNAK = 6;
export const DHCPRELEASE = 7;

/** Option codes used by the client (RFC 2132, RFC 3442). */
export const OPT_PAD = 0;
export const OPT_SUBNET_MASK = 1;
export const OPT_ROUTER = 3;
export const OPT_DNS_SERVERS = 6;
export const OPT_HOST_NAME = 12;
export const OPT_DOMAIN_NAME = 15;
export const OPT_INTERFACE_MTU = 26;
export const OPT_STATIC_ROUTE = 33;
export const OPT_REQUESTED_IP = 50;
export const OPT_LEASE_TIME = 51;
export const OPT_MESSAGE_TYPE = 53;
export const OPT_SERVER_ID = 54;
export const OPT_PARAMETER_REQUEST_LIST = 55;
export const OPT_MESSAGE = 56;
export const OPT_MAX_MESSAGE_SIZE = 57;
export const OPT_RENEWAL_TIME = 58;
export const OPT_REBINDING_TIME = 59;
export const OPT_VENDOR_CLASS_ID = 60;
export const OPT_CLIENT_ID = 61;
export const OPT_USER_CLASS = 77;
export const OPT_DOMAIN_SEARCH = 119;
export const OPT_CLASSLESS_ROUTE = 121;
export const OPT_END = 255;

/** The BOOTP broadcast flag (RFC 2131 §2, "flags"). */
export const FLAG_BROADCAST = 0x8000;

/** The UDP ports: clients send to the DHCP server port, servers to the DHCP client port (RFC 2131 §4.1). */
export const DHCP_SERVER_PORT = 67;
export const DHCP_CLIENT_PORT = 68;
/** The limited broadcast address, where a client without an address sends (RFC 2131 §4.1). */
export const BROADCAST_IP = "255.255.255.255";

const MAGIC_COOKIE = [99, 130, 83, 99] as const;
const HEADER_LEN = 236;
/** Smallest BOOTP message (RFC 951 / RFC 2131 §2: 300 bytes incl. options), padded with zeros. */
const MIN_MESSAGE_LEN = 300;

export interface DhcpMessage {
  op: number;
  xid: number;
  secs: number;
  flags: number;
  ciaddr: string;
  yiaddr: string;
  siaddr: string;
  giaddr: string;
  /** Client hardware address (Ethernet: 6 bytes). */
  chaddr: Uint8Array;
  /** Options by code, insertion order kept. */
  options: Map<number, Uint8Array>;
}

export class DhcpDecodeError extends Error {
  override name = "DhcpDecodeError";
}

/** Dotted-quad text of 4 bytes at `off`. */
export function ipv4At(b: Uint8Array, off: number): string {
  return `${b[off] ?? 0}.${b[off + 1] ?? 0}.${b[off + 2] ?? 0}.${b[off + 3] ?? 0}`;
}

/** The 4 bytes of a dotted quad (throws on anything else). */
export function ipv4Bytes(text: string): Uint8Array {
  const parts = text.split(".");
  const out = new Uint8Array(4);
  if (parts.length !== 4) throw new RangeError(`not an IPv4 address: ${JSON.stringify(text)}`);
  parts.forEach((p, i) => {
    const n = Number(p);
    if (!/^\d{1,3}$/.test(p) || n > 255) throw new RangeError(`not an IPv4 address: ${JSON.stringify(text)}`);
    out[i] = n;
  });
  return out;
}

/** Serialises a message; options longer than 255 bytes are split (RFC 3396). */
export function encodeMessage(m: DhcpMessage): Uint8Array {
  let optLen = 4 + 1; // cookie + END
  for (const v of m.options.values()) optLen += Math.ceil(Math.max(v.byteLength, 1) / 255) * 2 + v.byteLength;
  const out = new Uint8Array(Math.max(MIN_MESSAGE_LEN, HEADER_LEN + optLen));
  const dv = new DataView(out.buffer);
  out[0] = m.op;
  out[1] = 1; // htype: Ethernet
  out[2] = m.chaddr.byteLength;
  out[3] = 0; // hops
  dv.setUint32(4, m.xid >>> 0);
  dv.setUint16(8, m.secs);
  dv.setUint16(10, m.flags);
  out.set(ipv4Bytes(m.ciaddr), 12);
  out.set(ipv4Bytes(m.yiaddr), 16);
  out.set(ipv4Bytes(m.siaddr), 20);
  out.set(ipv4Bytes(m.giaddr), 24);
  out.set(m.chaddr.subarray(0, 16), 28);
  let p = HEADER_LEN;
  out.set(MAGIC_COOKIE, p);
  p += 4;
  for (const [code, value] of m.options) {
    let off = 0;
    do {
      const chunk = value.subarray(off, off + 255);
      out[p++] = code;
      out[p++] = chunk.byteLength;
      out.set(chunk, p);
      p += chunk.byteLength;
      off += 255;
    } while (off < value.byteLength);
  }
  out[p] = OPT_END;
  return out;
}

/** Parses a received BOOTP/DHCP message; throws {@link DhcpDecodeError} when malformed. */
export function decodeMessage(b: Uint8Array): DhcpMessage {
  if (b.byteLength < HEADER_LEN + 4) throw new DhcpDecodeError(`message too short (${b.byteLength} bytes)`);
  for (let i = 0; i < 4; i++) {
    if (b[HEADER_LEN + i] !== MAGIC_COOKIE[i]) throw new DhcpDecodeError("no DHCP magic cookie");
  }
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const hlen = Math.min(b[2] ?? 0, 16);
  const options = new Map<number, Uint8Array>();
  let p = HEADER_LEN + 4;
  while (p < b.byteLength) {
    const code = b[p++] ?? OPT_END;
    if (code === OPT_END) break;
    if (code === OPT_PAD) continue;
    const len = b[p++];
    if (len === undefined || p + len > b.byteLength) throw new DhcpDecodeError(`option ${code} overruns the message`);
    const value = b.slice(p, p + len);
    p += len;
    const prev = options.get(code);
    if (prev === undefined) options.set(code, value);
    else {
      const joined = new Uint8Array(prev.byteLength + value.byteLength);
      joined.set(prev);
      joined.set(value, prev.byteLength);
      options.set(code, joined);
    }
  }
  return {
    op: b[0] ?? 0,
    xid: dv.getUint32(4),
    secs: dv.getUint16(8),
    flags: dv.getUint16(10),
    ciaddr: ipv4At(b, 12),
    yiaddr: ipv4At(b, 16),
    siaddr: ipv4At(b, 20),
    giaddr: ipv4At(b, 24),
    chaddr: b.slice(28, 28 + hlen),
    options,
  };
}

/** Option 53 of a message, or 0 when missing. */
export function messageType(m: DhcpMessage): number {
  return m.options.get(OPT_MESSAGE_TYPE)?.[0] ?? 0;
}

/** An option's value as a 32-bit unsigned integer (seconds for 51/58/59), or undefined. */
export function optionUint32(m: DhcpMessage, code: number): number | undefined {
  const v = m.options.get(code);
  if (v === undefined || v.byteLength !== 4) return undefined;
  return new DataView(v.buffer, v.byteOffset, 4).getUint32(0);
}

/** An option holding one or more IPv4 addresses, as dotted quads (empty when missing). */
export function optionIPs(m: DhcpMessage, code: number): string[] {
  const v = m.options.get(code);
  const out: string[] = [];
  if (v === undefined) return out;
  for (let i = 0; i + 4 <= v.byteLength; i += 4) out.push(ipv4At(v, i));
  return out;
}

/** A 32-bit big-endian option value. */
export function uint32Bytes(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, n >>> 0);
  return out;
}

/** The name of a message type for logs (`DHCPACK`). */
export function messageTypeName(t: number): string {
  const names = ["", "DHCPDISCOVER", "DHCPOFFER", "DHCPREQUEST", "DHCPDECLINE", "DHCPACK", "DHCPNAK", "DHCPRELEASE", "DHCPINFORM"];
  return names[t] ?? `type ${t}`;
}
