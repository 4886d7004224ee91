/**
 * `Handle`: a NETLINK_ROUTE socket bound to one network namespace, and every rtnetlink operation
 * as a method on it. There is no module-level default handle: code always says which namespace it
 * acts on.
 *
 * ```ts
 * using ns = NetNS.open(args.netns);
 * using nl = Handle.open(ns);          // socket created inside ns, then back to the host netns
 * const eth0 = nl.linkByName("eth0");
 * nl.addrAdd(eth0.index, { address: "10.1.2.3", prefixLen: 24 });
 * ```
 *
 * The methods are thin delegates to the functions in link.ts, link-add.ts, link-set.ts, addr.ts
 * and route.ts (which take the socket and hold the doc comments with `ip` equivalents, the
 * request builders and the decoders). Errors: {@link NetlinkError} (a SyscallError with errno and
 * the kernel's extended-ACK text), {@link LinkNotFoundError}; test them with `isNotFound` /
 * `isExists`, never by message.
 */

import { withNetNS, type NetNS } from "../netns/index.ts";
import { addrAdd, addrDel, addrList, addrReplace, type Addr, type AddrFilter, type AddrSpec } from "./addr.ts";
import { linkByIndex, linkByName, linkList, type Link } from "./link.ts";
import {
  linkAddBridge,
  linkAddDummy,
  linkAddIfb,
  linkAddIpvlan,
  linkAddMacvlan,
  linkAddVeth,
  linkAddVlan,
  type BridgeOptions,
  type DummyOptions,
  type IfbOptions,
  type IpvlanOptions,
  type MacvlanOptions,
  type VethOptions,
  type VlanOptions,
} from "./link-add.ts";
import {
  linkDel,
  linkSetAlias,
  linkSetAllmulti,
  linkSetDown,
  linkSetHairpin,
  linkSetIsolated,
  linkSetMAC,
  linkSetMaster,
  linkSetMTU,
  linkSetName,
  linkSetNetnsFd,
  linkSetNoMaster,
  linkSetPromisc,
  linkSetTxqlen,
  linkSetUp,
} from "./link-set.ts";
import { routeAdd, routeAppend, routeDel, routeList, routeReplace, type RouteEntry, type RouteFilter, type RouteSpec } from "./route.ts";
import { NetlinkSocket } from "./socket.ts";

export class Handle {
  readonly #sock: NetlinkSocket;

  private constructor(sock: NetlinkSocket) {
    this.#sock = sock;
  }

  /**
   * Opens a handle on `ns` (the socket is created inside it through a one-call withNetNS window),
   * or on the calling thread's current netns when `ns` is omitted.
   */
  static open(ns?: NetNS): Handle {
    const sock = ns === undefined ? NetlinkSocket.open() : withNetNS(ns, () => NetlinkSocket.open());
    return new Handle(sock);
  }

  /** The underlying socket, for operations not (yet) wrapped here. */
  get socket(): NetlinkSocket {
    return this.#sock;
  }

  close(): void {
    this.#sock.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  // ---- links: lookup -------------------------------------------------------------------------
  /** `ip link show dev NAME`; throws LinkNotFoundError. */
  linkByName(name: string): Link {
    return linkByName(this.#sock, name);
  }
  /** Link with this ifindex; throws LinkNotFoundError. */
  linkByIndex(index: number): Link {
    return linkByIndex(this.#sock, index);
  }
  /** `ip link show`. */
  linkList(): Link[] {
    return linkList(this.#sock);
  }

  // ---- links: create -------------------------------------------------------------------------
  /** `ip link add NAME type veth peer name PEER [netns FD]`; the peer goes into `peerNetnsFd`. */
  linkAddVeth(o: VethOptions): void {
    linkAddVeth(this.#sock, o);
  }
  /** `ip link add NAME type bridge [vlan_filtering 1] [vlan_default_pvid N]`. */
  linkAddBridge(o: BridgeOptions): void {
    linkAddBridge(this.#sock, o);
  }
  /** `ip link add link PARENT NAME [netns FD] type macvlan mode MODE`. */
  linkAddMacvlan(o: MacvlanOptions): void {
    linkAddMacvlan(this.#sock, o);
  }
  /** `ip link add link PARENT NAME [netns FD] type ipvlan mode MODE [FLAG]`. */
  linkAddIpvlan(o: IpvlanOptions): void {
    linkAddIpvlan(this.#sock, o);
  }
  /** `ip link add link PARENT NAME [netns FD] type vlan id ID`. */
  linkAddVlan(o: VlanOptions): void {
    linkAddVlan(this.#sock, o);
  }
  /** `ip link add NAME type dummy`. */
  linkAddDummy(o: DummyOptions): void {
    linkAddDummy(this.#sock, o);
  }
  /** `ip link add NAME type ifb`. */
  linkAddIfb(o: IfbOptions): void {
    linkAddIfb(this.#sock, o);
  }

  // ---- links: change / delete ----------------------------------------------------------------
  /** `ip link del dev X`. */
  linkDel(index: number): void {
    linkDel(this.#sock, index);
  }
  /** `ip link set dev X up`. */
  linkSetUp(index: number): void {
    linkSetUp(this.#sock, index);
  }
  /** `ip link set dev X down`. */
  linkSetDown(index: number): void {
    linkSetDown(this.#sock, index);
  }
  /** `ip link set dev X mtu N`. */
  linkSetMTU(index: number, mtu: number): void {
    linkSetMTU(this.#sock, index, mtu);
  }
  /** `ip link set dev X address MAC`. */
  linkSetMAC(index: number, mac: string): void {
    linkSetMAC(this.#sock, index, mac);
  }
  /** `ip link set dev X master M`. */
  linkSetMaster(index: number, masterIndex: number): void {
    linkSetMaster(this.#sock, index, masterIndex);
  }
  /** `ip link set dev X nomaster`. */
  linkSetNoMaster(index: number): void {
    linkSetNoMaster(this.#sock, index);
  }
  /** `ip link set dev X netns FD`. */
  linkSetNetnsFd(index: number, fd: number): void {
    linkSetNetnsFd(this.#sock, index, fd);
  }
  /** `ip link set dev X name N` (the link must be down). */
  linkSetName(index: number, name: string): void {
    linkSetName(this.#sock, index, name);
  }
  /** `ip link set dev X alias A`. */
  linkSetAlias(index: number, alias: string): void {
    linkSetAlias(this.#sock, index, alias);
  }
  /** `ip link set dev X promisc on|off`. */
  linkSetPromisc(index: number, on: boolean): void {
    linkSetPromisc(this.#sock, index, on);
  }
  /** `ip link set dev X txqueuelen N`. */
  linkSetTxqlen(index: number, txqlen: number): void {
    linkSetTxqlen(this.#sock, index, txqlen);
  }
  /** `ip link set dev X allmulticast on|off`. */
  linkSetAllmulti(index: number, on: boolean): void {
    linkSetAllmulti(this.#sock, index, on);
  }
  /** `bridge link set dev X hairpin on|off` (X must be a bridge port). */
  linkSetHairpin(index: number, on: boolean): void {
    linkSetHairpin(this.#sock, index, on);
  }
  /** `bridge link set dev X isolated on|off` (X must be a bridge port). */
  linkSetIsolated(index: number, on: boolean): void {
    linkSetIsolated(this.#sock, index, on);
  }

  // ---- addresses -----------------------------------------------------------------------------
  /** `ip addr show [dev X]`, filtered by ifindex and/or family. */
  addrList(filter?: AddrFilter): Addr[] {
    return addrList(this.#sock, filter);
  }
  /** `ip addr add A/P [brd +] dev X` (IPv4 broadcast computed unless `broadcast: null`). */
  addrAdd(index: number, spec: AddrSpec): void {
    addrAdd(this.#sock, index, spec);
  }
  /** `ip addr replace A/P [brd +] dev X`. */
  addrReplace(index: number, spec: AddrSpec): void {
    addrReplace(this.#sock, index, spec);
  }
  /** `ip addr del A/P dev X`. */
  addrDel(index: number, spec: { address: string; prefixLen: number; family?: 4 | 6 }): void {
    addrDel(this.#sock, index, spec);
  }

  // ---- routes --------------------------------------------------------------------------------
  /** `ip route show [table T]`: main table unless `filter.table` (0 = all tables). */
  routeList(filter?: RouteFilter): RouteEntry[] {
    return routeList(this.#sock, filter);
  }
  /** `ip route add ...`. */
  routeAdd(r: RouteSpec): void {
    routeAdd(this.#sock, r);
  }
  /** `ip route append ...` (ECMP / an additional route for the same prefix). */
  routeAppend(r: RouteSpec): void {
    routeAppend(this.#sock, r);
  }
  /** `ip route replace ...`. */
  routeReplace(r: RouteSpec): void {
    routeReplace(this.#sock, r);
  }
  /** `ip route del ...`. */
  routeDel(r: RouteSpec): void {
    routeDel(this.#sock, r);
  }
}
