/**
 * Where an attachment is shaped.
 *
 * - `host` (upstream getHostInterface): CNI_IFNAME is a veth whose peer is in the host netns and is
 *   a prevResult interface without sandbox. The host veth is shaped, as upstream does: its root
 *   qdisc limits traffic towards the container (ingress), an IFB in the host fed by its ingress hook
 *   limits traffic from the container (egress).
 * - `container` (beyond upstream, which fails here: #413, #656): any other interface — macvlan,
 *   ipvlan, vlan, host-device, a veth without a listed host peer. The container interface is shaped
 *   from inside its netns: its root qdisc limits egress, an IFB created in the container netns and
 *   fed by its ingress hook limits ingress. Nothing is made in the host netns. An ipvlan in l3s
 *   mode cannot limit ingress this way (see refuseUnshapeable).
 *
 * The peer check is stricter than upstream's index lookup: the host link at the peer index must be
 * a veth whose own peer index is the container interface's (an index alone may name an unrelated
 * host link when the peer is in some other netns).
 *
 * A prevResult's host-side interface (no sandbox) names a host link; a name no link can have (a NUL
 * byte, over 15 bytes, `/`, `:`, `.`/`..`, white space, empty) is refused with code 7 naming the
 * field (upstream fails there too: "no veth peer of container interface found in host ns"). A
 * prevResult that lists no host-side interface at all (`{}`, only the container interface) takes
 * the `container` site. DEL does not use the prevResult (bandwidth.ts).
 */
import { InvalidConfigError, UnsupportedFieldError } from "../../shared/cni/errors.ts";
import type { Interface } from "../../shared/cni/types.ts";
import { IPVLAN_MODE_L3S } from "../../shared/netlink/constants/if-link.ts";
import { isNotFound } from "../../shared/netlink/errors.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import { linkNameProblem } from "../../shared/netlink/link-name.ts";
import type { Bandwidth, Limit } from "./config.ts";
import type { PeerField } from "./htb-setup.ts";

export interface Site {
  where: "host" | "container";
  /** The netns of `dev` and of the IFB. */
  nl: Handle;
  /** The shaped device: the host veth or the container interface. */
  dev: Link;
}

/** The host link that is `link`'s veth peer, if `link` is a veth whose peer is in the host netns. */
export function hostPeer(link: Link, hostNl: Handle): Link | undefined {
  if (link.kind !== "veth" || link.parentIndex === undefined || link.parentIndex <= 0) return undefined;
  let peer: Link;
  try {
    peer = hostNl.linkByIndex(link.parentIndex);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  return peer.kind === "veth" && peer.parentIndex === link.index ? peer : undefined;
}

/**
 * The names of the prevResult's host-side interfaces (those without sandbox); a name no link can
 * have is refused (code 7, naming the field).
 */
export function hostInterfaceNames(interfaces: readonly Interface[]): Set<string> {
  const names = new Set<string>();
  interfaces.forEach((i, n) => {
    if ((i.sandbox ?? "") !== "") return;
    const problem = linkNameProblem(i.name);
    if (problem !== undefined) throw new InvalidConfigError(`prevResult.interfaces[${n}].name ${JSON.stringify(i.name)} ${problem}: not a host link name`);
    names.add(i.name);
  });
  return names;
}

/** The site of the container interface `link`; `hostNames`: {@link hostInterfaceNames} of the prevResult. */
export function findSite(link: Link, containerNl: Handle, hostNl: Handle, hostNames: ReadonlySet<string>): Site {
  const peer = hostPeer(link, hostNl);
  if (peer !== undefined && hostNames.has(peer.name)) return { where: "host", nl: hostNl, dev: peer };
  return { where: "container", nl: containerNl, dev: link };
}

/** The two places a device shapes: its root qdisc (what it sends) or an IFB fed by its ingress hook (what it receives). */
export type Hook = "root" | "ifb";

/** One configured direction as the site applies it. */
export interface Shaping {
  hook: Hook;
  limit: Limit;
  /** The peer's address field for subnet filters: ingress matches the source, egress the destination. */
  field: PeerField;
}

/**
 * The configured limits by hook, ingress first (upstream's order). The host veth sends what the
 * container receives; the container interface sends what the container sends.
 */
export function shapingsOf(where: Site["where"], bw: Bandwidth): Shaping[] {
  const out: Shaping[] = [];
  if (bw.ingress !== undefined) out.push({ hook: where === "host" ? "root" : "ifb", limit: bw.ingress, field: "src" });
  if (bw.egress !== undefined) out.push({ hook: where === "host" ? "ifb" : "root", limit: bw.egress, field: "dst" });
  return out;
}

/**
 * ADD: refuses a limit the site cannot enforce (code 2, nothing created). An ipvlan in l3s mode
 * receives through the master's IP layer (an l3mdev hook hands packets to the container netns),
 * never through its own tc ingress hook, so an IFB redirect there would see nothing.
 */
export function refuseUnshapeable(site: Site, shapings: readonly Shaping[]): void {
  if (site.where !== "container" || site.dev.kind !== "ipvlan" || site.dev.ipvlanMode !== IPVLAN_MODE_L3S) return;
  if (shapings.some((s) => s.hook === "ifb")) {
    throw new UnsupportedFieldError(`ingressRate: ${site.dev.name} is an ipvlan in l3s mode, whose received traffic bypasses tc ingress; only egress can be limited`);
  }
}
