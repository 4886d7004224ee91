/**
 * Go `strings` helpers whose notion of whitespace (`unicode.IsSpace`) differs from JavaScript's
 * (`trim` and `\s` also match U+FEFF and miss U+0085). Used where upstream compares or splits text.
 */

/** Go `unicode.IsSpace` for one UTF-16 code unit (all Go space runes are in the BMP). */
export function isGoSpace(c: number): boolean {
  switch (c) {
    case 0x09:
    case 0x0a:
    case 0x0b:
    case 0x0c:
    case 0x0d:
    case 0x20:
    case 0x85:
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200a;
  }
}

/** Go `strings.TrimSpace`. */
export function goTrimSpace(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && isGoSpace(s.charCodeAt(start))) start++;
  while (end > start && isGoSpace(s.charCodeAt(end - 1))) end--;
  return s.slice(start, end);
}

/** Go `strings.Fields`: the non-empty runs between whitespace. */
export function goFields(s: string): string[] {
  const out: string[] = [];
  let start = -1;
  for (let i = 0; i <= s.length; i++) {
    const space = i === s.length || isGoSpace(s.charCodeAt(i));
    if (space) {
      if (start >= 0) out.push(s.slice(start, i));
      start = -1;
    } else if (start < 0) {
      start = i;
    }
  }
  return out;
}
