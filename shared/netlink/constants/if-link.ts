/**
 * Link attributes and per-kind link data. Provenance: include/uapi/linux/if_link.h and
 * include/uapi/linux/veth.h (Linux 6.18); IFF_* device flags from include/uapi/linux/if.h and
 * IF_OPER_* from the same header. Names verbatim.
 */

// net_device flags (include/uapi/linux/if.h)
export const IFF_UP = 0x1;
export const IFF_BROADCAST = 0x2;
export const IFF_DEBUG = 0x4;
export const IFF_LOOPBACK = 0x8;
export const IFF_POINTOPOINT = 0x10;
export const IFF_NOTRAILERS = 0x20;
export const IFF_RUNNING = 0x40;
export const IFF_NOARP = 0x80;
export const IFF_PROMISC = 0x100;
export const IFF_ALLMULTI = 0x200;
export const IFF_MASTER = 0x400;
export const IFF_SLAVE = 0x800;
export const IFF_MULTICAST = 0x1000;
export const IFF_PORTSEL = 0x2000;
export const IFF_AUTOMEDIA = 0x4000;
export const IFF_DYNAMIC = 0x8000;
export const IFF_LOWER_UP = 0x10000;
export const IFF_DORMANT = 0x20000;
export const IFF_ECHO = 0x40000;

// RFC 2863 operational status (include/uapi/linux/if.h)
export const IF_OPER_UNKNOWN = 0;
export const IF_OPER_NOTPRESENT = 1;
export const IF_OPER_DOWN = 2;
export const IF_OPER_LOWERLAYERDOWN = 3;
export const IF_OPER_TESTING = 4;
export const IF_OPER_DORMANT = 5;
export const IF_OPER_UP = 6;

// enum IFLA_*
export const IFLA_UNSPEC = 0;
export const IFLA_ADDRESS = 1;
export const IFLA_BROADCAST = 2;
export const IFLA_IFNAME = 3;
export const IFLA_MTU = 4;
export const IFLA_LINK = 5;
export const IFLA_QDISC = 6;
export const IFLA_STATS = 7;
export const IFLA_COST = 8;
export const IFLA_PRIORITY = 9;
export const IFLA_MASTER = 10;
export const IFLA_WIRELESS = 11;
export const IFLA_PROTINFO = 12;
export const IFLA_TXQLEN = 13;
export const IFLA_MAP = 14;
export const IFLA_WEIGHT = 15;
export const IFLA_OPERSTATE = 16;
export const IFLA_LINKMODE = 17;
export const IFLA_LINKINFO = 18;
export const IFLA_NET_NS_PID = 19;
export const IFLA_IFALIAS = 20;
export const IFLA_NUM_VF = 21;
export const IFLA_VFINFO_LIST = 22;
export const IFLA_STATS64 = 23;
export const IFLA_VF_PORTS = 24;
export const IFLA_PORT_SELF = 25;
export const IFLA_AF_SPEC = 26;
export const IFLA_GROUP = 27;
export const IFLA_NET_NS_FD = 28;
export const IFLA_EXT_MASK = 29;
export const IFLA_PROMISCUITY = 30;
export const IFLA_NUM_TX_QUEUES = 31;
export const IFLA_NUM_RX_QUEUES = 32;
export const IFLA_CARRIER = 33;
export const IFLA_PHYS_PORT_ID = 34;
export const IFLA_CARRIER_CHANGES = 35;
export const IFLA_PHYS_SWITCH_ID = 36;
export const IFLA_LINK_NETNSID = 37;
export const IFLA_PHYS_PORT_NAME = 38;
export const IFLA_PROTO_DOWN = 39;
export const IFLA_GSO_MAX_SEGS = 40;
export const IFLA_GSO_MAX_SIZE = 41;
export const IFLA_PAD = 42;
export const IFLA_XDP = 43;
export const IFLA_EVENT = 44;
export const IFLA_NEW_NETNSID = 45;
export const IFLA_IF_NETNSID = 46;
export const IFLA_TARGET_NETNSID = IFLA_IF_NETNSID;
export const IFLA_CARRIER_UP_COUNT = 47;
export const IFLA_CARRIER_DOWN_COUNT = 48;
export const IFLA_NEW_IFINDEX = 49;
export const IFLA_MIN_MTU = 50;
export const IFLA_MAX_MTU = 51;
export const IFLA_PROP_LIST = 52;
export const IFLA_ALT_IFNAME = 53;
export const IFLA_PERM_ADDRESS = 54;
export const IFLA_PROTO_DOWN_REASON = 55;
export const IFLA_PARENT_DEV_NAME = 56;
export const IFLA_PARENT_DEV_BUS_NAME = 57;
export const IFLA_GRO_MAX_SIZE = 58;
export const IFLA_TSO_MAX_SIZE = 59;
export const IFLA_TSO_MAX_SEGS = 60;
export const IFLA_ALLMULTI = 61;

// IFLA_LINKINFO nested attributes
export const IFLA_INFO_UNSPEC = 0;
export const IFLA_INFO_KIND = 1;
export const IFLA_INFO_DATA = 2;
export const IFLA_INFO_XSTATS = 3;
export const IFLA_INFO_SLAVE_KIND = 4;
export const IFLA_INFO_SLAVE_DATA = 5;

// veth (include/uapi/linux/veth.h)
export const VETH_INFO_UNSPEC = 0;
export const VETH_INFO_PEER = 1;

// Bridge IFLA_INFO_DATA
export const IFLA_BR_UNSPEC = 0;
export const IFLA_BR_FORWARD_DELAY = 1;
export const IFLA_BR_HELLO_TIME = 2;
export const IFLA_BR_MAX_AGE = 3;
export const IFLA_BR_AGEING_TIME = 4;
export const IFLA_BR_STP_STATE = 5;
export const IFLA_BR_PRIORITY = 6;
export const IFLA_BR_VLAN_FILTERING = 7;
export const IFLA_BR_VLAN_PROTOCOL = 8;
export const IFLA_BR_GROUP_FWD_MASK = 9;
export const IFLA_BR_MCAST_SNOOPING = 23;
export const IFLA_BR_VLAN_DEFAULT_PVID = 39;

// Bridge port attributes (IFLA_PROTINFO for AF_BRIDGE, IFLA_INFO_SLAVE_DATA)
export const IFLA_BRPORT_UNSPEC = 0;
export const IFLA_BRPORT_STATE = 1;
export const IFLA_BRPORT_PRIORITY = 2;
export const IFLA_BRPORT_COST = 3;
export const IFLA_BRPORT_MODE = 4;
export const IFLA_BRPORT_GUARD = 5;
export const IFLA_BRPORT_PROTECT = 6;
export const IFLA_BRPORT_FAST_LEAVE = 7;
export const IFLA_BRPORT_LEARNING = 8;
export const IFLA_BRPORT_UNICAST_FLOOD = 9;
export const IFLA_BRPORT_PROXYARP = 10;
export const IFLA_BRPORT_ISOLATED = 33;

// macvlan IFLA_INFO_DATA
export const IFLA_MACVLAN_UNSPEC = 0;
export const IFLA_MACVLAN_MODE = 1;
export const IFLA_MACVLAN_FLAGS = 2;
export const IFLA_MACVLAN_MACADDR_MODE = 3;
export const IFLA_MACVLAN_MACADDR = 4;
export const IFLA_MACVLAN_MACADDR_DATA = 5;
export const IFLA_MACVLAN_MACADDR_COUNT = 6;
export const IFLA_MACVLAN_BC_QUEUE_LEN = 7;
export const IFLA_MACVLAN_BC_QUEUE_LEN_USED = 8;
export const IFLA_MACVLAN_BC_CUTOFF = 9;

// enum macvlan_mode
export const MACVLAN_MODE_PRIVATE = 1;
export const MACVLAN_MODE_VEPA = 2;
export const MACVLAN_MODE_BRIDGE = 4;
export const MACVLAN_MODE_PASSTHRU = 8;
export const MACVLAN_MODE_SOURCE = 16;

// ipvlan IFLA_INFO_DATA
export const IFLA_IPVLAN_UNSPEC = 0;
export const IFLA_IPVLAN_MODE = 1;
export const IFLA_IPVLAN_FLAGS = 2;

// enum ipvlan_mode
export const IPVLAN_MODE_L2 = 0;
export const IPVLAN_MODE_L3 = 1;
export const IPVLAN_MODE_L3S = 2;
export const IPVLAN_F_PRIVATE = 0x01;
export const IPVLAN_F_VEPA = 0x02;

// 802.1Q vlan IFLA_INFO_DATA
export const IFLA_VLAN_UNSPEC = 0;
export const IFLA_VLAN_ID = 1;
export const IFLA_VLAN_FLAGS = 2;
export const IFLA_VLAN_EGRESS_QOS = 3;
export const IFLA_VLAN_INGRESS_QOS = 4;
export const IFLA_VLAN_PROTOCOL = 5;

// VRF IFLA_INFO_DATA
export const IFLA_VRF_UNSPEC = 0;
export const IFLA_VRF_TABLE = 1;
