/**
 * Veth pairs for the interface plugins (upstream `pkg/ip/link_linux.go`: SetupVeth, DelLinkByNameAddr).
 *
 * The pair is created from a socket in the container netns: the first end, named CNI_IFNAME, stays
 * there; the peer is created directly in the host netns (IFLA_NET_NS_FD), so the container end never
 * appears in the host. Host end: `veth` + 8 random hex (retried on a name clash) or a given name,
 * set UP, and `accept_ra=0` (CVE-2020-10749: a container must not be able to reconfigure the host's
 * IPv6 with router advertisements). The container end is left DOWN for ConfigureIface.
 */
import { InternalError, messageOf } from "../cni/errors.ts";
import { Handle, isExists, isNotFound, type Link } from "../netlink/index.ts";
import { withNetNS, type NetNS } from "../netns/index.ts";
import { sysctlSet } from "../sysctl/index.ts";
import { randomVethName } from "./link-names.ts";

export { randomVethName } from "./link-names.ts";

/** Name, ifindex (in its own netns) and MAC of one end of a pair. */
export interface LinkInfo {
  name: string;
  index: number;
  mac: string;
}

export interface SetupVethOptions {
  /** Handle whose socket lives in the container netns. */
  containerNl: Handle;
  /** Handle whose socket lives in the host netns. */
  hostNl: Handle;
  /** The host netns (the peer is created in it; its sysctls are written inside it). */
  hostNs: NetNS;
  /** Container-side name (CNI_IFNAME). */
  ifName: string;
  /** MTU of both ends when > 0. */
  mtu?: number;
  /** MAC of the container end. */
  mac?: string;
  /** Fixed host-side name instead of a random one. */
  hostVethName?: string;
}

/** How many random host names are tried before giving up (upstream: 10). */
const MAX_NAME_ATTEMPTS = 10;

function linkInfo(l: Link): LinkInfo {
  return { name: l.name, index: l.index, mac: l.mac ?? "" };
}

function linkExists(nl: Handle, name: string): boolean {
  try {
    nl.linkByName(name);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/**
 * `ip link add IFNAME [mtu M] [address MAC] type veth peer name HOSTVETH netns HOST`, then in the
 * host: `ip link set HOSTVETH up` and `sysctl net.ipv6.conf.HOSTVETH.accept_ra=0` (errors ignored).
 */
export function setupVeth(o: SetupVethOptions): { host: LinkInfo; container: LinkInfo } {
  const hostName = createPair(o);
  let container: Link;
  let host: Link;
  try {
    container = o.containerNl.linkByName(o.ifName);
    try {
      host = o.hostNl.linkByName(hostName);
    } catch (err) {
      throw new InternalError(`failed to lookup ${JSON.stringify(hostName)} in ${JSON.stringify(o.hostNs.path)}: ${messageOf(err)}`, { cause: err });
    }
    try {
      o.hostNl.linkSetUp(host.index);
    } catch (err) {
      throw new InternalError(`failed to set ${JSON.stringify(hostName)} up: ${messageOf(err)}`, { cause: err });
    }
  } catch (err) {
    // Do not leave a half-configured pair behind (upstream does).
    delLinkQuietly(o.containerNl, o.ifName);
    throw err;
  }
  disableAcceptRA(o.hostNs, hostName);
  host = o.hostNl.linkByIndex(host.index);
  return { host: linkInfo(host), container: linkInfo(container) };
}

/** Creates the pair, retrying random host names that already exist; returns the host-side name. */
function createPair(o: SetupVethOptions): string {
  for (let attempt = 0; attempt < MAX_NAME_ATTEMPTS; attempt++) {
    const peerName = o.hostVethName ?? randomVethName();
    try {
      o.containerNl.linkAddVeth({
        name: o.ifName,
        peerName,
        peerNetnsFd: o.hostNs.fd,
        ...(o.mtu !== undefined && o.mtu > 0 ? { mtu: o.mtu } : {}),
        ...(o.mac !== undefined && o.mac !== "" ? { mac: o.mac } : {}),
      });
      return peerName;
    } catch (err) {
      if (!isExists(err)) throw new InternalError(`failed to make veth pair: ${messageOf(err)}`, { cause: err });
      const retry = o.hostVethName === undefined && !linkExists(o.containerNl, o.ifName) && linkExists(o.hostNl, peerName);
      if (retry) continue;
      throw new InternalError(
        `container veth name (${JSON.stringify(o.ifName)}) peer provided (${JSON.stringify(peerName)}) already exists`,
        { cause: err },
      );
    }
  }
  throw new InternalError("failed to find a unique veth name");
}

/** `sysctl -w net.ipv6.conf.NAME.accept_ra=0` in `ns`; errors ignored (no IPv6, link gone). */
function disableAcceptRA(ns: NetNS, name: string): void {
  try {
    withNetNS(ns, () => sysctlSet(`net/ipv6/conf/${name}/accept_ra`, "0", { ignoreMissing: true }));
  } catch {
    // as upstream: best effort
  }
}

function delLinkQuietly(nl: Handle, name: string): void {
  try {
    nl.linkDel(nl.linkByName(name).index);
  } catch {
    // already gone
  }
}

/** Go's `IP.IsGlobalUnicast` on our text form: not unspecified, loopback, multicast, link-local or broadcast. */
function isGlobalUnicast(family: 4 | 6, address: string): boolean {
  if (family === 4) {
    const [a = 0, b = 0] = address.split(".").map(Number);
    if (address === "0.0.0.0" || address === "255.255.255.255") return false;
    if (a === 127 || a >= 224) return false;
    return !(a === 169 && b === 254);
  }
  const lower = address.toLowerCase();
  if (lower === "::" || lower === "::1") return false;
  if (lower.startsWith("ff")) return false;
  return !/^fe[89ab]/.test(lower);
}

/**
 * `ip link del IFNAME` (removes the whole pair), returning the global-unicast addresses it carried as
 * CIDRs (`10.1.2.3/24`), like upstream DelLinkByNameAddr. A missing link returns [].
 */
export function delLinkByNameAddr(nl: Handle, ifName: string): string[] {
  let link: Link;
  try {
    link = nl.linkByName(ifName);
  } catch (err) {
    if (isNotFound(err)) return [];
    throw new InternalError(`failed to lookup ${JSON.stringify(ifName)}: ${messageOf(err)}`, { cause: err });
  }
  let cidrs: string[];
  try {
    cidrs = nl
      .addrList({ index: link.index })
      .filter((a) => isGlobalUnicast(a.family, a.address))
      .map((a) => `${a.address}/${a.prefixLen}`);
  } catch (err) {
    throw new InternalError(`failed to get IP addresses for ${JSON.stringify(ifName)}: ${messageOf(err)}`, { cause: err });
  }
  try {
    nl.linkDel(link.index);
  } catch (err) {
    if (!isNotFound(err)) throw new InternalError(`failed to delete ${JSON.stringify(ifName)}: ${messageOf(err)}`, { cause: err });
  }
  return cidrs;
}
