/**
 * Pure netlink wire codec: message header, TLV attributes (nesting, 4-byte alignment) and scalar
 * readers, in host byte order over Uint8Array/DataView. No I/O; used by socket.ts and the
 * per-object request builders, and tested against iproute2's bytes.
 *
 * Layout notes (as iproute2 does it): an attribute's `nla_len` excludes its trailing padding, a
 * nest's `nla_len` covers its padded children, and `nlmsg_len` covers the padded message.
 */

import { NLA_F_NESTED, NLA_HDRLEN, NLA_TYPE_MASK, NLMSG_HDRLEN } from "./constants/netlink.ts";

/** True on little-endian hosts; netlink uses host byte order. */
export const HOST_LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/** Rounds `n` up to the netlink alignment (4). */
export function align4(n: number): number {
  return (n + 3) & ~3;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A growable byte builder for netlink messages and attribute streams. */
export class NlWriter {
  #buf: Uint8Array;
  #view: DataView;
  #len = 0;

  constructor(initialSize = 256) {
    this.#buf = new Uint8Array(initialSize);
    this.#view = new DataView(this.#buf.buffer);
  }

  /** Bytes written so far (including padding). */
  get length(): number {
    return this.#len;
  }

  #reserve(n: number): number {
    const at = this.#len;
    const need = at + n;
    if (need > this.#buf.byteLength) {
      let size = this.#buf.byteLength * 2;
      while (size < need) size *= 2;
      const next = new Uint8Array(size);
      next.set(this.#buf.subarray(0, at));
      this.#buf = next;
      this.#view = new DataView(next.buffer);
    }
    this.#len = need;
    return at;
  }

  /** Pads with zero bytes to the next 4-byte boundary. */
  align(): this {
    const pad = align4(this.#len) - this.#len;
    if (pad > 0) this.#reserve(pad);
    return this;
  }

  // Each write reserves first: #reserve may replace #buf/#view when it grows the buffer.
  u8(v: number): this {
    const at = this.#reserve(1);
    this.#view.setUint8(at, v);
    return this;
  }
  u16(v: number): this {
    const at = this.#reserve(2);
    this.#view.setUint16(at, v, HOST_LITTLE_ENDIAN);
    return this;
  }
  u32(v: number): this {
    const at = this.#reserve(4);
    this.#view.setUint32(at, v >>> 0, HOST_LITTLE_ENDIAN);
    return this;
  }
  i32(v: number): this {
    const at = this.#reserve(4);
    this.#view.setInt32(at, v, HOST_LITTLE_ENDIAN);
    return this;
  }
  bytes(b: Uint8Array): this {
    const at = this.#reserve(b.byteLength);
    this.#buf.set(b, at);
    return this;
  }

  /** Overwrites a u16 at `offset` (for back-patching lengths). */
  patchU16(offset: number, v: number): void {
    this.#view.setUint16(offset, v, HOST_LITTLE_ENDIAN);
  }
  /** Overwrites a u32 at `offset`. */
  patchU32(offset: number, v: number): void {
    this.#view.setUint32(offset, v >>> 0, HOST_LITTLE_ENDIAN);
  }

  /** One attribute with a raw payload, then padding. */
  attr(type: number, payload: Uint8Array): this {
    this.align();
    this.u16(NLA_HDRLEN + payload.byteLength).u16(type).bytes(payload);
    return this.align();
  }
  attrU8(type: number, v: number): this {
    this.align();
    return this.u16(NLA_HDRLEN + 1).u16(type).u8(v).align();
  }
  attrU16(type: number, v: number): this {
    this.align();
    return this.u16(NLA_HDRLEN + 2).u16(type).u16(v).align();
  }
  attrU32(type: number, v: number): this {
    this.align();
    return this.u16(NLA_HDRLEN + 4).u16(type).u32(v);
  }
  attrI32(type: number, v: number): this {
    this.align();
    return this.u16(NLA_HDRLEN + 4).u16(type).i32(v);
  }
  /** A NUL-terminated string attribute (IFLA_IFNAME and most strings). */
  attrString(type: number, s: string): this {
    return this.attr(type, encoder.encode(`${s}\0`));
  }
  /** A string attribute without terminator (iproute2 sends IFLA_INFO_KIND and IFLA_IFALIAS so). */
  attrText(type: number, s: string): this {
    return this.attr(type, encoder.encode(s));
  }

  /** Starts a nested attribute; pass the token to {@link endNest}. */
  beginNest(type: number, flags = 0): number {
    this.align();
    const at = this.#len;
    this.u16(0).u16(type | flags);
    return at;
  }
  /** Closes a nest: its length covers all (padded) children. */
  endNest(token: number): this {
    this.align();
    this.patchU16(token, this.#len - token);
    return this;
  }
  /** Writes a nested attribute whose children `fill` writes. */
  nest(type: number, fill: (w: this) => void, flags = 0): this {
    const t = this.beginNest(type, flags);
    fill(this);
    return this.endNest(t);
  }

  /** A copy of the bytes written. */
  toBytes(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

/**
 * Builds one netlink message: a 16-byte header (seq and pid left 0 for the socket to fill), then
 * whatever `fill` writes (fixed struct, then attributes). `nlmsg_len` covers the padded total.
 */
export function buildMessage(type: number, flags: number, fill: (w: NlWriter) => void): Uint8Array {
  const w = new NlWriter();
  w.u32(0).u16(type).u16(flags).u32(0).u32(0);
  fill(w);
  w.align();
  w.patchU32(0, w.length);
  return w.toBytes();
}

/** Sets nlmsg_seq and nlmsg_pid of the message at the start of `msg` in place. */
export function setSeqPid(msg: Uint8Array, seq: number, pid: number): void {
  const v = view(msg);
  v.setUint32(8, seq >>> 0, HOST_LITTLE_ENDIAN);
  v.setUint32(12, pid >>> 0, HOST_LITTLE_ENDIAN);
}

/** One received netlink message; `payload` is everything after the 16-byte header. */
export interface NlMessage {
  type: number;
  flags: number;
  seq: number;
  pid: number;
  payload: Uint8Array;
}

/** Error for bytes that do not form valid netlink messages or attributes. */
export class NetlinkDecodeError extends Error {
  override name = "NetlinkDecodeError";
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

/** Splits a datagram into messages (throws {@link NetlinkDecodeError} on a bad length). */
export function parseMessages(buf: Uint8Array): NlMessage[] {
  const out: NlMessage[] = [];
  const v = view(buf);
  let off = 0;
  while (off + NLMSG_HDRLEN <= buf.byteLength) {
    const len = v.getUint32(off, HOST_LITTLE_ENDIAN);
    if (len < NLMSG_HDRLEN || off + len > buf.byteLength) {
      throw new NetlinkDecodeError(`bad nlmsg_len ${len} at offset ${off} of ${buf.byteLength}`);
    }
    out.push({
      type: v.getUint16(off + 4, HOST_LITTLE_ENDIAN),
      flags: v.getUint16(off + 6, HOST_LITTLE_ENDIAN),
      seq: v.getUint32(off + 8, HOST_LITTLE_ENDIAN),
      pid: v.getUint32(off + 12, HOST_LITTLE_ENDIAN),
      payload: buf.subarray(off + NLMSG_HDRLEN, off + len),
    });
    off += align4(len);
  }
  return out;
}

/** One attribute: `type` has the NESTED/NET_BYTEORDER bits masked off. */
export interface NlAttr {
  type: number;
  nested: boolean;
  data: Uint8Array;
}

/** Parses the attribute stream of `buf` starting at `offset`, in order (duplicates kept). */
export function parseAttrs(buf: Uint8Array, offset = 0): NlAttr[] {
  const out: NlAttr[] = [];
  const v = view(buf);
  let off = offset;
  while (off + NLA_HDRLEN <= buf.byteLength) {
    const len = v.getUint16(off, HOST_LITTLE_ENDIAN);
    const rawType = v.getUint16(off + 2, HOST_LITTLE_ENDIAN);
    if (len < NLA_HDRLEN || off + len > buf.byteLength) {
      throw new NetlinkDecodeError(`bad nla_len ${len} at offset ${off} of ${buf.byteLength}`);
    }
    out.push({
      type: rawType & NLA_TYPE_MASK,
      nested: (rawType & NLA_F_NESTED) !== 0,
      data: buf.subarray(off + NLA_HDRLEN, off + len),
    });
    off += align4(len);
  }
  return out;
}

/** Attributes by type; the first occurrence wins (as iproute2's parse_rtattr). */
export function attrMap(buf: Uint8Array, offset = 0): Map<number, Uint8Array> {
  const m = new Map<number, Uint8Array>();
  for (const a of parseAttrs(buf, offset)) if (!m.has(a.type)) m.set(a.type, a.data);
  return m;
}

function need(b: Uint8Array, off: number, n: number): void {
  if (off + n > b.byteLength) throw new NetlinkDecodeError(`need ${n} bytes at ${off}, have ${b.byteLength}`);
}

export function readU8(b: Uint8Array, off = 0): number {
  need(b, off, 1);
  return b[off] ?? 0;
}
export function readU16(b: Uint8Array, off = 0): number {
  need(b, off, 2);
  return view(b).getUint16(off, HOST_LITTLE_ENDIAN);
}
export function readU32(b: Uint8Array, off = 0, littleEndian = HOST_LITTLE_ENDIAN): number {
  need(b, off, 4);
  return view(b).getUint32(off, littleEndian);
}
export function readI32(b: Uint8Array, off = 0): number {
  need(b, off, 4);
  return view(b).getInt32(off, HOST_LITTLE_ENDIAN);
}
/** A u64 as a number (exact below 2^53). */
export function readU64(b: Uint8Array, off = 0, littleEndian = HOST_LITTLE_ENDIAN): number {
  need(b, off, 8);
  return Number(view(b).getBigUint64(off, littleEndian));
}
/** A big-endian u32 (nfnetlink attributes carry their integers in network byte order). */
export const readBe32 = (b: Uint8Array, off = 0): number => readU32(b, off, false);
/** A big-endian u64 (below 2^53, as nf_tables handles are). */
export const readBe64 = (b: Uint8Array, off = 0): number => readU64(b, off, false);

/** A string attribute up to its first NUL (or the whole payload when unterminated). */
export function readString(b: Uint8Array): string {
  const nul = b.indexOf(0);
  return decoder.decode(nul < 0 ? b : b.subarray(0, nul));
}

/** Lower-case hex of bytes (for golden-byte tests and diagnostics). */
export function toHex(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

/** Bytes of a hex string (whitespace ignored). */
export function fromHex(hex: string): Uint8Array {
  const clean = hex.replace(/\s+/g, "");
  if (clean.length % 2 !== 0 || /[^0-9a-fA-F]/.test(clean)) throw new NetlinkDecodeError(`bad hex string`);
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** True when `needle` occurs in `hay` (the first byte found natively, the rest compared). */
export function containsBytes(hay: Uint8Array, needle: Uint8Array): boolean {
  const first = needle[0];
  if (first === undefined) return true;
  const last = hay.length - needle.length;
  for (let at = hay.indexOf(first); at >= 0 && at <= last; at = hay.indexOf(first, at + 1)) {
    let i = 1;
    while (i < needle.length && hay[at + i] === needle[i]) i++;
    if (i === needle.length) return true;
  }
  return false;
}
