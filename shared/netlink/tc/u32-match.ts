/**
 * u32 selector keys for `match ip src|dst PREFIX` and `match ip6 src|dst PREFIX`, as tc's
 * parse_ip_addr builds them: one key per 32-bit word the prefix covers (the last one with a
 * partial mask), at the address's offset from the network header; a /0 prefix is one key with
 * mask 0 (every packet of the protocol).
 */

import type { U32Key } from "./filter.ts";

/** Header offsets of the addresses: IPv4 saddr 12 / daddr 16, IPv6 saddr 8 / daddr 24. */
const OFFSETS = { 4: { src: 12, dst: 16 }, 16: { src: 8, dst: 24 } } as const;

/**
 * The keys matching packets whose `field` address lies in `addr`/`prefixLen`; `addr` is 4 or 16
 * bytes (network order); host bits are masked off.
 */
export function u32PrefixKeys(addr: Uint8Array, prefixLen: number, field: "src" | "dst"): U32Key[] {
  if (addr.byteLength !== 4 && addr.byteLength !== 16) throw new RangeError(`address of ${addr.byteLength} bytes`);
  const bits = addr.byteLength * 8;
  if (!Number.isInteger(prefixLen) || prefixLen < 0 || prefixLen > bits) throw new RangeError(`prefix length ${prefixLen}`);
  const base = OFFSETS[addr.byteLength][field];
  if (prefixLen === 0) return [{ mask: 0, value: 0, off: base }];
  const view = new DataView(addr.buffer, addr.byteOffset, addr.byteLength);
  const keys: U32Key[] = [];
  for (let word = 0; word * 32 < prefixLen; word++) {
    const n = Math.min(32, prefixLen - word * 32);
    const mask = n === 32 ? 0xffffffff : (0xffffffff << (32 - n)) >>> 0;
    keys.push({ mask, value: (view.getUint32(word * 4, false) & mask) >>> 0, off: base + word * 4 });
  }
  return keys;
}
