/**
 * nfnetlink (NETLINK_NETFILTER) constants. Provenance: include/uapi/linux/netlink.h and
 * include/uapi/linux/netfilter/nfnetlink.h (Linux 6.18), names verbatim.
 */

/** Netlink protocol number of the netfilter family (include/uapi/linux/netlink.h). */
export const NETLINK_NETFILTER = 12;

/** struct nfgenmsg version field. */
export const NFNETLINK_V0 = 0;
/** sizeof(struct nfgenmsg): u8 nfgen_family, u8 version, __be16 res_id. */
export const NFGENMSG_SIZE = 4;

// Subsystem ids (the high byte of nlmsg_type).
export const NFNL_SUBSYS_NONE = 0;
export const NFNL_SUBSYS_CTNETLINK = 1;
export const NFNL_SUBSYS_CTNETLINK_EXP = 2;
export const NFNL_SUBSYS_NFTABLES = 10;

/** Batch delimiters (NLMSG_MIN_TYPE and the next type). */
export const NFNL_MSG_BATCH_BEGIN = 0x10;
export const NFNL_MSG_BATCH_END = 0x11;

// enum nfnetlink_groups: multicast groups of NETLINK_NETFILTER.
/** nf_tables change notifications (what `nft monitor` reads). */
export const NFNLGRP_NFTABLES = 7;
