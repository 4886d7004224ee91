/**
 * TAP devices through /dev/net/tun (TUNSETIFF, TUNSETOWNER, TUNSETGROUP, TUNSETPERSIST), as
 * `ip tuntap add` does it. The device is created in the netns the /dev/net/tun file was opened in,
 * so the file is opened inside a one-call {@link withNetNS} window and the ioctls run outside it.
 * The rest (MTU, MAC, rename, up) is ordinary rtnetlink on the created link.
 */
import { O_RDWR } from "../sys/constants.ts";
import { open } from "../sys/file.ts";
import * as libc from "../sys/libc.ts";
import { withNetNS } from "../netns/enter.ts";
import type { NetNS } from "../netns/netns.ts";
import {
  IFF_MULTI_QUEUE,
  IFF_NO_PI,
  IFF_TAP,
  IFF_VNET_HDR,
  IFNAMSIZ,
  IFREQ_FLAGS_OFFSET,
  IFREQ_SIZE,
  TUNSETGROUP,
  TUNSETIFF,
  TUNSETOWNER,
  TUNSETPERSIST,
} from "./constants/if-tun.ts";

/** The clone device every tun/tap is created through. */
export const TUN_CLONE_DEVICE = "/dev/net/tun";

export interface TapOptions {
  /** Device name (at most 15 bytes). */
  name: string;
  /** IFF_MULTI_QUEUE (`multi_queue`). */
  multiQueue?: boolean;
  /** IFF_VNET_HDR (`vnet_hdr`). */
  vnetHdr?: boolean;
  /** Owning uid (`user N`); unset = any user may attach. */
  owner?: number;
  /** Owning gid (`group N`); unset = any group. */
  group?: number;
}

/** The IFF_* flags for TUNSETIFF: always a TAP without packet information header. */
export function tapFlags(o: TapOptions): number {
  let flags = IFF_TAP | IFF_NO_PI;
  if (o.multiQueue === true) flags |= IFF_MULTI_QUEUE;
  if (o.vnetHdr === true) flags |= IFF_VNET_HDR;
  return flags;
}

/** struct ifreq with ifr_name and ifr_flags (pure; unit-tested). */
export function buildTapIfreq(o: TapOptions): Uint8Array {
  const name = new TextEncoder().encode(o.name);
  if (name.byteLength === 0 || name.byteLength >= IFNAMSIZ) throw new RangeError(`invalid interface name ${JSON.stringify(o.name)}`);
  const ifr = new Uint8Array(IFREQ_SIZE);
  ifr.set(name, 0);
  new DataView(ifr.buffer).setUint16(IFREQ_FLAGS_OFFSET, tapFlags(o), true);
  return ifr;
}

/**
 * ioctl(2) whose third argument is an integer, not a pointer (TUNSETOWNER/GROUP/PERSIST). The libc
 * binding declares a pointer argument; bun:ffi passes a number there unchanged as the register value.
 */
function ioctlValue(fd: number, req: number, value: number): void {
  libc.ioctl(fd, req, value as unknown as Uint8Array);
}

function openTunIn(ns: NetNS): number {
  return withNetNS(ns, () => {
    return open(TUN_CLONE_DEVICE, O_RDWR);
  });
}

/**
 * Equivalent to `ip tuntap add mode tap name N [multi_queue] [vnet_hdr] [user U] [group G]`, run in
 * `ns`: a persistent TAP device that outlives this process. Throws SyscallError.
 */
export function tapAdd(ns: NetNS, o: TapOptions): void {
  const ifr = buildTapIfreq(o);
  const fd = openTunIn(ns);
  try {
    libc.ioctl(fd, TUNSETIFF, ifr);
    if (o.owner !== undefined) ioctlValue(fd, TUNSETOWNER, o.owner);
    if (o.group !== undefined) ioctlValue(fd, TUNSETGROUP, o.group);
    ioctlValue(fd, TUNSETPERSIST, 1);
  } finally {
    libc.close(fd);
  }
}
