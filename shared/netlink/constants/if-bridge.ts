/**
 * Bridge netlink constants used by bridge-vlan.ts. Provenance:
 * include/uapi/linux/if_bridge.h (Linux 6.18). Names verbatim. (IFLA_BR_* and IFLA_BRPORT_* are in
 * constants/if-link.ts.)
 */

// IFLA_AF_SPEC nested attributes for AF_BRIDGE (enum IFLA_BRIDGE_*)
export const IFLA_BRIDGE_FLAGS = 0;
export const IFLA_BRIDGE_MODE = 1;
export const IFLA_BRIDGE_VLAN_INFO = 2;
export const IFLA_BRIDGE_VLAN_TUNNEL_INFO = 3;
export const IFLA_BRIDGE_MRP = 4;
export const IFLA_BRIDGE_CFM = 5;
export const IFLA_BRIDGE_MST = 6;

// IFLA_BRIDGE_FLAGS values
export const BRIDGE_FLAGS_MASTER = 1;
export const BRIDGE_FLAGS_SELF = 2;

// struct bridge_vlan_info.flags
export const BRIDGE_VLAN_INFO_MASTER = 1 << 0;
export const BRIDGE_VLAN_INFO_PVID = 1 << 1;
export const BRIDGE_VLAN_INFO_UNTAGGED = 1 << 2;
export const BRIDGE_VLAN_INFO_RANGE_BEGIN = 1 << 3;
export const BRIDGE_VLAN_INFO_RANGE_END = 1 << 4;
export const BRIDGE_VLAN_INFO_BRENTRY = 1 << 5;
export const BRIDGE_VLAN_INFO_ONLINK = 1 << 6;

/** sizeof(struct bridge_vlan_info): u16 flags, u16 vid. */
export const BRIDGE_VLAN_INFO_SIZE = 4;
