/**
 * HTB (hierarchical token bucket) qdisc and class constants.
 * Provenance: include/uapi/linux/pkt_sched.h (Linux 6.18), names verbatim.
 */

export const TCA_HTB_UNSPEC = 0;
export const TCA_HTB_PARMS = 1;
export const TCA_HTB_INIT = 2;
export const TCA_HTB_CTAB = 3;
export const TCA_HTB_RTAB = 4;
export const TCA_HTB_DIRECT_QLEN = 5;
export const TCA_HTB_RATE64 = 6;
export const TCA_HTB_CEIL64 = 7;
export const TCA_HTB_PAD = 8;
export const TCA_HTB_OFFLOAD = 9;

/** The HTB protocol version tc announces in struct tc_htb_glob. */
export const TC_HTB_PROTOVER = 3;
export const TC_HTB_NUMPRIO = 8;
export const TC_HTB_MAXDEPTH = 8;

/** sizeof(struct tc_htb_glob): version, rate2quantum, defcls, debug, direct_pkts (u32 each). */
export const TC_HTB_GLOB_SIZE = 20;
/** sizeof(struct tc_htb_opt): rate, ceil (tc_ratespec), buffer, cbuffer, quantum, level, prio (u32). */
export const TC_HTB_OPT_SIZE = 2 * 12 + 5 * 4;
