/**
 * IP addresses as plain values (family + 128-bit integer), with Go `net` text semantics:
 * {@link parseIP} accepts exactly what `net.ParseIP` accepts (dotted IPv4 without leading zeros,
 * RFC 4291 IPv6 incl. an embedded IPv4 tail, no zones), and an IPv4-mapped IPv6 address
 * (`::ffff:a.b.c.d`, in any spelling) becomes IPv4, as Go's `To4` does. {@link formatIP} prints what
 * Go's `IP.String()` prints: dotted IPv4, RFC 5952 lower-case compressed IPv6.
 *
 * Pure: no I/O, no node:net.
 */

export type IPFamily = 4 | 6;

/** An IP address. `value` is the address as an unsigned integer (32 or 128 bits). */
export interface IPAddr {
  readonly family: IPFamily;
  readonly value: bigint;
}

const V4_MAX = (1n << 32n) - 1n;
const V6_MAX = (1n << 128n) - 1n;
const V4_MAPPED_PREFIX = 0xffffn << 32n;

/** Bit width of a family's addresses (32 or 128). */
export function bitLength(family: IPFamily): 32 | 128 {
  return family === 4 ? 32 : 128;
}

/** Largest address value of a family. */
export function maxValue(family: IPFamily): bigint {
  return family === 4 ? V4_MAX : V6_MAX;
}

/** Builds an address; throws RangeError when `value` does not fit the family. */
export function makeIP(family: IPFamily, value: bigint): IPAddr {
  if (value < 0n || value > maxValue(family)) throw new RangeError(`IPv${family} value out of range: ${value}`);
  return { family, value };
}

/** The family of an address. */
export function ipFamily(ip: IPAddr): IPFamily {
  return ip.family;
}

/** Orders addresses: every IPv4 address before every IPv6 one, then numerically. */
export function compareIP(a: IPAddr, b: IPAddr): -1 | 0 | 1 {
  if (a.family !== b.family) return a.family < b.family ? -1 : 1;
  if (a.value === b.value) return 0;
  return a.value < b.value ? -1 : 1;
}

export function ipEqual(a: IPAddr, b: IPAddr): boolean {
  return a.family === b.family && a.value === b.value;
}

/** The next address, or null past the family's last address. */
export function nextIP(ip: IPAddr): IPAddr | null {
  return ip.value === maxValue(ip.family) ? null : { family: ip.family, value: ip.value + 1n };
}

/** The previous address, or null before the family's first address. */
export function prevIP(ip: IPAddr): IPAddr | null {
  return ip.value === 0n ? null : { family: ip.family, value: ip.value - 1n };
}

/** Network-order bytes: 4 for IPv4, 16 for IPv6. */
export function ipToBytes(ip: IPAddr): Uint8Array {
  const n = ip.family === 4 ? 4 : 16;
  const out = new Uint8Array(n);
  let v = ip.value;
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/**
 * Address from network-order bytes (4 or 16). Like Go, a 16-byte IPv4-mapped address becomes
 * IPv4. Returns null for any other length.
 */
export function ipFromBytes(bytes: Uint8Array): IPAddr | null {
  if (bytes.length !== 4 && bytes.length !== 16) return null;
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  return bytes.length === 4 ? { family: 4, value: v } : fromV6Value(v);
}

/** A 128-bit value as an address: IPv4 when it is IPv4-mapped (Go `To4`). */
function fromV6Value(v: bigint): IPAddr {
  if (v >> 32n === 0xffffn) return { family: 4, value: v & V4_MAX };
  return { family: 6, value: v };
}

/**
 * Go's `IP.IsGlobalUnicast`: not unspecified, loopback (127/8, ::1), multicast (224/4, ff00::/8),
 * link-local unicast (169.254/16, fe80::/10) or the IPv4 limited broadcast. Class E (240/4) counts.
 */
export function isGlobalUnicast(ip: IPAddr): boolean {
  if (ip.family === 4) {
    const v = ip.value;
    if (v === 0n || v === V4_MAX) return false;
    const a = v >> 24n;
    if (a === 127n || (a >= 224n && a < 240n)) return false;
    return v >> 16n !== 0xa9fen;
  }
  const v = ip.value;
  if (v === 0n || v === 1n) return false;
  if (v >> 120n === 0xffn) return false;
  return v >> 118n !== 0x3fan;
}

/** The IPv4-mapped IPv6 form of an IPv4 address (`::ffff:a.b.c.d`) as a 128-bit value. */
export function v4MappedValue(ip: IPAddr): bigint {
  return ip.family === 4 ? V4_MAPPED_PREFIX | ip.value : ip.value;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** Go's strict dotted-quad: exactly 4 fields, 1-3 digits, <= 255, no leading zeros. */
function parseV4Value(s: string): bigint | null {
  let value = 0n;
  let i = 0;
  for (let field = 0; field < 4; field++) {
    if (field > 0) {
      if (s.charCodeAt(i) !== 0x2e) return null;
      i++;
    }
    const start = i;
    let n = 0;
    while (i < s.length && isDigit(s.charCodeAt(i))) {
      n = n * 10 + (s.charCodeAt(i) - 0x30);
      i++;
      if (i - start > 3) return null;
    }
    const len = i - start;
    if (len === 0 || n > 255) return null;
    if (len > 1 && s.charCodeAt(start) === 0x30) return null;
    value = (value << 8n) | BigInt(n);
  }
  return i === s.length ? value : null;
}

/** RFC 4291 text (Go netip rules): `::` once, 1-4 hex digits per group, IPv4 tail allowed. */
function parseV6Value(s: string): bigint | null {
  const groups: number[] = [];
  let ellipsis = -1;
  let i = 0;
  if (s.startsWith("::")) {
    ellipsis = 0;
    i = 2;
    if (i === s.length) return 0n;
  }
  while (i < s.length) {
    const start = i;
    let v = 0;
    while (i < s.length) {
      const h = hexValue(s.charCodeAt(i));
      if (h < 0) break;
      v = v * 16 + h;
      i++;
    }
    const len = i - start;
    if (i < s.length && s.charCodeAt(i) === 0x2e) {
      // Embedded IPv4 tail: must fill the last 32 bits.
      if (ellipsis < 0 && groups.length !== 6) return null;
      if (groups.length + 2 > 8) return null;
      const v4 = parseV4Value(s.slice(start));
      if (v4 === null) return null;
      groups.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      i = s.length;
      break;
    }
    if (len === 0 || len > 4) return null;
    groups.push(v);
    if (i === s.length) break;
    if (s.charCodeAt(i) !== 0x3a) return null;
    i++;
    if (s.charCodeAt(i) === 0x3a) {
      if (ellipsis >= 0) return null;
      ellipsis = groups.length;
      i++;
      if (i === s.length) break;
    } else if (i === s.length) {
      return null; // trailing single colon
    }
    if (groups.length === 8) return null;
  }
  if (groups.length > 8) return null;
  if (groups.length < 8) {
    if (ellipsis < 0) return null;
    const zeros = new Array<number>(8 - groups.length).fill(0);
    groups.splice(ellipsis, 0, ...zeros);
  } else if (ellipsis >= 0) {
    return null; // "::" must stand for at least one group
  }
  let value = 0n;
  for (const g of groups) value = (value << 16n) | BigInt(g);
  return value;
}

/** Parses an address with Go `net.ParseIP` semantics; null when invalid. */
export function parseIP(s: string): IPAddr | null {
  if (s.length === 0 || s.length > 64) return null;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x2e) {
      const v = parseV4Value(s);
      return v === null ? null : { family: 4, value: v };
    }
    if (c === 0x3a) {
      const v = parseV6Value(s);
      return v === null ? null : fromV6Value(v);
    }
  }
  return null;
}

/** Go `IP.String()`: dotted IPv4; lower-case IPv6 with the longest run (>= 2) of zero groups as `::`. */
export function formatIP(ip: IPAddr): string {
  if (ip.family === 4) {
    const v = Number(ip.value);
    return `${(v >>> 24) & 255}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
  }
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((ip.value >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (g: number) => g.toString(16);
  if (bestStart < 0) return groups.map(hex).join(":");
  const head = groups.slice(0, bestStart).map(hex).join(":");
  const tail = groups.slice(bestStart + bestLen).map(hex).join(":");
  return `${head}::${tail}`;
}
