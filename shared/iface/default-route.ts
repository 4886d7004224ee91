/**
 * The interface of the first default route (upstream `getDefaultRouteInterfaceName` in macvlan and
 * ipvlan): the main table, both families, in kernel dump order (IPv4 first); a route without a
 * destination (or 0.0.0.0/0, ::/0) counts. A multipath default route yields its first nexthop's link.
 */
import { annotateError } from "../error/annotate.ts";
import { InternalError } from "../cni/errors.ts";
import type { Handle } from "../netlink/handle.ts";

/** Name of the interface the first default route leaves through; throws `no default route interface found`. */
export function defaultRouteInterface(nl: Handle): string {
  for (const family of [4, 6] as const) {
    for (const r of nl.routeList({ family })) {
      if (r.dst !== undefined && r.dst.prefixLen !== 0) continue;
      const oif = r.oif ?? r.multipath?.find((n) => n.oif > 0)?.oif;
      if (oif === undefined || oif === 0) continue;
      try {
        return nl.linkByIndex(oif).name;
      } catch (err) {
        throw annotateError(`failed to look up the default route interface (ifindex ${oif})`, err);
      }
    }
  }
  throw new InternalError("no default route interface found");
}
