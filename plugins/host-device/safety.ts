/**
 * Which host links host-device refuses to move (beyond upstream, which moves whatever the config
 * names, so a network definition can take the node's uplink away; DIFFERENCES.md).
 *
 * - the loopback device: always refused;
 * - a link that carries a default route (any table, IPv4 or IPv6, including a multipath nexthop),
 *   and a link that is the master of other links (a bridge or bond with ports): refused unless the
 *   network config sets `"allowUnsafeDevice": true`.
 */
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import type { RouteEntry } from "../../shared/netlink/route.ts";
import { IFF_LOOPBACK } from "../../shared/netlink/constants/if-link.ts";
import { RT_TABLE_UNSPEC } from "../../shared/netlink/constants/rtnetlink.ts";

/** The config key that lifts the default-route and master refusals. */
export const ALLOW_UNSAFE_KEY = "allowUnsafeDevice";

export type UnsafeKind = "loopback" | "default-route" | "master";

export interface UnsafeVerdict {
  kind: UnsafeKind;
  /** Why, in words (the error message without the leading "refusing to move ..."). */
  why: string;
}

function isDefault(r: RouteEntry): boolean {
  return r.dst === undefined || r.dst.prefixLen === 0;
}

function usesLink(r: RouteEntry, index: number): boolean {
  if (r.oif === index) return true;
  return (r.multipath ?? []).some((nh) => nh.oif === index);
}

/** Why moving `dev` would hurt the host, judged from the host's links and routes; undefined when safe. */
export function judgeHostDevice(dev: Link, links: readonly Link[], routes: readonly RouteEntry[]): UnsafeVerdict | undefined {
  if ((dev.flags & IFF_LOOPBACK) !== 0 || dev.name === "lo") {
    return { kind: "loopback", why: "it is the loopback device" };
  }
  const defaults = routes.filter((r) => isDefault(r) && usesLink(r, dev.index));
  if (defaults.length > 0) {
    const families = [...new Set(defaults.map((r) => (r.family === 6 ? "IPv6" : "IPv4")))].join(" and ");
    return { kind: "default-route", why: `it carries the host's ${families} default route` };
  }
  const ports = links.filter((l) => l.masterIndex === dev.index).map((l) => JSON.stringify(l.name));
  if (ports.length > 0) {
    return { kind: "master", why: `it is the master of ${ports.join(", ")}` };
  }
  return undefined;
}

/** Reads the host's links and default routes through `nl` and throws (code 7) when `dev` must stay. */
export function assertMovable(nl: Handle, dev: Link, allowUnsafe: boolean): void {
  if ((dev.flags & IFF_LOOPBACK) !== 0 || dev.name === "lo") {
    throw new InvalidConfigError(`refusing to move host device ${JSON.stringify(dev.name)}: it is the loopback device`);
  }
  if (allowUnsafe) return;
  const routes = [...nl.routeList({ family: 4, table: RT_TABLE_UNSPEC }), ...nl.routeList({ family: 6, table: RT_TABLE_UNSPEC })];
  const verdict = judgeHostDevice(dev, nl.linkList(), routes);
  if (verdict !== undefined) {
    throw new InvalidConfigError(
      `refusing to move host device ${JSON.stringify(dev.name)}: ${verdict.why} (set "${ALLOW_UNSAFE_KEY}": true in the network configuration to allow it)`,
    );
  }
}
