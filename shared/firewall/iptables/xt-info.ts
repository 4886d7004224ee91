/**
 * x_tables extensions that iptables-nft keeps as blobs (a `match` or `target` expression holding
 * the extension's name, revision and info struct) and that nft-rules.ts reads for the plugins'
 * rules beyond the comment, multiport and conntrack matches: the arguments `iptables -S` prints
 * for them, as the extension's own save function writes them, or undefined for any field this
 * module does not read (the caller then goes the tool's way). Info structs are in host order.
 *
 *   -m addrtype [!] --src-type T,… [!] --dst-type T,… [--limit-iface-in|--limit-iface-out]
 *                            match addrtype rev 1 (struct xt_addrtype_info_v1)
 *   -j MARK --set-xmark V/M  target MARK rev 2 (struct xt_mark_tginfo2)
 *   -j MASQUERADE            target MASQUERADE rev 0, IPv4 (struct nf_nat_ipv4_multi_range_compat),
 *                            no --to-ports, no --random
 */
import { readU16, readU32 } from "../../netlink/codec.ts";
import type { IPFamily } from "../../ip/addr.ts";

/**
 * include/uapi/linux/netfilter/xt_addrtype.h: struct xt_addrtype_info_v1 { __u16 source; __u16
 * dest; __u32 flags; }, the address types (enum XT_ADDRTYPE_*, bit i for the i-th name below, the
 * order libxt_addrtype prints them in) and the flags XT_ADDRTYPE_INVERT_SOURCE 0x1,
 * XT_ADDRTYPE_INVERT_DEST 0x2, XT_ADDRTYPE_LIMIT_IFACE_IN 0x4, XT_ADDRTYPE_LIMIT_IFACE_OUT 0x8.
 */
const XT_ADDRTYPE_INFO_V1_SIZE = 8;
const ADDRTYPE_NAMES = ["UNSPEC", "UNICAST", "LOCAL", "BROADCAST", "ANYCAST", "MULTICAST", "BLACKHOLE", "UNREACHABLE", "PROHIBIT", "THROW", "NAT", "XRESOLVE"] as const;
const XT_ADDRTYPE_INVERT_SOURCE = 0x1;
const XT_ADDRTYPE_INVERT_DEST = 0x2;
const XT_ADDRTYPE_LIMIT_IFACE_IN = 0x4;
const XT_ADDRTYPE_LIMIT_IFACE_OUT = 0x8;

/** include/uapi/linux/netfilter/xt_mark.h: struct xt_mark_tginfo2 { __u32 mark, mask; }. */
const XT_MARK_TGINFO2_SIZE = 8;

/**
 * include/uapi/linux/netfilter/nf_nat.h: struct nf_nat_ipv4_multi_range_compat { unsigned int
 * rangesize; struct nf_nat_ipv4_range range[1]; }, a range being { unsigned int flags; __be32
 * min_ip, max_ip; union nf_conntrack_man_proto min, max; } (4 + 20 bytes). MASQUERADE without
 * options is rangesize 1 and a range of zeros.
 */
const NF_NAT_IPV4_MULTI_RANGE_COMPAT_SIZE = 24;

/** `T,T,…` from a bit set of address types; undefined for a bit past XRESOLVE. */
function addressTypes(bits: number): string | undefined {
  if (bits >> ADDRTYPE_NAMES.length !== 0) return undefined;
  return ADDRTYPE_NAMES.filter((_, i) => (bits & (1 << i)) !== 0).join(",");
}

/** `-m addrtype …` from an addrtype rev 1 blob. */
export function addrtypeArgs(info: Uint8Array): string[] | undefined {
  if (info.byteLength !== XT_ADDRTYPE_INFO_V1_SIZE) return undefined;
  const source = readU16(info, 0);
  const dest = readU16(info, 2);
  const flags = readU32(info, 4);
  const known = XT_ADDRTYPE_INVERT_SOURCE | XT_ADDRTYPE_INVERT_DEST | XT_ADDRTYPE_LIMIT_IFACE_IN | XT_ADDRTYPE_LIMIT_IFACE_OUT;
  if ((flags & ~known) !== 0) return undefined;
  const args = ["-m", "addrtype"];
  for (const [bits, invert, option] of [
    [source, XT_ADDRTYPE_INVERT_SOURCE, "--src-type"],
    [dest, XT_ADDRTYPE_INVERT_DEST, "--dst-type"],
  ] as const) {
    if (bits === 0) continue;
    const types = addressTypes(bits);
    if (types === undefined) return undefined;
    if ((flags & invert) !== 0) args.push("!");
    args.push(option, types);
  }
  if ((flags & XT_ADDRTYPE_LIMIT_IFACE_IN) !== 0) args.push("--limit-iface-in");
  if ((flags & XT_ADDRTYPE_LIMIT_IFACE_OUT) !== 0) args.push("--limit-iface-out");
  return args;
}

/** `0x…` as the iptables extensions print a mark or mask. */
export function hexMark(value: number): string {
  return `0x${value.toString(16)}`;
}

/** `-j …` from the x_tables target `name` revision `rev` with `info`, in a table of `family`. */
export function xtTargetArgs(family: IPFamily, name: string, rev: number | undefined, info: Uint8Array): string[] | undefined {
  if (name === "MARK" && rev === 2 && info.byteLength === XT_MARK_TGINFO2_SIZE) {
    return ["-j", "MARK", "--set-xmark", `${hexMark(readU32(info, 0))}/${hexMark(readU32(info, 4))}`];
  }
  if (name === "MASQUERADE" && rev === 0 && family === 4 && info.byteLength === NF_NAT_IPV4_MULTI_RANGE_COMPAT_SIZE) {
    if (readU32(info, 0) !== 1 || info.subarray(4).some((b) => b !== 0)) return undefined;
    return ["-j", "MASQUERADE"];
  }
  return undefined;
}
