/**
 * Classifier (filter) and generic action constants.
 * Provenance: include/uapi/linux/pkt_cls.h (Linux 6.18), names verbatim; ETH_P_ALL from
 * include/uapi/linux/if_ether.h (the filter protocol "all").
 */

/** Every protocol (`tc filter ... protocol all`); sent in network byte order in tcm_info. */
export const ETH_P_ALL = 0x0003;
export const ETH_P_IP = 0x0800;
export const ETH_P_IPV6 = 0x86dd;

// ---- action verdicts (TC_ACT_*) ---------------------------------------------------------------
export const TC_ACT_UNSPEC = -1;
export const TC_ACT_OK = 0;
export const TC_ACT_RECLASSIFY = 1;
export const TC_ACT_SHOT = 2;
export const TC_ACT_PIPE = 3;
export const TC_ACT_STOLEN = 4;
export const TC_ACT_QUEUED = 5;
export const TC_ACT_REPEAT = 6;
export const TC_ACT_REDIRECT = 7;
export const TC_ACT_TRAP = 8;

// ---- action attributes (TCA_ACT_*) ------------------------------------------------------------
export const TCA_ACT_UNSPEC = 0;
export const TCA_ACT_KIND = 1;
export const TCA_ACT_OPTIONS = 2;
export const TCA_ACT_INDEX = 3;
export const TCA_ACT_STATS = 4;
export const TCA_ACT_PAD = 5;
export const TCA_ACT_COOKIE = 6;
export const TCA_ACT_FLAGS = 7;
export const TCA_ACT_HW_STATS = 8;
export const TCA_ACT_USED_HW_STATS = 9;
export const TCA_ACT_IN_HW_COUNT = 10;

// ---- u32 classifier ---------------------------------------------------------------------------
export const TCA_U32_UNSPEC = 0;
export const TCA_U32_CLASSID = 1;
export const TCA_U32_HASH = 2;
export const TCA_U32_LINK = 3;
export const TCA_U32_DIVISOR = 4;
export const TCA_U32_SEL = 5;
export const TCA_U32_POLICE = 6;
export const TCA_U32_ACT = 7;
export const TCA_U32_INDEV = 8;
export const TCA_U32_PCNT = 9;
export const TCA_U32_MARK = 10;
export const TCA_U32_FLAGS = 11;
export const TCA_U32_PAD = 12;

/** struct tc_u32_sel flags. */
export const TC_U32_TERMINAL = 1;
export const TC_U32_OFFSET = 2;
export const TC_U32_VAROFFSET = 4;
export const TC_U32_EAT = 8;

/** sizeof(struct tc_u32_sel) without keys: flags, offshift, nkeys, pad (u8), offmask (be16), off (u16), offoff, hoff (i16), hmask (be32). */
export const TC_U32_SEL_SIZE = 16;
/** sizeof(struct tc_u32_key): mask, val (be32), off, offmask (i32). */
export const TC_U32_KEY_SIZE = 16;
