/**
 * ctnetlink (conntrack over nfnetlink) constants. Provenance:
 * include/uapi/linux/netfilter/nfnetlink_conntrack.h (Linux 6.18), names verbatim.
 */

// enum cntl_msg_types
export const IPCTNL_MSG_CT_NEW = 0;
export const IPCTNL_MSG_CT_GET = 1;
export const IPCTNL_MSG_CT_DELETE = 2;

// enum ctattr_type
export const CTA_TUPLE_ORIG = 1;
export const CTA_TUPLE_REPLY = 2;
export const CTA_STATUS = 3;
export const CTA_TIMEOUT = 7;
export const CTA_MARK = 8;
export const CTA_ID = 12;
export const CTA_ZONE = 18;

// enum ctattr_tuple
export const CTA_TUPLE_IP = 1;
export const CTA_TUPLE_PROTO = 2;
export const CTA_TUPLE_ZONE = 3;

// enum ctattr_ip
export const CTA_IP_V4_SRC = 1;
export const CTA_IP_V4_DST = 2;
export const CTA_IP_V6_SRC = 3;
export const CTA_IP_V6_DST = 4;

// enum ctattr_l4proto
export const CTA_PROTO_NUM = 1;
export const CTA_PROTO_SRC_PORT = 2;
export const CTA_PROTO_DST_PORT = 3;

/** IP protocol numbers (include/uapi/linux/in.h). */
export const IPPROTO_TCP = 6;
export const IPPROTO_UDP = 17;
export const IPPROTO_SCTP = 132;
