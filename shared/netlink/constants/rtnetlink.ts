/**
 * rtnetlink message types, route attributes and route enums.
 * Provenance: include/uapi/linux/rtnetlink.h (Linux 6.18), names verbatim.
 */

// Message types
export const RTM_NEWLINK = 16;
export const RTM_DELLINK = 17;
export const RTM_GETLINK = 18;
export const RTM_SETLINK = 19;
export const RTM_NEWADDR = 20;
export const RTM_DELADDR = 21;
export const RTM_GETADDR = 22;
export const RTM_NEWROUTE = 24;
export const RTM_DELROUTE = 25;
export const RTM_GETROUTE = 26;
export const RTM_NEWNEIGH = 28;
export const RTM_DELNEIGH = 29;
export const RTM_GETNEIGH = 30;
export const RTM_NEWRULE = 32;
export const RTM_DELRULE = 33;
export const RTM_GETRULE = 34;
export const RTM_NEWQDISC = 36;
export const RTM_DELQDISC = 37;
export const RTM_GETQDISC = 38;
export const RTM_NEWTCLASS = 40;
export const RTM_DELTCLASS = 41;
export const RTM_GETTCLASS = 42;
export const RTM_NEWTFILTER = 44;
export const RTM_DELTFILTER = 45;
export const RTM_GETTFILTER = 46;
export const RTM_NEWNSID = 88;
export const RTM_DELNSID = 89;
export const RTM_GETNSID = 90;

/** Name of an RTM_* message type, for error messages. */
export function rtmName(type: number): string {
  return RTM_NAMES[type] ?? `RTM_${type}`;
}
const RTM_NAMES: Readonly<Record<number, string>> = {
  16: "RTM_NEWLINK", 17: "RTM_DELLINK", 18: "RTM_GETLINK", 19: "RTM_SETLINK",
  20: "RTM_NEWADDR", 21: "RTM_DELADDR", 22: "RTM_GETADDR",
  24: "RTM_NEWROUTE", 25: "RTM_DELROUTE", 26: "RTM_GETROUTE",
  28: "RTM_NEWNEIGH", 29: "RTM_DELNEIGH", 30: "RTM_GETNEIGH",
  32: "RTM_NEWRULE", 33: "RTM_DELRULE", 34: "RTM_GETRULE",
  36: "RTM_NEWQDISC", 37: "RTM_DELQDISC", 38: "RTM_GETQDISC",
  40: "RTM_NEWTCLASS", 41: "RTM_DELTCLASS", 42: "RTM_GETTCLASS",
  44: "RTM_NEWTFILTER", 45: "RTM_DELTFILTER", 46: "RTM_GETTFILTER",
  88: "RTM_NEWNSID", 89: "RTM_DELNSID", 90: "RTM_GETNSID",
};

// rtm_type
export const RTN_UNSPEC = 0;
export const RTN_UNICAST = 1;
export const RTN_LOCAL = 2;
export const RTN_BROADCAST = 3;
export const RTN_ANYCAST = 4;
export const RTN_MULTICAST = 5;
export const RTN_BLACKHOLE = 6;
export const RTN_UNREACHABLE = 7;
export const RTN_PROHIBIT = 8;
export const RTN_THROW = 9;
export const RTN_NAT = 10;
export const RTN_XRESOLVE = 11;

// rtm_protocol
export const RTPROT_UNSPEC = 0;
export const RTPROT_REDIRECT = 1;
export const RTPROT_KERNEL = 2;
export const RTPROT_BOOT = 3;
export const RTPROT_STATIC = 4;
export const RTPROT_RA = 9;
export const RTPROT_DHCP = 16;

// rtm_scope (enum rt_scope_t)
export const RT_SCOPE_UNIVERSE = 0;
export const RT_SCOPE_SITE = 200;
export const RT_SCOPE_LINK = 253;
export const RT_SCOPE_HOST = 254;
export const RT_SCOPE_NOWHERE = 255;

// rtm_flags
export const RTM_F_NOTIFY = 0x100;
export const RTM_F_CLONED = 0x200;
export const RTM_F_EQUALIZE = 0x400;
export const RTM_F_PREFIX = 0x800;
export const RTM_F_LOOKUP_TABLE = 0x1000;
export const RTM_F_FIB_MATCH = 0x2000;
export const RTM_F_OFFLOAD = 0x4000;
export const RTM_F_TRAP = 0x8000;

// Reserved table identifiers (enum rt_class_t)
export const RT_TABLE_UNSPEC = 0;
export const RT_TABLE_COMPAT = 252;
export const RT_TABLE_DEFAULT = 253;
export const RT_TABLE_MAIN = 254;
export const RT_TABLE_LOCAL = 255;

// Routing message attributes (enum rtattr_type_t)
export const RTA_UNSPEC = 0;
export const RTA_DST = 1;
export const RTA_SRC = 2;
export const RTA_IIF = 3;
export const RTA_OIF = 4;
export const RTA_GATEWAY = 5;
export const RTA_PRIORITY = 6;
export const RTA_PREFSRC = 7;
export const RTA_METRICS = 8;
export const RTA_MULTIPATH = 9;
export const RTA_PROTOINFO = 10;
export const RTA_FLOW = 11;
export const RTA_CACHEINFO = 12;
export const RTA_SESSION = 13;
export const RTA_MP_ALGO = 14;
export const RTA_TABLE = 15;
export const RTA_MARK = 16;
export const RTA_MFC_STATS = 17;
export const RTA_VIA = 18;
export const RTA_NEWDST = 19;
export const RTA_PREF = 20;
export const RTA_ENCAP_TYPE = 21;
export const RTA_ENCAP = 22;
export const RTA_EXPIRES = 23;
export const RTA_PAD = 24;
export const RTA_UID = 25;
export const RTA_TTL_PROPAGATE = 26;
export const RTA_IP_PROTO = 27;
export const RTA_SPORT = 28;
export const RTA_DPORT = 29;
export const RTA_NH_ID = 30;

// struct rtnexthop: rtnh_flags
export const RTNH_F_DEAD = 1;
export const RTNH_F_PERVASIVE = 2;
export const RTNH_F_ONLINK = 4;
export const RTNH_F_OFFLOAD = 8;
export const RTNH_F_LINKDOWN = 16;
export const RTNH_F_UNRESOLVED = 32;

// RTA_METRICS nested attributes
export const RTAX_UNSPEC = 0;
export const RTAX_LOCK = 1;
export const RTAX_MTU = 2;
export const RTAX_WINDOW = 3;
export const RTAX_RTT = 4;
export const RTAX_RTTVAR = 5;
export const RTAX_SSTHRESH = 6;
export const RTAX_CWND = 7;
export const RTAX_ADVMSS = 8;
export const RTAX_REORDERING = 9;
export const RTAX_HOPLIMIT = 10;
export const RTAX_INITCWND = 11;
export const RTAX_FEATURES = 12;
export const RTAX_RTO_MIN = 13;
export const RTAX_INITRWND = 14;
export const RTAX_QUICKACK = 15;
export const RTAX_CC_ALGO = 16;
export const RTAX_FASTOPEN_NO_COOKIE = 17;

// RTEXT_FILTER_* for IFLA_EXT_MASK
export const RTEXT_FILTER_VF = 1 << 0;
export const RTEXT_FILTER_BRVLAN = 1 << 1;
export const RTEXT_FILTER_BRVLAN_COMPRESSED = 1 << 2;
export const RTEXT_FILTER_SKIP_STATS = 1 << 3;

/** sizeof(struct rtmsg) */
export const RTMSG_SIZE = 12;
/** sizeof(struct rtnexthop) */
export const RTNEXTHOP_SIZE = 8;
/** sizeof(struct ifinfomsg) */
export const IFINFOMSG_SIZE = 16;
/** sizeof(struct ifaddrmsg) */
export const IFADDRMSG_SIZE = 8;
