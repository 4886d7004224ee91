/**
 * Go's `%q` for a string (`strconv.Quote`) and its inverse, for texts that must read byte for byte
 * like upstream's: error messages (`fmt.Errorf("... %q", s)`) and names that outlive a call
 * (iptables comments, shared/firewall/naming.ts).
 */

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;
const SHORT_ESCAPES: Record<string, string> = {
  "\x07": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
  "\\": "\\\\",
  '"': '\\"',
};

/** Go `strconv.Quote` (what `%q` prints for a string). Lone surrogates print as U+FFFD like invalid UTF-8 runes. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    const short = SHORT_ESCAPES[ch];
    if (short !== undefined) out += short;
    else if (cp >= 0xd800 && cp <= 0xdfff) out += "\\ufffd";
    else if (ch === " " || PRINTABLE.test(ch)) out += ch;
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, "0")}`;
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, "0")}`;
    else out += `\\U${cp.toString(16).padStart(8, "0")}`;
  }
  return `${out}"`;
}

const UNESCAPES: Record<string, string> = Object.fromEntries(Object.entries(SHORT_ESCAPES).map(([k, v]) => [v.slice(1), k]));

/** Go `strconv.Unquote` of what {@link goQuote} prints; undefined for anything else. */
export function goUnquote(quoted: string): string | undefined {
  if (quoted.length < 2 || !quoted.startsWith('"') || !quoted.endsWith('"')) return undefined;
  let bad = false;
  const body = quoted.slice(1, -1).replace(/\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|.)/gs, (_m, e: string) => {
    if (e.length > 1) return String.fromCodePoint(Number.parseInt(e.slice(1), 16));
    const ch = UNESCAPES[e];
    if (ch === undefined) bad = true;
    return ch ?? "";
  });
  // goQuote is canonical: anything it would not print (an unescaped quote, \ufffd for a lone surrogate) is not ours.
  return !bad && goQuote(body) === quoted ? body : undefined;
}
