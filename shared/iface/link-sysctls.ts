/**
 * Sysctls of a link that upstream sets without checking whether they took (arp_notify,
 * ndisc_notify, accept_dad, accept_ra): written best-effort in a given netns.
 */
import { withNetNS } from "../netns/enter.ts";
import type { NetNS } from "../netns/netns.ts";
import { sysctlSet } from "../sysctl/sysctl.ts";

/**
 * Writes sysctls of the container netns (`[key, value]`, keys relative to /proc/sys), ignoring
 * every failure: the link settings upstream sets without checking (arp_notify, accept_dad, ...).
 */
export function setSysctlsQuietly(ns: NetNS, entries: readonly (readonly [string, string])[]): void {
  for (const [key, value] of entries) {
    try {
      withNetNS(ns, () => sysctlSet(key, value, { ignoreMissing: true }));
    } catch {
      // best effort, as upstream
    }
  }
}

/**
 * `net.ipv4.conf.IF.arp_notify=1` and (optionally) `net.ipv6.conf.IF.ndisc_notify=1` in `ns`, so
 * neighbours learn the new address quickly; errors are ignored, as upstream does.
 */
export function enableNeighbourNotify(ns: NetNS, ifName: string, opts: { ndisc: boolean }): void {
  const entries: [string, string][] = [[`net/ipv4/conf/${ifName}/arp_notify`, "1"]];
  if (opts.ndisc) entries.push([`net/ipv6/conf/${ifName}/ndisc_notify`, "1"]);
  setSysctlsQuietly(ns, entries);
}
