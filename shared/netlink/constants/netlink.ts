/**
 * Netlink protocol constants. Provenance: include/uapi/linux/netlink.h (Linux 6.18), names verbatim.
 */

export const NETLINK_ROUTE = 0;

/** Socket option level for netlink options (include/linux/socket.h). */
export const SOL_NETLINK = 270;

// setsockopt(SOL_NETLINK, ...) options
export const NETLINK_ADD_MEMBERSHIP = 1;
export const NETLINK_DROP_MEMBERSHIP = 2;
export const NETLINK_PKTINFO = 3;
export const NETLINK_BROADCAST_ERROR = 4;
export const NETLINK_NO_ENOBUFS = 5;
export const NETLINK_LISTEN_ALL_NSID = 8;
export const NETLINK_CAP_ACK = 10;
export const NETLINK_EXT_ACK = 11;
export const NETLINK_GET_STRICT_CHK = 12;

// struct nlmsghdr: nlmsg_flags
export const NLM_F_REQUEST = 0x01;
export const NLM_F_MULTI = 0x02;
export const NLM_F_ACK = 0x04;
export const NLM_F_ECHO = 0x08;
export const NLM_F_DUMP_INTR = 0x10;
export const NLM_F_DUMP_FILTERED = 0x20;
// Modifiers to GET request
export const NLM_F_ROOT = 0x100;
export const NLM_F_MATCH = 0x200;
export const NLM_F_ATOMIC = 0x400;
export const NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH;
// Modifiers to NEW request
export const NLM_F_REPLACE = 0x100;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;
export const NLM_F_APPEND = 0x800;
// Modifiers to DELETE request
export const NLM_F_NONREC = 0x100;
export const NLM_F_BULK = 0x200;
// Flags for ACK message
export const NLM_F_CAPPED = 0x100;
export const NLM_F_ACK_TLVS = 0x200;

// Reserved control message types
export const NLMSG_NOOP = 0x1;
export const NLMSG_ERROR = 0x2;
export const NLMSG_DONE = 0x3;
export const NLMSG_OVERRUN = 0x4;
export const NLMSG_MIN_TYPE = 0x10;

/** sizeof(struct nlmsghdr) */
export const NLMSG_HDRLEN = 16;
export const NLMSG_ALIGNTO = 4;
/** sizeof(struct nlattr) */
export const NLA_HDRLEN = 4;
export const NLA_ALIGNTO = 4;

// struct nlattr: nla_type high bits
export const NLA_F_NESTED = 1 << 15;
export const NLA_F_NET_BYTEORDER = 1 << 14;
export const NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;

// enum nlmsgerr_attrs: TLVs after struct nlmsgerr when NLM_F_ACK_TLVS is set
export const NLMSGERR_ATTR_UNUSED = 0;
export const NLMSGERR_ATTR_MSG = 1;
export const NLMSGERR_ATTR_OFFS = 2;
export const NLMSGERR_ATTR_COOKIE = 3;
export const NLMSGERR_ATTR_POLICY = 4;
export const NLMSGERR_ATTR_MISS_TYPE = 5;
export const NLMSGERR_ATTR_MISS_NEST = 6;
