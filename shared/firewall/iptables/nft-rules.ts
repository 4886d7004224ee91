/**
 * iptables-nft's rules read back from the kernel: the argument list `iptables -S` prints for a
 * rule that iptables-nft (1.8.x) wrote into an nf_tables table, decoded from its expressions as the
 * kernel dumps them (shared/netlink/nftables.ts nftRules), for the shapes the plugins write:
 *
 *   [!] -s|-d <addr>/<prefix>                 payload (network header, source or destination address,
 *                                             prefix/8 bytes) then cmp eq|neq — whole-byte prefixes only
 *   [!] -p tcp|udp|sctp                       meta l4proto then cmp eq|neq
 *   -m mark [!] --mark <value>[/<mask>]       meta mark, bitwise and (unless the mask is all ones),
 *                                             then cmp eq|neq
 *   -m multiport --dports|--sports|--ports <p,…>  match multiport rev 1 (struct xt_multiport_v1),
 *                                             single ports, not inverted
 *   -m comment --comment <text>               match comment rev 0 (struct xt_comment_info)
 *   -m conntrack [!] --ctstate <states>       match conntrack rev 3 (struct xt_conntrack_mtinfo3,
 *                                             testing the state and nothing else)
 *   -m addrtype …, -j MARK --set-xmark …, -j MASQUERADE   x_tables blobs read by xt-info.ts
 *   -j ACCEPT|DROP|RETURN|<chain>, -g <chain> immediate verdict, the last expression
 *   (counter)                                 nothing: `iptables -S` prints no counters
 *
 * Anything else — another expression (bitwise for a prefix within a byte, meta for -i/-o,
 * native ct), another match or revision, a conntrack match testing more than the state, a comment
 * that is only in the rule's user data — is not read: {@link iptablesArgs} answers undefined and
 * the caller goes the tool's way. A decoded rule compares with rule.ts `sameRule` like a listed one.
 * (`nft --debug=netlink list chain ip filter CNI-FORWARD` shows these expressions.)
 */
import { attrMap, readBe32, readString, readU16, readU32 } from "../../netlink/codec.ts";
import {
  NF_ACCEPT,
  NF_DROP,
  NFT_CMP_EQ,
  NFT_CMP_NEQ,
  NFT_GOTO,
  NFT_JUMP,
  NFT_PAYLOAD_NETWORK_HEADER,
  NFT_RETURN,
  NFTA_CMP_DATA,
  NFTA_CMP_OP,
  NFTA_CMP_SREG,
  NFTA_DATA_VALUE,
  NFTA_MATCH_INFO,
  NFTA_MATCH_NAME,
  NFTA_MATCH_REV,
  NFTA_PAYLOAD_BASE,
  NFTA_PAYLOAD_DREG,
  NFTA_PAYLOAD_LEN,
  NFTA_PAYLOAD_OFFSET,
  NFTA_META_DREG,
  NFTA_META_KEY,
  NFT_META_L4PROTO,
  NFT_META_MARK,
  NFTA_BITWISE_DREG,
  NFTA_BITWISE_LEN,
  NFTA_BITWISE_MASK,
  NFTA_BITWISE_OP,
  NFTA_BITWISE_SREG,
  NFTA_BITWISE_XOR,
  NFT_BITWISE_BOOL,
  NFTA_TARGET_INFO,
  NFTA_TARGET_NAME,
  NFTA_TARGET_REV,
} from "../../netlink/constants/nf-tables.ts";
import { immediateVerdict } from "../../netlink/nftables.ts";
import type { NftExpr, NftRule } from "../../netlink/nftables-rule.ts";
import { formatIP, ipFromBytes, type IPFamily } from "../../ip/addr.ts";
import { commentMatch } from "./rule.ts";
import { addrtypeArgs, hexMark, xtTargetArgs } from "./xt-info.ts";

/** Where the source and destination addresses sit in the network header (struct iphdr, struct ipv6hdr). */
const ADDRESS_FIELDS: Readonly<Record<IPFamily, { src: number; dst: number; size: number }>> = {
  4: { src: 12, dst: 16, size: 4 },
  6: { src: 8, dst: 24, size: 16 },
};

/** include/uapi/linux/netfilter/xt_comment.h: struct xt_comment_info { char comment[256]; }. */
const XT_COMMENT_INFO_SIZE = 256;

/**
 * include/uapi/linux/netfilter/xt_conntrack.h: struct xt_conntrack_mtinfo3 (XT_ALIGNed to 168
 * bytes) and the offsets of its __u16 match_flags, invert_flags and state_mask (host order); the
 * XT_CONNTRACK_STATE flag and the state bits XT_CONNTRACK_STATE_BIT(ctinfo) = 1 << (ctinfo + 1)
 * for IP_CT_ESTABLISHED 0, IP_CT_RELATED 1, IP_CT_NEW 2, plus INVALID, SNAT, DNAT, UNTRACKED.
 */
const XT_CONNTRACK_MTINFO3_SIZE = 168;
const MATCH_FLAGS_AT = 146;
const INVERT_FLAGS_AT = 148;
const STATE_MASK_AT = 150;
const XT_CONNTRACK_STATE = 1 << 0;
const XT_CONNTRACK_STATE_INVALID = 1 << 0;
// 1 << (IP_CT_NUMBER + 1), + 2, + 3, with IP_CT_NUMBER 5 (enum ip_conntrack_info, nf_conntrack_common.h).
const XT_CONNTRACK_STATE_SNAT = 1 << 6;
const XT_CONNTRACK_STATE_DNAT = 1 << 7;
const XT_CONNTRACK_STATE_UNTRACKED = 1 << 8;
const stateBit = (ctinfo: number) => 1 << (ctinfo + 1);
/** The states in the order libxt_conntrack prints them. */
const CT_STATES: readonly [number, string][] = [
  [XT_CONNTRACK_STATE_INVALID, "INVALID"],
  [stateBit(2), "NEW"],
  [stateBit(1), "RELATED"],
  [stateBit(0), "ESTABLISHED"],
  [XT_CONNTRACK_STATE_UNTRACKED, "UNTRACKED"],
  [XT_CONNTRACK_STATE_SNAT, "SNAT"],
  [XT_CONNTRACK_STATE_DNAT, "DNAT"],
];

/**
 * include/uapi/linux/netfilter/xt_multiport.h: struct xt_multiport_v1 { __u8 flags; __u8 count;
 * __u16 ports[XT_MULTI_PORTS]; __u8 pflags[XT_MULTI_PORTS]; __u8 invert; } with XT_MULTI_PORTS 15,
 * ports in host order; flags XT_MULTIPORT_SOURCE 0, _DESTINATION 1, _EITHER 2.
 */
const XT_MULTI_PORTS = 15;
const XT_MULTIPORT_V1_SIZE = 2 + 2 * XT_MULTI_PORTS + XT_MULTI_PORTS + 1;
const MULTIPORT_OPTION = ["--sports", "--dports", "--ports"] as const;

/** The protocols `-p` names that iptables prints by name (IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP). */
const L4PROTO_NAMES: Readonly<Record<number, string>> = { 6: "tcp", 17: "udp", 132: "sctp" };

function u32(expr: NftExpr, attr: number): number | undefined {
  const b = expr.attrs.get(attr);
  return b?.byteLength === 4 ? readBe32(b) : undefined;
}

/** The value of an nft data attribute (a cmp's data, a bitwise's mask or xor). */
function dataValue(expr: NftExpr, attr: number): Uint8Array | undefined {
  const data = expr.attrs.get(attr);
  return data === undefined ? undefined : attrMap(data).get(NFTA_DATA_VALUE);
}

/** What `cmp` tests of register `reg`: equal (or not, `negated`) to `value`; undefined when it is no eq|neq cmp of that register. */
function cmpTest(cmp: NftExpr | undefined, reg: number | undefined): { negated: boolean; value: Uint8Array } | undefined {
  if (cmp?.name !== "cmp" || u32(cmp, NFTA_CMP_SREG) !== reg) return undefined;
  const op = u32(cmp, NFTA_CMP_OP);
  const value = dataValue(cmp, NFTA_CMP_DATA);
  if ((op !== NFT_CMP_EQ && op !== NFT_CMP_NEQ) || value === undefined) return undefined;
  return { negated: op === NFT_CMP_NEQ, value };
}

/** `[!] -s|-d <addr>/<prefix>` from a payload load of an address and the cmp that tests it. */
function addressArgs(family: IPFamily, load: NftExpr, cmp: NftExpr | undefined): { flag: "-s" | "-d"; args: string[] } | undefined {
  const field = ADDRESS_FIELDS[family];
  const offset = u32(load, NFTA_PAYLOAD_OFFSET);
  const len = u32(load, NFTA_PAYLOAD_LEN);
  const flag = offset === field.src ? "-s" : offset === field.dst ? "-d" : undefined;
  if (flag === undefined || len === undefined || len < 1 || len > field.size) return undefined;
  if (u32(load, NFTA_PAYLOAD_BASE) !== NFT_PAYLOAD_NETWORK_HEADER) return undefined;
  const test = cmpTest(cmp, u32(load, NFTA_PAYLOAD_DREG));
  if (test?.value.byteLength !== len) return undefined;
  const bytes = new Uint8Array(field.size);
  bytes.set(test.value);
  const ip = ipFromBytes(bytes);
  if (ip === null || ip.family !== family) return undefined; // an IPv4-mapped IPv6 address: left to the tool
  const addr = `${formatIP(ip)}/${len * 8}`;
  return { flag, args: test.negated ? ["!", flag, addr] : [flag, addr] };
}

/** `[!] -p <proto>` from a meta l4proto load and the cmp that tests it. */
function protocolArgs(load: NftExpr, cmp: NftExpr | undefined): string[] | undefined {
  if (u32(load, NFTA_META_KEY) !== NFT_META_L4PROTO) return undefined;
  const test = cmpTest(cmp, u32(load, NFTA_META_DREG));
  const name = test?.value.byteLength === 1 ? L4PROTO_NAMES[test.value[0]!] : undefined;
  if (test === undefined || name === undefined) return undefined;
  return test.negated ? ["!", "-p", name] : ["-p", name];
}

/**
 * `-m mark [!] --mark <value>[/<mask>]` from a meta mark load, the bitwise and that masks it (none
 * for a mask of all ones) and the cmp that tests it; with how many expressions after the load it
 * took. Register contents are in host order.
 */
function markArgs(load: NftExpr, next: NftExpr | undefined, after: NftExpr | undefined): { args: string[]; took: number } | undefined {
  if (u32(load, NFTA_META_KEY) !== NFT_META_MARK) return undefined;
  const reg = u32(load, NFTA_META_DREG);
  let mask = 0xffffffff;
  let cmp = next;
  if (next?.name === "bitwise") {
    if (u32(next, NFTA_BITWISE_SREG) !== reg || u32(next, NFTA_BITWISE_DREG) !== reg || u32(next, NFTA_BITWISE_LEN) !== 4) return undefined;
    const op = u32(next, NFTA_BITWISE_OP);
    const m = dataValue(next, NFTA_BITWISE_MASK);
    const xor = dataValue(next, NFTA_BITWISE_XOR);
    if ((op !== undefined && op !== NFT_BITWISE_BOOL) || m?.byteLength !== 4 || xor?.byteLength !== 4 || readU32(xor) !== 0) return undefined;
    mask = readU32(m);
    cmp = after;
  }
  const test = cmpTest(cmp, reg);
  if (test?.value.byteLength !== 4) return undefined;
  const mark = hexMark(readU32(test.value)) + (mask === 0xffffffff ? "" : `/${hexMark(mask)}`);
  return { args: ["-m", "mark", ...(test.negated ? ["!"] : []), "--mark", mark], took: cmp === next ? 1 : 2 };
}

/** `-m multiport --dports|--sports|--ports <p,…>` from a multiport rev 1 blob of single ports, not inverted. */
function multiportArgs(info: Uint8Array): string[] | undefined {
  if (info.byteLength !== XT_MULTIPORT_V1_SIZE) return undefined;
  const option = MULTIPORT_OPTION[info[0]!];
  const count = info[1]!;
  if (option === undefined || count < 1 || count > XT_MULTI_PORTS || info[XT_MULTIPORT_V1_SIZE - 1] !== 0) return undefined;
  const view = new DataView(info.buffer, info.byteOffset, info.byteLength);
  const hostOrder = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
  const ports: number[] = [];
  for (let i = 0; i < count; i++) {
    if (info[2 + 2 * XT_MULTI_PORTS + i] !== 0) return undefined; // a range
    ports.push(view.getUint16(2 + 2 * i, hostOrder));
  }
  return ["-m", "multiport", option, ports.join(",")];
}

/** `-m conntrack [!] --ctstate …` from a conntrack rev 3 blob that tests the state only. */
function ctstateArgs(info: Uint8Array): string[] | undefined {
  const flags = readU16(info, MATCH_FLAGS_AT);
  const invert = readU16(info, INVERT_FLAGS_AT);
  let mask = readU16(info, STATE_MASK_AT);
  if (flags !== XT_CONNTRACK_STATE || (invert !== 0 && invert !== XT_CONNTRACK_STATE)) return undefined;
  for (let i = 0; i < info.byteLength; i++) if (info[i] !== 0 && (i < MATCH_FLAGS_AT || i >= STATE_MASK_AT + 2)) return undefined;
  const names: string[] = [];
  for (const [bit, name] of CT_STATES) {
    if ((mask & bit) === 0) continue;
    names.push(name);
    mask &= ~bit;
  }
  if (mask !== 0 || names.length === 0) return undefined;
  return ["-m", "conntrack", ...(invert !== 0 ? ["!"] : []), "--ctstate", names.join(",")];
}

/** The arguments of an x_tables match iptables-nft wrote (`-m …`), and its comment if it is the comment match. */
function matchArgs(expr: NftExpr): { args: string[]; comment?: string } | undefined {
  const name = expr.attrs.get(NFTA_MATCH_NAME);
  const rev = u32(expr, NFTA_MATCH_REV);
  const info = expr.attrs.get(NFTA_MATCH_INFO);
  if (name === undefined || info === undefined) return undefined;
  switch (`${readString(name)} ${rev}`) {
    case "comment 0": {
      if (info.byteLength !== XT_COMMENT_INFO_SIZE) return undefined;
      const comment = readString(info);
      return { args: commentMatch(comment), comment };
    }
    case "conntrack 3": {
      const args = info.byteLength === XT_CONNTRACK_MTINFO3_SIZE ? ctstateArgs(info) : undefined;
      return args === undefined ? undefined : { args };
    }
    case "multiport 1": {
      const args = multiportArgs(info);
      return args === undefined ? undefined : { args };
    }
    case "addrtype 1": {
      const args = addrtypeArgs(info);
      return args === undefined ? undefined : { args };
    }
    default:
      return undefined;
  }
}

/** `-j …` from an x_tables target iptables-nft wrote (xt-info.ts). */
function xtTarget(family: IPFamily, expr: NftExpr): string[] | undefined {
  const name = expr.attrs.get(NFTA_TARGET_NAME);
  const info = expr.attrs.get(NFTA_TARGET_INFO);
  return name === undefined || info === undefined ? undefined : xtTargetArgs(family, readString(name), u32(expr, NFTA_TARGET_REV), info);
}

/** `-j …` or `-g …` from the rule's verdict. */
function targetArgs(expr: NftExpr): string[] | undefined {
  const v = immediateVerdict(expr);
  if (v === undefined) return undefined;
  if (v.code === NF_ACCEPT) return ["-j", "ACCEPT"];
  if (v.code === NF_DROP) return ["-j", "DROP"];
  if (v.code === NFT_RETURN) return ["-j", "RETURN"];
  if (v.chain !== undefined && v.code === NFT_JUMP) return ["-j", v.chain];
  if (v.chain !== undefined && v.code === NFT_GOTO) return ["-g", v.chain];
  return undefined;
}

/**
 * The arguments `iptables -S` prints for `rule` (without `-A <chain>`), a rule iptables-nft wrote
 * into a table of `family`; undefined when its shape is not one of those above.
 */
export function iptablesArgs(family: IPFamily, rule: NftRule): string[] | undefined {
  const addresses: { "-s"?: string[]; "-d"?: string[] } = {};
  let protocol: string[] = [];
  const matches: string[] = [];
  let target: string[] = [];
  let comment: string | undefined;
  const exprs = rule.expressions;
  for (let i = 0; i < exprs.length; i++) {
    const expr = exprs[i]!;
    if (expr.name === "counter") continue;
    if (expr.name === "payload") {
      const a = addressArgs(family, expr, exprs[i + 1]);
      if (a === undefined || addresses[a.flag] !== undefined) return undefined;
      addresses[a.flag] = a.args;
      i++; // the cmp
    } else if (expr.name === "meta" && u32(expr, NFTA_META_KEY) === NFT_META_MARK) {
      const m = markArgs(expr, exprs[i + 1], exprs[i + 2]);
      if (m === undefined) return undefined;
      matches.push(...m.args);
      i += m.took; // the bitwise and the cmp
    } else if (expr.name === "meta") {
      const p = protocolArgs(expr, exprs[i + 1]);
      if (p === undefined || protocol.length > 0) return undefined;
      protocol = p;
      i++; // the cmp
    } else if (expr.name === "match") {
      const m = matchArgs(expr);
      if (m === undefined) return undefined;
      matches.push(...m.args);
      comment ??= m.comment;
    } else if (expr.name === "immediate" && i === exprs.length - 1) {
      const t = targetArgs(expr);
      if (t === undefined) return undefined;
      target = t;
    } else if (expr.name === "target" && i === exprs.length - 1) {
      const t = xtTarget(family, expr);
      if (t === undefined) return undefined;
      target = t;
    } else {
      return undefined;
    }
  }
  // A comment in the user data is read only when it repeats the comment match.
  if (rule.comment !== undefined && rule.comment !== comment) return undefined;
  return [...(addresses["-s"] ?? []), ...(addresses["-d"] ?? []), ...protocol, ...matches, ...target];
}
