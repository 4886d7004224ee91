/**
 * Deletes UDP conntrack entries whose original destination port is a mapped host port, so a UDP
 * stream that kept a stale entry (DNAT to an old container, or no NAT at all) is re-evaluated
 * against the current rules (upstream #123 on ADD; #1190 on DEL). Failures are only reported on
 * the invocation's stderr (`warn`), as upstream does: the port mapping itself is in place.
 */
import { NETLINK_NETFILTER } from "../../shared/netlink/constants/nfnetlink.ts";
import { openNetlinkSocket } from "../../shared/netlink/kernel-transport.ts";
import { IPPROTO_UDP } from "../../shared/netlink/constants/nfnetlink-conntrack.ts";
import { conntrackDelete, conntrackList } from "../../shared/netlink/nfnetlink-conntrack.ts";
import type { IPFamily } from "../../shared/ip/addr.ts";

/** Deletes the UDP entries of `family` whose original destination port is in `ports`; returns how many. */
export function flushUdpConntrack(family: IPFamily, ports: readonly number[], warn: (text: string) => void): number {
  if (ports.length === 0) return 0;
  const wanted = new Set(ports);
  let n = 0;
  try {
    using sock = openNetlinkSocket(NETLINK_NETFILTER);
    for (const f of conntrackList(sock, family)) {
      if (f.proto === IPPROTO_UDP && wanted.has(f.dstPort) && conntrackDelete(sock, f)) n++;
    }
  } catch (err) {
    warn(`failed to delete stale UDP conntrack entries (IPv${family}, ports ${ports.join(",")}): ${err instanceof Error ? err.message : String(err)}\n`);
  }
  return n;
}
