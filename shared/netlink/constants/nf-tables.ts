/**
 * nf_tables (nftables over nfnetlink) constants. Provenance:
 * include/uapi/linux/netfilter/nf_tables.h and include/uapi/linux/netfilter.h (Linux 6.18), and
 * libnftnl's include/libnftnl/udata.h for the rule user-data TLV types nft and iptables-nft write;
 * names verbatim.
 */

// enum nf_tables_msg_types
export const NFT_MSG_NEWTABLE = 0;
export const NFT_MSG_GETTABLE = 1;
export const NFT_MSG_DELTABLE = 2;
export const NFT_MSG_NEWCHAIN = 3;
export const NFT_MSG_GETCHAIN = 4;
export const NFT_MSG_DELCHAIN = 5;
export const NFT_MSG_NEWRULE = 6;
export const NFT_MSG_GETRULE = 7;
export const NFT_MSG_DELRULE = 8;
/** Announces a new ruleset generation: the end of one committed batch (events only). */
export const NFT_MSG_NEWGEN = 15;
/** Kernel 6.3+ requests that delete without failing on a missing object; notified like the DEL ones where a kernel reports them as such. */
export const NFT_MSG_DESTROYTABLE = 26;
export const NFT_MSG_DESTROYCHAIN = 27;
export const NFT_MSG_DESTROYRULE = 28;

// enum nft_table_attributes
export const NFTA_TABLE_NAME = 1;

// enum nft_chain_attributes
export const NFTA_CHAIN_TABLE = 1;
export const NFTA_CHAIN_HANDLE = 2;
export const NFTA_CHAIN_NAME = 3;

// enum nft_rule_attributes
export const NFTA_RULE_TABLE = 1;
export const NFTA_RULE_CHAIN = 2;
export const NFTA_RULE_HANDLE = 3;
export const NFTA_RULE_EXPRESSIONS = 4;
export const NFTA_RULE_USERDATA = 7;

// enum nft_list_attributes, nft_expr_attributes
export const NFTA_LIST_ELEM = 1;
export const NFTA_EXPR_NAME = 1;
export const NFTA_EXPR_DATA = 2;

// enum nft_immediate_attributes, nft_data_attributes, nft_verdict_attributes
export const NFTA_IMMEDIATE_DREG = 1;
export const NFTA_IMMEDIATE_DATA = 2;
export const NFTA_DATA_VERDICT = 2;
export const NFTA_VERDICT_CODE = 1;
export const NFTA_VERDICT_CHAIN = 2;

// enum nft_registers, enum nft_verdicts (as signed 32-bit values)
export const NFT_REG_VERDICT = 0;
export const NFT_REG_1 = 1;
export const NFT_JUMP = -3;
export const NFT_GOTO = -4;
export const NFT_RETURN = -5;

// include/uapi/linux/netfilter.h: the verdicts a rule's `immediate` may also carry.
export const NF_DROP = 0;
export const NF_ACCEPT = 1;

// enum nft_payload_attributes, enum nft_payload_bases
export const NFTA_PAYLOAD_DREG = 1;
export const NFTA_PAYLOAD_BASE = 2;
export const NFTA_PAYLOAD_OFFSET = 3;
export const NFTA_PAYLOAD_LEN = 4;
export const NFT_PAYLOAD_NETWORK_HEADER = 1;

// enum nft_cmp_attributes, enum nft_cmp_ops, and NFTA_DATA_VALUE of enum nft_data_attributes
export const NFTA_CMP_SREG = 1;
export const NFTA_CMP_OP = 2;
export const NFTA_CMP_DATA = 3;
export const NFT_CMP_EQ = 0;
export const NFT_CMP_NEQ = 1;
export const NFTA_DATA_VALUE = 1;

// enum nft_match_attributes (nft_compat: an x_tables match inside a rule, as iptables-nft writes `-m`)
export const NFTA_MATCH_NAME = 1;
export const NFTA_MATCH_REV = 2;
export const NFTA_MATCH_INFO = 3;

// include/uapi/linux/netfilter.h: the nfgen_family of nf_tables messages.
/** An nft family name (`nft list table <family> …`). */
export type NftFamilyName = "ip" | "ip6" | "inet" | "arp" | "bridge" | "netdev";

export const NFPROTO_UNSPEC = 0;
export const NFPROTO_INET = 1;
export const NFPROTO_IPV4 = 2;
export const NFPROTO_ARP = 3;
export const NFPROTO_NETDEV = 5;
export const NFPROTO_BRIDGE = 7;
export const NFPROTO_IPV6 = 10;

/**
 * enum nftnl_udata_rule_types: the TLV in NFTA_RULE_USERDATA holding a rule's comment
 * (`comment "…"` in nft; `-m comment --comment` in iptables-nft), NUL-terminated.
 * A TLV is `u8 type, u8 len, value[len]`, unaligned.
 */
export const NFTNL_UDATA_RULE_COMMENT = 0;

const NFT_MSG_NAMES: Readonly<Record<number, string>> = {
  [NFT_MSG_NEWTABLE]: "NFT_MSG_NEWTABLE", [NFT_MSG_GETTABLE]: "NFT_MSG_GETTABLE", [NFT_MSG_DELTABLE]: "NFT_MSG_DELTABLE",
  [NFT_MSG_NEWCHAIN]: "NFT_MSG_NEWCHAIN", [NFT_MSG_GETCHAIN]: "NFT_MSG_GETCHAIN", [NFT_MSG_DELCHAIN]: "NFT_MSG_DELCHAIN",
  [NFT_MSG_NEWRULE]: "NFT_MSG_NEWRULE", [NFT_MSG_GETRULE]: "NFT_MSG_GETRULE", [NFT_MSG_DELRULE]: "NFT_MSG_DELRULE",
  [NFT_MSG_NEWGEN]: "NFT_MSG_NEWGEN",
  [NFT_MSG_DESTROYTABLE]: "NFT_MSG_DESTROYTABLE", [NFT_MSG_DESTROYCHAIN]: "NFT_MSG_DESTROYCHAIN", [NFT_MSG_DESTROYRULE]: "NFT_MSG_DESTROYRULE",
};

/** The name of an nf_tables message command (the low byte of nlmsg_type). */
export function nftMsgName(cmd: number): string {
  return NFT_MSG_NAMES[cmd] ?? `NFT_MSG_${cmd}`;
}

/** include/uapi/linux/netfilter/nf_tables.h: enum nft_meta_attributes, and the key NFT_META_L4PROTO of enum nft_meta_keys. */
export const NFTA_META_DREG = 1;
export const NFTA_META_KEY = 2;
export const NFT_META_L4PROTO = 16;
/** enum nft_meta_keys: the packet's mark (`-m mark` in iptables-nft). */
export const NFT_META_MARK = 3;

/** include/uapi/linux/netfilter/nf_tables.h: enum nft_bitwise_attributes, and NFT_BITWISE_BOOL of enum nft_bitwise_ops. */
export const NFTA_BITWISE_SREG = 1;
export const NFTA_BITWISE_DREG = 2;
export const NFTA_BITWISE_LEN = 3;
export const NFTA_BITWISE_MASK = 4;
export const NFTA_BITWISE_XOR = 5;
export const NFTA_BITWISE_OP = 6;
export const NFT_BITWISE_BOOL = 0;

/** include/uapi/linux/netfilter/nf_tables.h: enum nft_target_attributes (an x_tables target, as iptables-nft writes one). */
export const NFTA_TARGET_NAME = 1;
export const NFTA_TARGET_REV = 2;
export const NFTA_TARGET_INFO = 3;
