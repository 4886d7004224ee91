/**
 * Traffic-control (qdisc) constants.
 * Provenance: include/uapi/linux/pkt_sched.h (Linux 6.18), names verbatim; the tcmsg attribute
 * enum (TCA_KIND ...) is from include/uapi/linux/rtnetlink.h and kept here with the other tc names.
 */

// ---- struct tcmsg and its attributes (rtnetlink.h) --------------------------------------------
/** sizeof(struct tcmsg): family u8, pad u8, pad u16, ifindex i32, handle u32, parent u32, info u32. */
export const TCMSG_SIZE = 20;
export const TCA_UNSPEC = 0;
export const TCA_KIND = 1;
export const TCA_OPTIONS = 2;
export const TCA_STATS = 3;
export const TCA_XSTATS = 4;
export const TCA_RATE = 5;
export const TCA_FCNT = 6;
export const TCA_STATS2 = 7;
export const TCA_STAB = 8;
export const TCA_PAD = 9;
export const TCA_DUMP_INVISIBLE = 10;
export const TCA_CHAIN = 11;

// ---- handles ----------------------------------------------------------------------------------
export const TC_H_MAJ_MASK = 0xffff0000;
export const TC_H_MIN_MASK = 0x0000ffff;
export const TC_H_UNSPEC = 0;
export const TC_H_ROOT = 0xffffffff;
export const TC_H_INGRESS = 0xfffffff1;
export const TC_H_CLSACT = TC_H_INGRESS;
export const TC_H_MIN_INGRESS = 0xfff2;
export const TC_H_MIN_EGRESS = 0xfff3;

// ---- struct tc_ratespec -----------------------------------------------------------------------
/** sizeof(struct tc_ratespec): cell_log u8, linklayer u8, overhead u16, cell_align i16, mpu u16, rate u32. */
export const TC_RATESPEC_SIZE = 12;
export const TC_LINKLAYER_UNAWARE = 0;
export const TC_LINKLAYER_ETHERNET = 1;
export const TC_LINKLAYER_ATM = 2;
export const TC_LINKLAYER_MASK = 0x0f;
/** Entries in a rate table (TCA_TBF_RTAB / TCA_TBF_PTAB): 256 u32 = 1024 bytes. */
export const TC_RTAB_SIZE = 1024;

// ---- TBF --------------------------------------------------------------------------------------
export const TCA_TBF_UNSPEC = 0;
export const TCA_TBF_PARMS = 1;
export const TCA_TBF_RTAB = 2;
export const TCA_TBF_PTAB = 3;
export const TCA_TBF_RATE64 = 4;
export const TCA_TBF_PRATE64 = 5;
export const TCA_TBF_BURST = 6;
export const TCA_TBF_PBURST = 7;
export const TCA_TBF_PAD = 8;
/** sizeof(struct tc_tbf_qopt): rate, peakrate (tc_ratespec), limit, buffer, mtu (u32). */
export const TC_TBF_QOPT_SIZE = 2 * TC_RATESPEC_SIZE + 12;

// ---- psched time base (include/net/pkt_sched.h / iproute2 tc_core.h) ---------------------------
/** iproute2's TIME_UNITS_PER_SEC: tc times are in microseconds. */
export const TIME_UNITS_PER_SEC = 1_000_000;
