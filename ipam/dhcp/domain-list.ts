/**
 * Domain lists in DNS wire format, as DHCPv4 option 119 (RFC 3397, compression pointers allowed,
 * relative to the start of the option data) and DHCPv6 option 24 (RFC 3646, uncompressed) carry
 * them: each name is a sequence of length-prefixed labels ending with a zero length.
 */

export class DomainListError extends Error {
  override name = "DomainListError";
}

/** Upper bound on pointer jumps in one name (each must go backwards, so this only guards loops). */
const MAX_JUMPS = 128;

/** The names of a domain list, without the trailing dot ("example.test"). */
export function decodeDomainList(b: Uint8Array): string[] {
  const names: string[] = [];
  let p = 0;
  while (p < b.byteLength) {
    const labels: string[] = [];
    let q = p;
    let end: number | undefined;
    for (let jumps = 0; ; ) {
      const len = b[q];
      if (len === undefined) throw new DomainListError("truncated name");
      if (len === 0) {
        end ??= q + 1;
        break;
      }
      if ((len & 0xc0) === 0xc0) {
        const target = ((len & 0x3f) << 8) | (b[q + 1] ?? 0);
        if (q + 1 >= b.byteLength || target >= q || ++jumps > MAX_JUMPS) throw new DomainListError("bad compression pointer");
        end ??= q + 2;
        q = target;
        continue;
      }
      if (len > 63 || q + 1 + len > b.byteLength) throw new DomainListError("bad label length");
      labels.push(new TextDecoder().decode(b.subarray(q + 1, q + 1 + len)));
      q += 1 + len;
    }
    if (labels.length > 0) names.push(labels.join("."));
    p = end;
  }
  return names;
}

/** Encodes names uncompressed (for tests and the fake servers). */
export function encodeDomainList(names: readonly string[]): Uint8Array {
  const out: number[] = [];
  for (const name of names) {
    for (const label of name.split(".").filter((l) => l !== "")) {
      const bytes = new TextEncoder().encode(label);
      out.push(bytes.byteLength, ...bytes);
    }
    out.push(0);
  }
  return Uint8Array.from(out);
}
