/**
 * The container's link: how macvlan, ipvlan, vlan, dummy and tap give the container one new link,
 * and how every interface plugin removes the container link it made.
 *
 * ADD ({@link addContainerLink}, upstream's cmdAdd of those five plugins): create the link under a
 * random temporary name so that it lands in the container netns (upstream: "due to kernel bug ... it
 * might collide with the name on the host"), rename it to CNI_IFNAME there, let the plugin configure
 * it, then the addresses — from IPAM ADD, from a chained prevResult (ipvlan), or none (L2: the link
 * is just set up) — with arp/ndisc notify and ConfigureIface. A failure rolls back through the same
 * steps DEL runs ({@link containerLinkTeardown}: IPAM DEL, delete the link — the one this ADD created,
 * by index, never a same-named link that was there before).
 *
 * The plugin supplies only what differs ({@link ContainerLinkSpec}): how the link is created, extra
 * settings, where addresses come from, and what goes into the result.
 */
import { InternalError, InvalidConfigError } from "../cni/errors.ts";
import { openNetnsForDel } from "../cni/container-netns.ts";
import { ipamStep, IPAM_STEP } from "../cni/ipam-delegation.ts";
import type { CmdArgs, DNS, Interface, Result } from "../cni/types.ts";
import { resultFamily } from "../cni/version.ts";
import { annotate, annotateError } from "../error/annotate.ts";
import { isGlobalUnicast, parseIP } from "../ip/addr.ts";
import { Handle } from "../netlink/handle.ts";
import { isNotFound } from "../netlink/errors.ts";
import type { Link } from "../netlink/link.ts";
import type { NetNS } from "../netns/netns.ts";
import { teardown, Undo, type TeardownStep } from "../undo/teardown.ts";
import { configureIface } from "./configure.ts";
import { v11InterfaceFields } from "./interface-fields.ts";
import { randomVethName } from "./link-names.ts";
import { enableNeighbourNotify } from "./link-sysctls.ts";

/**
 * A result without IPs cannot be printed for cniVersion 0.1.0/0.2.0 (`cannot convert: no valid IP
 * addresses`); L2-only plugins refuse such an ADD up front instead of failing after the link exists.
 */
export function refuseL2ForOldVersions(isLayer3: boolean, cniVersion: string): void {
  if (!isLayer3 && resultFamily(cniVersion) === "020") throw new InternalError("cannot convert: no valid IP addresses");
}

/** dummy works only with IPAM: `<kind> interface requires an IPAM configuration` (code 7). */
export function requireIpam(kind: string, ipamType: string): void {
  if (ipamType === "") throw new InvalidConfigError(`${kind} interface requires an IPAM configuration`);
}

/**
 * The master of a macvlan, ipvlan or vlan link, looked up through `nl` (the host's handle, or the
 * container's with `linkInContainer`): `failed to lookup master "x": …`. With `mtu`, the link's MTU
 * must not exceed the master's: `invalid MTU N, must be [0, master MTU(M)]` (code 7).
 */
export function lookupMaster(nl: Handle, name: string, mtu = 0): Link {
  const master = annotate(`failed to lookup master ${JSON.stringify(name)}`, () => nl.linkByName(name));
  if (mtu > master.mtu) throw new InvalidConfigError(`invalid MTU ${mtu}, must be [0, master MTU(${master.mtu})]`);
  return master;
}

/** The name of a kernel mode value (MACVLAN_MODE_*, IPVLAN_MODE_*) in `byName`, for CHECK's messages. */
export function kernelModeName(value: number | undefined, byName: Readonly<Record<string, number>>): string {
  for (const [name, v] of Object.entries(byName)) if (v === value) return name;
  return `unknown(${value ?? "none"})`;
}

/** The result entry for a container link. */
export function containerInterface(link: Link, sandbox: string): Interface {
  return { name: link.name, mac: link.mac ?? "", sandbox };
}

/** The link a running ADD created: where (its handle) and, once it exists, its index. */
export interface CreatedLink {
  nl: Handle;
  index?: number;
}

/** Name of the teardown step that deletes the container link. */
export const CONTAINER_LINK_STEP = "container link";

/**
 * Deletes the container link: the one this ADD created (`created`, by index), else (DEL) CNI_IFNAME
 * in CNI_NETNS; a netns or link already gone is fine.
 */
export function deleteContainerLink(args: CmdArgs, created?: CreatedLink): void {
  if (created !== undefined) {
    if (created.index !== undefined) deleteLink(created.nl, created.index, args.ifName);
    return;
  }
  const ns = openNetnsForDel(args.netns);
  if (ns === undefined) return;
  using owned = ns;
  using nl = Handle.open(owned);
  delLinkByName(nl, args.ifName);
}

/**
 * The global-unicast addresses of the container's CNI_IFNAME as CIDRs (`10.1.2.3/24`), read before
 * DEL removes the link, for a step that uses them only as a hint (bridge's and ptp's masquerade
 * teardown: which IP families to look at): [] on a rolled-back ADD (`created`), and when the netns
 * or the link is gone or cannot be read (the container-link step reports its own failure).
 */
export function containerAddressHint(args: CmdArgs, created?: CreatedLink): string[] {
  if (created !== undefined) return [];
  try {
    const ns = openNetnsForDel(args.netns);
    if (ns === undefined) return [];
    using owned = ns;
    using nl = Handle.open(owned);
    return linkGlobalAddresses(nl, args.ifName);
  } catch {
    return [];
  }
}

/** The global-unicast addresses of link `ifName` as CIDRs; [] when there is no such link. */
export function linkGlobalAddresses(nl: Handle, ifName: string): string[] {
  const link = annotate(`failed to lookup ${JSON.stringify(ifName)}`, () => nl.linkFind(ifName));
  if (link === undefined) return [];
  return annotate(`failed to get IP addresses for ${JSON.stringify(ifName)}`, () =>
    nl
      .addrList({ index: link.index })
      .filter((a) => {
        const ip = parseIP(a.address);
        return ip !== null && isGlobalUnicast(ip);
      })
      .map((a) => `${a.address}/${a.prefixLen}`),
  );
}

/** `ip link del IFNAME` (a veth takes its peer along); a missing link is fine. */
export function delLinkByName(nl: Handle, ifName: string): void {
  const link = annotate(`failed to lookup ${JSON.stringify(ifName)}`, () => nl.linkFind(ifName));
  if (link !== undefined) deleteLink(nl, link.index, ifName);
}

function deleteLink(nl: Handle, index: number, ifName: string): void {
  try {
    nl.linkDel(index);
  } catch (err) {
    if (!isNotFound(err)) throw annotateError(`failed to delete ${JSON.stringify(ifName)}`, err);
  }
}

/**
 * The teardown of a plugin that owns one container link (macvlan, ipvlan, vlan, dummy, tap), in
 * DEL's order: IPAM DEL first (a dhcp lease is released while the link still exists), then the link.
 * `created` is given by ADD (rollback), absent on DEL.
 */
export function containerLinkTeardown(args: CmdArgs, ipamType: string, created?: CreatedLink): TeardownStep[] {
  return [
    ipamStep(ipamType, args),
    {
      name: CONTAINER_LINK_STEP,
      run: () => {
        deleteContainerLink(args, created);
      },
    },
  ];
}

/** DEL of macvlan, ipvlan, vlan, dummy and tap: every step of {@link containerLinkTeardown}, failures reported together. */
export async function delContainerLink(args: CmdArgs, ipamType: string): Promise<void> {
  await teardown(containerLinkTeardown(args, ipamType));
}

/** What one container-link plugin does differently. */
export interface ContainerLinkSpec {
  /** The link's type as the messages name it: "macvlan", "ipvlan", "vlan", "dummy", "tap". */
  kind: string;
  /** Creates the link, named `tmpName`, so that it lands in the container netns. One call. */
  create(tmpName: string): void;
  /** Settings of the renamed link (its index) before the addresses (tap: MTU, MAC, bridge port, up). */
  configure?(index: number): void;
  /** `ipam.type`: IPAM ADD gives the addresses; "" = none (L2, or {@link chained}). */
  ipamType: string;
  /** ipvlan chained after another plugin: the prevResult whose IPs and routes are configured. */
  chained?: Result;
  /** arp_notify (and ndisc_notify) on the link before its addresses (macvlan, ipvlan; tap: arp only). */
  neighbourNotify?: { ndisc: boolean };
  /** The result's `dns`: the config's (undefined = none), or IPAM's (dummy, as upstream). */
  dns: DNS | undefined | "ipam";
  /** The plugin set the link's MTU (config `mtu`): a 1.1.0 result's interface carries it. */
  setsMtu?: boolean;
}

/** The container netns and a Handle whose socket lives in it. */
export interface ContainerNetns {
  ns: NetNS;
  nl: Handle;
}

/** ADD of macvlan, ipvlan, vlan, dummy and tap (see the module comment); returns the result. */
export async function addContainerLink(args: CmdArgs, container: ContainerNetns, spec: ContainerLinkSpec): Promise<Result> {
  const { ns, nl } = container;
  const created: CreatedLink = { nl };
  const undo = new Undo(containerLinkTeardown(args, spec.ipamType, created), args.stderr);
  try {
    const tmpName = randomVethName();
    annotate(`failed to create ${spec.kind}`, () => spec.create(tmpName));
    const tmp = annotate(`failed to find the new ${spec.kind} ${JSON.stringify(tmpName)} in the container`, () => nl.linkByName(tmpName));
    created.index = tmp.index;
    undo.reached(CONTAINER_LINK_STEP);
    annotate(`failed to rename ${spec.kind} to ${JSON.stringify(args.ifName)}`, () => nl.linkSetName(tmp.index, args.ifName));
    spec.configure?.(tmp.index);
    const link = annotate(`failed to refetch ${spec.kind} ${JSON.stringify(args.ifName)}`, () => nl.linkByIndex(tmp.index));

    const mtu = spec.setsMtu === true ? link.mtu : undefined;
    const result: Result = { interfaces: [{ ...containerInterface(link, args.netns), ...v11InterfaceFields(args.cniVersion, { mtu }) }] };
    let source = spec.chained;
    if (source === undefined && spec.ipamType !== "") {
      source = await args.delegate.add(spec.ipamType);
      undo.reached(IPAM_STEP);
    }
    if (source === undefined) {
      annotate(`failed to set ${JSON.stringify(args.ifName)} UP`, () => nl.linkSetUp(link.index));
    } else {
      const ips = source.ips ?? [];
      if (ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
      result.ips = ips.map((ip) => ({ ...ip, interface: 0 }));
      if (source.routes !== undefined) result.routes = source.routes;
      if (spec.neighbourNotify !== undefined) enableNeighbourNotify(ns, args.ifName, spec.neighbourNotify);
      configureIface({ nl, ns, ifName: args.ifName, result, warn: args.stderr });
    }
    const dns = spec.dns === "ipam" ? source?.dns : spec.dns;
    if (dns !== undefined) result.dns = dns;
    return result;
  } catch (err) {
    return await undo.rollback(err);
  }
}
