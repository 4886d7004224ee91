/**
 * Veth pairs for bridge and ptp (upstream `pkg/ip/link_linux.go` SetupVeth; removal is the shared
 * container-link teardown, container-link.ts).
 *
 * The pair is created from a socket in the container netns: the first end, named CNI_IFNAME, stays
 * there; the peer is created directly in the host netns (IFLA_NET_NS_FD), so the container end never
 * appears in the host. Host end: `veth` + 8 random hex (retried on a name clash) or a given name,
 * set UP, and `accept_ra=0` (CVE-2020-10749: a container must not be able to reconfigure the host's
 * IPv6 with router advertisements). The container end is left DOWN for ConfigureIface.
 */
import { InternalError } from "../cni/errors.ts";
import { annotate, annotateError } from "../error/annotate.ts";
import { Handle } from "../netlink/handle.ts";
import { isExists } from "../netlink/errors.ts";
import type { Link } from "../netlink/link.ts";
import type { NetNS } from "../netns/netns.ts";
import { setSysctlsQuietly } from "./link-sysctls.ts";
import { randomVethName } from "./link-names.ts";

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
  /** Called with the container end's index once the pair exists (before anything else can fail). */
  onCreated?: (containerIndex: number) => void;
}

/** How many random host names are tried before giving up (upstream: 10). */
const MAX_NAME_ATTEMPTS = 10;

function linkInfo(l: Link): LinkInfo {
  return { name: l.name, index: l.index, mac: l.mac ?? "" };
}

/**
 * `ip link add IFNAME [mtu M] [address MAC] type veth peer name HOSTVETH netns HOST`, then in the
 * host: `ip link set HOSTVETH up` and `sysctl net.ipv6.conf.HOSTVETH.accept_ra=0` (errors ignored).
 * `onCreated` learns the container end's index as soon as the pair exists, so that the caller's
 * rollback (which deletes it by index) covers a failure of the steps after it.
 */
export function setupVeth(o: SetupVethOptions): { host: LinkInfo; container: LinkInfo } {
  const hostName = createPair(o);
  let host = annotate(`failed to lookup ${JSON.stringify(hostName)} in ${JSON.stringify(o.hostNs.path)}`, () => o.hostNl.linkByName(hostName));
  // The container end is the host end's peer (IFLA_LINK), found by index: a name the kernel chose
  // itself (`eth%d` becomes `eth0`) would not be found by name, and the pair would stay behind.
  const container =
    host.parentIndex !== undefined
      ? annotate(`failed to lookup ${JSON.stringify(o.ifName)}`, () => o.containerNl.linkByIndex(host.parentIndex!))
      : annotate(`failed to lookup ${JSON.stringify(o.ifName)}`, () => o.containerNl.linkByName(o.ifName));
  o.onCreated?.(container.index);
  if (container.name !== o.ifName) {
    throw new InternalError(`the kernel named the container veth ${JSON.stringify(container.name)}, not ${JSON.stringify(o.ifName)}`);
  }
  annotate(`failed to set ${JSON.stringify(hostName)} up`, () => o.hostNl.linkSetUp(host.index));
  setSysctlsQuietly(o.hostNs, [[`net/ipv6/conf/${hostName}/accept_ra`, "0"]]);
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
      if (!isExists(err)) throw annotateError("failed to make veth pair", err);
      const retry = o.hostVethName === undefined && o.containerNl.linkFind(o.ifName) === undefined && o.hostNl.linkFind(peerName) !== undefined;
      if (retry) continue;
      throw new InternalError(
        `container veth name (${JSON.stringify(o.ifName)}) peer provided (${JSON.stringify(peerName)}) already exists`,
        { cause: err },
      );
    }
  }
  throw new InternalError("failed to find a unique veth name");
}
