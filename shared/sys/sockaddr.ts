/**
 * Socket addresses as bind(2), sendto(2) and getsockname(2) take them (layouts.ts): the family in
 * host order, ports and IP addresses in network order.
 */
import { AF_INET, AF_INET6, AF_NETLINK, AF_UNIX } from "./constants.ts";
import { ENAMETOOLONG, SyscallError } from "./errno.ts";
import { SOCKADDR_IN, SOCKADDR_IN6, SOCKADDR_NL, SOCKADDR_UN } from "./layouts.ts";

/** sun_path's size in struct sockaddr_un. */
const SUN_PATH_SIZE = SOCKADDR_UN.size - SOCKADDR_UN.sun_path;

/** struct sockaddr_un for `path`: sa_family_t, then sun_path NUL-terminated. Throws ENAMETOOLONG. */
export function unixAddress(path: string): Uint8Array {
  const name = Buffer.from(path);
  if (name.length >= SUN_PATH_SIZE) throw new SyscallError("bind", ENAMETOOLONG, JSON.stringify(path));
  const addr = new Uint8Array(SOCKADDR_UN.sun_path + name.length + 1);
  new DataView(addr.buffer).setUint16(SOCKADDR_UN.sun_family, AF_UNIX, true);
  addr.set(name, SOCKADDR_UN.sun_path);
  return addr;
}

/** struct sockaddr_in of an IPv4 address (4 bytes) and a port. */
export function inetAddress(address: Uint8Array, port: number): Uint8Array {
  const out = new Uint8Array(SOCKADDR_IN.size);
  const dv = new DataView(out.buffer);
  dv.setUint16(SOCKADDR_IN.sin_family, AF_INET, true);
  dv.setUint16(SOCKADDR_IN.sin_port, port, false);
  out.set(address, SOCKADDR_IN.sin_addr);
  return out;
}

/** struct sockaddr_in6 of an IPv6 address (16 bytes), a port and a scope id (an interface index); flowinfo 0. */
export function inet6Address(address: Uint8Array, port: number, scopeId = 0): Uint8Array {
  const out = new Uint8Array(SOCKADDR_IN6.size);
  const dv = new DataView(out.buffer);
  dv.setUint16(SOCKADDR_IN6.sin6_family, AF_INET6, true);
  dv.setUint16(SOCKADDR_IN6.sin6_port, port, false);
  out.set(address, SOCKADDR_IN6.sin6_addr);
  dv.setUint32(SOCKADDR_IN6.sin6_scope_id, scopeId, true);
  return out;
}

/**
 * struct sockaddr_nl with nl_pid 0 and no multicast groups: as a destination the kernel, to bind(2)
 * a socket whose port id the kernel assigns.
 */
export function netlinkAddress(): Uint8Array {
  const b = new Uint8Array(SOCKADDR_NL.size);
  new DataView(b.buffer).setUint16(SOCKADDR_NL.nl_family, AF_NETLINK, true);
  return b;
}
