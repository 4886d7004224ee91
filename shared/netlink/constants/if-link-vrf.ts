/**
 * VRF link attributes (IFLA_INFO_DATA of kind "vrf").
 * Provenance: include/uapi/linux/if_link.h (Linux 6.18), `enum { IFLA_VRF_UNSPEC, IFLA_VRF_TABLE, ... }`,
 * names verbatim. Kept apart from if-link.ts, which belongs to the link layer's owners.
 */
export const IFLA_VRF_UNSPEC = 0;
export const IFLA_VRF_TABLE = 1;
