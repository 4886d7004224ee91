/**
 * `Handle`: a NETLINK_ROUTE socket bound to one network namespace, and every rtnetlink operation
 * (links, addresses, routes, rules, bridge VLANs, tc) as a method on it. There is no module-level
 * default handle: code always says which namespace it acts on.
 *
 * ```ts
 * using ns = NetNS.open(args.netns);
 * using nl = Handle.open(ns);          // socket created inside ns, then back to the host netns
 * const eth0 = nl.linkByName("eth0");
 * nl.addrAdd(eth0.index, { address: "10.1.2.3", prefixLen: 24 });
 * ```
 *
 * Each method is a one-line delegate to the function of the same name in the per-object file
 * (link.ts, link-add.ts, link-set.ts, addr.ts, route.ts, rule.ts, bridge-vlan.ts, tc/*.ts), which
 * takes the socket and sits next to its pure request builder and decoder (golden-tested against
 * iproute2). Errors: {@link NetlinkError} (a SyscallError with errno and the kernel's extended-ACK
 * text), {@link LinkNotFoundError}; test them with `isNotFound` / `isExists`, never by message.
 */

import { withNetNS } from "../netns/enter.ts";
import type { NetNS } from "../netns/netns.ts";
import { addrAdd, addrDel, addrList, addrReplace, type Addr, type AddrFilter, type AddrSpec } from "./addr.ts";
import { bridgeVlanAdd, bridgeVlanDel, bridgeVlanList, type BridgeVlanEntry, type BridgeVlanSpec } from "./bridge-vlan.ts";
import { linkByIndex, linkByName, linkFind, linkList, type Link } from "./link.ts";
import {
  linkAddBridge,
  linkAddDummy,
  linkAddIfb,
  linkAddIpvlan,
  linkAddMacvlan,
  linkAddVeth,
  linkAddVlan,
  linkAddVrf,
  type BridgeOptions,
  type DummyOptions,
  type IfbOptions,
  type IpvlanOptions,
  type MacvlanOptions,
  type VethOptions,
  type VlanOptions,
  type VrfOptions,
} from "./link-add.ts";
import {
  linkDel,
  linkSetAlias,
  linkSetAllmulti,
  linkSetBridge,
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
  type BridgeChange,
} from "./link-set.ts";
import { routeAdd, routeAppend, routeDel, routeList, routeReplace, type RouteEntry, type RouteFilter, type RouteSpec } from "./route.ts";
import { ruleAdd, ruleDel, ruleList, type RuleEntry, type RuleSpec } from "./rule.ts";
import { openNetlinkSocket } from "./kernel-transport.ts";
import type { NetlinkSocket } from "./socket.ts";
import { filterAddU32, filterDel, filterList, type Filter, type U32FilterSpec } from "./tc/filter.ts";
import { classHtb, classList, qdiscHtb, type HtbClassSpec, type HtbQdiscSpec, type TcClass } from "./tc/htb.ts";
import { qdiscClsactAdd, qdiscDel, qdiscIngress, qdiscList, qdiscTbf, type Qdisc, type TbfSpec } from "./tc/qdisc.ts";
import type { QdiscOp } from "./tc/msg.ts";

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
    const sock = ns === undefined ? openNetlinkSocket() : withNetNS(ns, () => openNetlinkSocket());
    return new Handle(sock);
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
  /** `ip link show dev NAME`, or undefined when there is no such link (other errors throw). */
  linkFind(name: string): Link | undefined {
    return linkFind(this.#sock, name);
  }
  /** Link with this ifindex; throws LinkNotFoundError. */
  linkByIndex(index: number): Link {
    return linkByIndex(this.#sock, index);
  }
  /** `ip -d link show`. */
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
  /** `ip link add link PARENT NAME [netns FD] type macvlan mode MODE [bcqueuelen Q]`. */
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
  /** `ip link add NAME type vrf table T` (the device starts down). */
  linkAddVrf(o: VrfOptions): void {
    linkAddVrf(this.#sock, o);
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
  /** `ip link set dev BR type bridge [vlan_filtering 0|1] [vlan_default_pvid N]`. */
  linkSetBridge(index: number, change: BridgeChange): void {
    linkSetBridge(this.#sock, index, change);
  }
  /** `bridge link set dev X hairpin on|off` (X must be a bridge port). */
  linkSetHairpin(index: number, on: boolean): void {
    linkSetHairpin(this.#sock, index, on);
  }
  /** `bridge link set dev X isolated on|off` (X must be a bridge port). */
  linkSetIsolated(index: number, on: boolean): void {
    linkSetIsolated(this.#sock, index, on);
  }

  // ---- bridge VLANs --------------------------------------------------------------------------
  /** `bridge vlan add dev X vid VID [pvid] [untagged] master|self`. */
  bridgeVlanAdd(index: number, spec: BridgeVlanSpec): void {
    bridgeVlanAdd(this.#sock, index, spec);
  }
  /** `bridge vlan del dev X vid VID master|self`. */
  bridgeVlanDel(index: number, spec: BridgeVlanSpec): void {
    bridgeVlanDel(this.#sock, index, spec);
  }
  /** `bridge vlan show`: ifindex → its VLAN entries (ports without entries are left out). */
  bridgeVlanList(): Map<number, BridgeVlanEntry[]> {
    return bridgeVlanList(this.#sock);
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

  // ---- policy routing rules ------------------------------------------------------------------
  /** `ip [-4|-6] rule list` (both families when `family` is omitted). */
  ruleList(family?: 4 | 6): RuleEntry[] {
    return ruleList(this.#sock, family);
  }
  /** `ip rule add [from P] [to P] [pref N] lookup T` (EEXIST for an identical rule). */
  ruleAdd(r: RuleSpec): void {
    ruleAdd(this.#sock, r);
  }
  /** `ip rule del [from P] [to P] [pref N] [lookup T]` (ENOENT when none matches). */
  ruleDel(r: RuleSpec): void {
    ruleDel(this.#sock, r);
  }

  // ---- tc: qdiscs, classes, filters ----------------------------------------------------------
  /** `tc qdisc show [dev X]`: every qdisc, or those of ifindex `index`. */
  qdiscList(index?: number): Qdisc[] {
    return qdiscList(this.#sock, index);
  }
  /** `tc qdisc add|replace dev X [parent P|root] handle H tbf rate R burst B limit L`. */
  qdiscTbf(op: QdiscOp, s: TbfSpec): void {
    qdiscTbf(this.#sock, op, s);
  }
  /** `tc qdisc add|replace dev X [parent P|root] handle H htb default D r2q R`. */
  qdiscHtb(op: QdiscOp, s: HtbQdiscSpec): void {
    qdiscHtb(this.#sock, op, s);
  }
  /** `tc qdisc add|replace dev X handle ffff: ingress`. */
  qdiscIngress(op: QdiscOp, index: number): void {
    qdiscIngress(this.#sock, op, index);
  }
  /** `tc qdisc add dev X clsact`. */
  qdiscClsactAdd(index: number): void {
    qdiscClsactAdd(this.#sock, index);
  }
  /** `tc qdisc del dev X root|ingress`. */
  qdiscDel(index: number, where: "root" | "ingress"): void {
    qdiscDel(this.#sock, index, where);
  }
  /** `tc class show dev X`. */
  classList(index: number): TcClass[] {
    return classList(this.#sock, index);
  }
  /** `tc class add|replace dev X parent P classid C htb rate R ceil C burst B cburst CB [quantum Q]`. */
  classHtb(op: QdiscOp, s: HtbClassSpec): void {
    classHtb(this.#sock, op, s);
  }
  /** `tc filter show dev X parent P`. */
  filterList(index: number, parent: number): Filter[] {
    return filterList(this.#sock, index, parent);
  }
  /** `tc filter add dev X parent P protocol PROTO prio N u32 match ... [classid C] [action ...]`. */
  filterAddU32(s: U32FilterSpec): void {
    filterAddU32(this.#sock, s);
  }
  /** `tc filter del dev X parent P protocol PROTO prio N`. */
  filterDel(index: number, parent: number, priority: number, protocol: number): void {
    filterDel(this.#sock, index, parent, priority, protocol);
  }
}
