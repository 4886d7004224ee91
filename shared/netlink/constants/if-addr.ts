/**
 * Interface address attributes and flags. Provenance: include/uapi/linux/if_addr.h (Linux 6.18),
 * names verbatim.
 */

export const IFA_UNSPEC = 0;
export const IFA_ADDRESS = 1;
export const IFA_LOCAL = 2;
export const IFA_LABEL = 3;
export const IFA_BROADCAST = 4;
export const IFA_ANYCAST = 5;
export const IFA_CACHEINFO = 6;
export const IFA_MULTICAST = 7;
export const IFA_FLAGS = 8;
export const IFA_RT_PRIORITY = 9;
export const IFA_TARGET_NETNSID = 10;
export const IFA_PROTO = 11;

// ifa_flags
export const IFA_F_SECONDARY = 0x01;
export const IFA_F_TEMPORARY = IFA_F_SECONDARY;
export const IFA_F_NODAD = 0x02;
export const IFA_F_OPTIMISTIC = 0x04;
export const IFA_F_DADFAILED = 0x08;
export const IFA_F_HOMEADDRESS = 0x10;
export const IFA_F_DEPRECATED = 0x20;
export const IFA_F_TENTATIVE = 0x40;
export const IFA_F_PERMANENT = 0x80;
export const IFA_F_MANAGETEMPADDR = 0x100;
export const IFA_F_NOPREFIXROUTE = 0x200;
export const IFA_F_MCAUTOJOIN = 0x400;
export const IFA_F_STABLE_PRIVACY = 0x800;
