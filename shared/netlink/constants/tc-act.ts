/**
 * mirred action constants.
 * Provenance: include/uapi/linux/tc_act/tc_mirred.h and the tc_gen fields of
 * include/uapi/linux/pkt_cls.h (Linux 6.18), names verbatim.
 */

export const TCA_MIRRED_UNSPEC = 0;
export const TCA_MIRRED_TM = 1;
export const TCA_MIRRED_PARMS = 2;
export const TCA_MIRRED_PAD = 3;
export const TCA_MIRRED_BLOCKID = 4;

/** tc_mirred.eaction values. */
export const TCA_EGRESS_REDIR = 1;
export const TCA_EGRESS_MIRROR = 2;
export const TCA_INGRESS_REDIR = 3;
export const TCA_INGRESS_MIRROR = 4;

/** sizeof(struct tc_mirred): tc_gen (index, capab u32; action i32; refcnt, bindcnt i32) + eaction i32 + ifindex u32. */
export const TC_MIRRED_SIZE = 28;
