/**
 * Policy-routing rules: struct fib_rule_hdr, FRA_* attributes and FR_ACT_* actions.
 * Provenance: include/uapi/linux/fib_rules.h (Linux 6.18), names verbatim.
 * The message types RTM_NEWRULE/RTM_DELRULE/RTM_GETRULE are in rtnetlink.ts.
 */

/** sizeof(struct fib_rule_hdr): family, dst_len, src_len, tos, table, res1, res2, action (u8 each), flags (u32). */
export const FIB_RULE_HDR_SIZE = 12;

// fib_rule_hdr.flags
export const FIB_RULE_PERMANENT = 0x00000001;
export const FIB_RULE_INVERT = 0x00000002;
export const FIB_RULE_UNRESOLVED = 0x00000004;
export const FIB_RULE_IIF_DETACHED = 0x00000008;
export const FIB_RULE_OIF_DETACHED = 0x00000010;

// enum (attributes)
export const FRA_UNSPEC = 0;
export const FRA_DST = 1;
export const FRA_SRC = 2;
export const FRA_IIFNAME = 3;
export const FRA_GOTO = 4;
export const FRA_UNUSED2 = 5;
export const FRA_PRIORITY = 6;
export const FRA_UNUSED3 = 7;
export const FRA_UNUSED4 = 8;
export const FRA_UNUSED5 = 9;
export const FRA_FWMARK = 10;
export const FRA_FLOW = 11;
export const FRA_TUN_ID = 12;
export const FRA_SUPPRESS_IFGROUP = 13;
export const FRA_SUPPRESS_PREFIXLEN = 14;
export const FRA_TABLE = 15;
export const FRA_FWMASK = 16;
export const FRA_OIFNAME = 17;
export const FRA_PAD = 18;
export const FRA_L3MDEV = 19;
export const FRA_UID_RANGE = 20;
export const FRA_PROTOCOL = 21;
export const FRA_IP_PROTO = 22;
export const FRA_SPORT_RANGE = 23;
export const FRA_DPORT_RANGE = 24;

// enum (actions)
export const FR_ACT_UNSPEC = 0;
export const FR_ACT_TO_TBL = 1;
export const FR_ACT_GOTO = 2;
export const FR_ACT_NOP = 3;
export const FR_ACT_RES3 = 4;
export const FR_ACT_RES4 = 5;
export const FR_ACT_BLACKHOLE = 6;
export const FR_ACT_UNREACHABLE = 7;
export const FR_ACT_PROHIBIT = 8;
