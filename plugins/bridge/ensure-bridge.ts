/**
 * Creating (or adopting) the bridge in the host netns (upstream ensureBridge in
 * plugins/main/bridge/bridge.go, step 2 of ADD), safe against concurrent creators: EEXIST from a racing ADD is success.
 *
 * Beyond upstream (cni#285): a bridge we create gets a random locally administered MAC
 * set explicitly, so the kernel never re-derives the bridge MAC from its ports; an existing bridge
 * whose MAC is still kernel-chosen is pinned to its current MAC. Upstream pins only gateway bridges.
 */
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { isExists, isNotFound } from "../../shared/netlink/errors.ts";
import type { Link } from "../../shared/netlink/link.ts";
import { NetlinkError } from "../../shared/netlink/errors.ts";
import { IFF_PROMISC } from "../../shared/netlink/constants/if-link.ts";
import { sysctlSet } from "../../shared/sysctl/sysctl.ts";
import { EOPNOTSUPP } from "../../shared/sys/errno.ts";

export interface EnsureBridgeOptions {
  name: string;
  /** 0 = kernel default. */
  mtu: number;
  promisc: boolean;
  vlanFiltering: boolean;
}

/** The bridge named in the config exists but is some other kind of link. */
export class NotABridgeError extends InternalError {
  override name = "NotABridgeError";
  constructor(bridge: string) {
    super(`failed to create bridge ${JSON.stringify(bridge)}: ${JSON.stringify(bridge)} already exists but is not a bridge`);
  }
}

/** A random unicast, locally administered MAC (02:xx:...). */
export function randomBridgeMac(): string {
  const b = crypto.getRandomValues(new Uint8Array(6));
  b[0] = (b[0]! & 0xfe) | 0x02;
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join(":");
}

/** Looks the bridge up; a non-bridge link with that name is {@link NotABridgeError}. */
export function bridgeByName(nl: Handle, name: string): Link {
  const link = nl.linkByName(name);
  if (link.kind !== "bridge") throw new NotABridgeError(name);
  return link;
}

/** STATUS: a link named `name` that is not a bridge makes ADD fail ({@link NotABridgeError}); a missing one is created. */
export function bridgeStatus(nl: Handle, name: string): void {
  const link = nl.linkFind(name);
  if (link !== undefined && link.kind !== "bridge") throw new NotABridgeError(name);
}

function fail(name: string, what: string, err: unknown): InternalError {
  return new InternalError(`failed to create bridge ${JSON.stringify(name)}: ${what}: ${messageOf(err)}`, { cause: err });
}

/**
 * `ip link add NAME type bridge [mtu M] [vlan_filtering 1] address <random>` unless it exists;
 * promisc on when asked; `accept_ra=0` (CVE-2020-10749; errors ignored); link up. Returns the
 * bridge as it is now.
 */
export function ensureBridge(nl: Handle, o: EnsureBridgeOptions): Link {
  let created = false;
  let existing: Link | undefined;
  try {
    existing = nl.linkByName(o.name);
  } catch (err) {
    if (!isNotFound(err)) throw fail(o.name, `could not look up ${JSON.stringify(o.name)}`, err);
  }
  if (existing === undefined) {
    try {
      nl.linkAddBridge({
        name: o.name,
        mac: randomBridgeMac(),
        ...(o.mtu > 0 ? { mtu: o.mtu } : {}),
        ...(o.vlanFiltering ? { vlanFiltering: true } : {}),
      });
      created = true;
    } catch (err) {
      if (!isExists(err)) {
        if (o.vlanFiltering && err instanceof NetlinkError && err.errno === EOPNOTSUPP) {
          throw fail(o.name, `could not add ${JSON.stringify(o.name)} with vlan_filtering (bridge vlan filtering not supported by this kernel)`, err);
        }
        throw fail(o.name, `could not add ${JSON.stringify(o.name)}`, err);
      }
    }
  }
  let br = bridgeByName(nl, o.name);
  if (!created) pinBridgeMac(nl, br);
  if (o.promisc && (br.flags & IFF_PROMISC) === 0) {
    try {
      nl.linkSetPromisc(br.index, true);
    } catch (err) {
      throw fail(o.name, `could not set promiscuous mode on ${JSON.stringify(o.name)}`, err);
    }
  }
  try {
    sysctlSet(`net/ipv6/conf/${o.name}/accept_ra`, "0", { ignoreMissing: true });
  } catch {
    // upstream ignores this error too (IPv6 disabled, read-only /proc/sys)
  }
  try {
    nl.linkSetUp(br.index);
  } catch (err) {
    throw fail(o.name, `could not set ${JSON.stringify(o.name)} up`, err);
  }
  br = bridgeByName(nl, o.name);
  return br;
}

/**
 * Sets the bridge's MAC to its current value, which marks it administratively set: the kernel then
 * stops adopting the lowest port MAC (so the bridge MAC never flaps as ports come and go). Errors are
 * ignored (an all-zero MAC on an old kernel is refused, cni#620).
 */
export function pinBridgeMac(nl: Handle, br: Link): void {
  if (br.mac === undefined || br.mac === "00:00:00:00:00:00") return;
  try {
    nl.linkSetMAC(br.index, br.mac);
  } catch {
    // best effort
  }
}
