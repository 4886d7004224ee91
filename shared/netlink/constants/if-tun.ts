/**
 * TUN/TAP character-device interface.
 * Provenance: linux/include/uapi/linux/if_tun.h (ioctl numbers are _IOW('T', n, int) on x86_64 and
 * arm64) and linux/include/uapi/linux/if.h (IFNAMSIZ, struct ifreq size).
 */

export const TUNSETIFF = 0x400454ca;
export const TUNSETPERSIST = 0x400454cb;
export const TUNSETOWNER = 0x400454cc;
export const TUNSETGROUP = 0x400454ce;

export const IFF_TUN = 0x0001;
export const IFF_TAP = 0x0002;
export const IFF_NAPI = 0x0010;
export const IFF_NAPI_FRAGS = 0x0020;
export const IFF_NO_CARRIER = 0x0040;
export const IFF_NO_PI = 0x1000;
export const IFF_ONE_QUEUE = 0x2000;
export const IFF_VNET_HDR = 0x4000;
export const IFF_TUN_EXCL = 0x8000;
export const IFF_MULTI_QUEUE = 0x0100;

/** linux/if.h */
export const IFNAMSIZ = 16;
/** sizeof(struct ifreq) on 64-bit Linux: ifr_name[16] + a 24-byte union. */
export const IFREQ_SIZE = 40;
/** Offset of ifr_flags (a short) inside struct ifreq. */
export const IFREQ_FLAGS_OFFSET = 16;
