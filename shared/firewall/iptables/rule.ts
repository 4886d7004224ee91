/**
 * Rule identity: two argument lists name the same rule when they are equal after the
 * canonicalisation iptables itself applies when storing a rule — addresses after `-s`/`-d` are
 * masked and always carry a prefix (`10.0.0.3` → `10.0.0.3/32`, `10.0.0.3/24` → `10.0.0.0/24`),
 * and the long option names are shortened.
 */
import { bitLength, ipToBytes, parseIP } from "../../ip/addr.ts";
import { formatCIDR, networkAddress, parseCIDR } from "../../ip/cidr.ts";

const LONG_TO_SHORT: Readonly<Record<string, string>> = {
  "--source": "-s",
  "--destination": "-d",
  "--jump": "-j",
  "--goto": "-g",
  "--in-interface": "-i",
  "--out-interface": "-o",
  "--protocol": "-p",
  "--match": "-m",
};

/** Canonical `addr/prefix` of a -s/-d value, or the value unchanged when it is not an address. */
export function canonicalAddress(value: string): string {
  const ip = parseIP(value);
  if (ip !== null) return formatCIDR({ ip, prefixLen: bitLength(ip.family) });
  const c = parseCIDR(value);
  if (c !== null) return formatCIDR({ ip: networkAddress(c.ip, c.prefixLen), prefixLen: c.prefixLen });
  return value;
}

/** The canonical form of a rule's argument list (see module doc). */
export function canonicalRule(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const short = LONG_TO_SHORT[a] ?? a;
    out.push(short);
    if ((short === "-s" || short === "-d") && i + 1 < args.length) {
      out.push(canonicalAddress(args[i + 1]!));
      i++;
    }
  }
  return out;
}

/** True when both argument lists describe the same rule. */
export function sameRule(a: readonly string[], b: readonly string[]): boolean {
  const ca = canonicalRule(a);
  const cb = canonicalRule(b);
  return ca.length === cb.length && ca.every((t, i) => t === cb[i]);
}

/** The jump (`-j`) or goto (`-g`) target of a rule, if any. */
export function ruleTarget(args: readonly string[]): string | undefined {
  for (let i = 0; i + 1 < args.length; i++) {
    const a = LONG_TO_SHORT[args[i]!] ?? args[i];
    if (a === "-j" || a === "-g") return args[i + 1];
  }
  return undefined;
}

/** `-m comment --comment <text>`, the comment match as iptables-save prints it. */
export function commentMatch(text: string): string[] {
  return ["-m", "comment", "--comment", text];
}

/** The `--comment` value of a rule, if any. */
export function ruleComment(args: readonly string[]): string | undefined {
  const i = args.indexOf("--comment");
  return i >= 0 ? args[i + 1] : undefined;
}

/** True when `list` holds a rule equal to `rule`. */
export function hasRule(list: readonly (readonly string[])[], rule: readonly string[]): boolean {
  return list.some((r) => sameRule(r, rule));
}

/** The rules of `want` that `have` lacks, in `want`'s order. */
export function missingRules(have: readonly (readonly string[])[], want: readonly (readonly string[])[]): (readonly string[])[] {
  return want.filter((w) => !hasRule(have, w));
}

/** True when both lists hold equal rules in the same order. */
export function sameRules(a: readonly (readonly string[])[], b: readonly (readonly string[])[]): boolean {
  return a.length === b.length && a.every((r, i) => sameRule(r, b[i]!));
}

/** Targets that iptables-nft keeps as a verdict code or an extension's name, not as a chain name. */
const NOT_A_CHAIN = /^[A-Z0-9_]+$/;

const encoder = new TextEncoder();

/** The bytes of an address without a prefix shorter than the whole address (`10.0.0.3/32`). */
function hostAddressBytes(value: string): Uint8Array | undefined {
  const ip = parseIP(value);
  if (ip !== null) return ipToBytes(ip);
  const c = parseCIDR(value);
  return c !== null && c.prefixLen === bitLength(c.ip.family) ? ipToBytes(c.ip) : undefined;
}

/**
 * Bytes that the kernel form of `rule`, as iptables-nft writes it, certainly contains, as specific
 * to the rule as can be: its comment (the comment match keeps the text), else the user chain it
 * jumps or goes to (the verdict keeps the name), else a whole address it matches (`-s`/`-d` of a
 * /32 or /128: the comparison keeps the address). Undefined when the rule has none of these: every
 * rule of the chain must then be decoded to find it.
 */
export function needleOf(rule: readonly string[]): Uint8Array | undefined {
  const comment = ruleComment(rule);
  if (comment !== undefined && comment !== "") return encoder.encode(comment);
  const target = ruleTarget(rule);
  if (target !== undefined && !NOT_A_CHAIN.test(target)) return chainNeedle(target);
  for (let i = 0; i + 1 < rule.length; i++) {
    const flag = rule[i];
    if (flag !== "-s" && flag !== "-d" && flag !== "--source" && flag !== "--destination") continue;
    const bytes = hostAddressBytes(rule[i + 1]!);
    if (bytes !== undefined) return bytes;
  }
  return undefined;
}

/** The bytes a rule jumping or going to chain `name` certainly contains (its verdict's chain name). */
export function chainNeedle(name: string): Uint8Array {
  return encoder.encode(name);
}
