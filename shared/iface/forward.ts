/**
 * IP forwarding on the host (upstream `ip.EnableForward` / `EnableIP4Forward` / `EnableIP6Forward`):
 * `net.ipv4.ip_forward` and `net.ipv6.conf.all.forwarding` are written as `1` only when they are
 * not already `1`, so an already-forwarding host needs no write access to /proc/sys.
 *
 * Acts on the calling thread's netns (the host, for a plugin process).
 */
import type { IPConfig } from "../cni/types.ts";
import { sysctlSet } from "../sysctl/sysctl.ts";

export const IPV4_FORWARD_SYSCTL = "net.ipv4.ip_forward";
export const IPV6_FORWARD_SYSCTL = "net.ipv6.conf.all.forwarding";

/** Enables forwarding for the families asked for. Throws the sysctl error. */
export function enableIPForward(o: { v4: boolean; v6: boolean }): void {
  if (o.v4) sysctlSet(IPV4_FORWARD_SYSCTL, "1");
  if (o.v6) sysctlSet(IPV6_FORWARD_SYSCTL, "1");
}

/** The families present in a result's IPs (upstream EnableForward's input). */
export function forwardFamiliesOf(ips: readonly IPConfig[]): { v4: boolean; v6: boolean } {
  const v6 = ips.some((i) => i.address.includes(":"));
  const v4 = ips.some((i) => !i.address.includes(":"));
  return { v4, v6 };
}
