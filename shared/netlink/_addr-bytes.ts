/**
 * Address text ⇄ wire bytes for the netlink layer (IPv4 dotted quad, IPv6 RFC 4291 text with
 * RFC 5952 output, MAC addresses). Private to shared/netlink; general IP math lives in shared/ip.
 */

/** Thrown for an address string that cannot be encoded. */
export class AddressFormatError extends TypeError {
  override name = "AddressFormatError";
}

/** 4 or 6 from the text form (":" means IPv6). */
export function familyOf(address: string): 4 | 6 {
  return address.includes(":") ? 6 : 4;
}

function parseV4(s: string): Uint8Array | undefined {
  const parts = s.split(".");
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i] ?? "";
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p.startsWith("0"))) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

function parseV6(s: string): Uint8Array | undefined {
  let text = s;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(":");
  if (lastColon >= 0 && text.slice(lastColon + 1).includes(".")) {
    // Embedded IPv4 tail ("::ffff:1.2.3.4"): two words, and drop the colon before it.
    const v4 = parseV4(text.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0));
    text = text.slice(0, lastColon + 1);
    if (!text.endsWith("::")) text = text.slice(0, -1);
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (h: string): number[] | undefined => {
    if (h === "") return [];
    const out: number[] = [];
    for (const g of h.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = groups(halves[0] ?? "");
  if (head === undefined) return undefined;
  let words: number[];
  if (halves.length === 2) {
    const rest = groups(halves[1] ?? "");
    if (rest === undefined) return undefined;
    const fill = 8 - head.length - rest.length - tail.length;
    if (fill < 1) return undefined;
    words = [...head, ...new Array<number>(fill).fill(0), ...rest, ...tail];
  } else {
    words = [...head, ...tail];
  }
  if (words.length !== 8) return undefined;
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[i * 2] = w >> 8;
    out[i * 2 + 1] = w & 0xff;
  });
  return out;
}

/** Wire bytes (4 or 16) of an IP address; throws {@link AddressFormatError}. */
export function ipToBytes(address: string, family?: 4 | 6): Uint8Array {
  const fam = family ?? familyOf(address);
  const out = fam === 4 ? parseV4(address) : parseV6(address);
  if (out === undefined) throw new AddressFormatError(`invalid IPv${fam} address ${JSON.stringify(address)}`);
  return out;
}

/** Text form of 4 or 16 address bytes (IPv6 per RFC 5952: lower case, longest zero run as "::"). */
export function bytesToIp(b: Uint8Array): string {
  if (b.byteLength === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  if (b.byteLength !== 16) throw new AddressFormatError(`address of ${b.byteLength} bytes`);
  const words: number[] = [];
  for (let i = 0; i < 8; i++) words.push(((b[i * 2] ?? 0) << 8) | (b[i * 2 + 1] ?? 0));
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]): string => ws.map((w) => w.toString(16)).join(":");
  if (bestAt < 0) return hex(words);
  return `${hex(words.slice(0, bestAt))}::${hex(words.slice(bestAt + bestLen))}`;
}

/** Bytes of a MAC address "aa:bb:cc:dd:ee:ff" (also accepts "-" separators). */
export function macToBytes(mac: string): Uint8Array {
  const parts = mac.split(/[:-]/);
  if (parts.length < 2 || parts.some((p) => !/^[0-9a-fA-F]{2}$/.test(p))) {
    throw new AddressFormatError(`invalid MAC address ${JSON.stringify(mac)}`);
  }
  return Uint8Array.from(parts.map((p) => parseInt(p, 16)));
}

/** Lower-case colon form of hardware-address bytes (Go's HardwareAddr.String). */
export function bytesToMac(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join(":");
}

/** IPv4 broadcast of `address/prefixLen` (all host bits set). */
export function ipv4Broadcast(addr: Uint8Array, prefixLen: number): Uint8Array {
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const bits = Math.max(0, Math.min(8, prefixLen - i * 8));
    const hostMask = 0xff >> bits;
    out[i] = ((addr[i] ?? 0) | hostMask) & 0xff;
  }
  return out;
}
