/**
 * The steps of bridge's ADD (their list, in order: bridge.ts ADD_STEPS), run once the bridge exists
 * and the container netns is open. Each step changes one thing and notes in the call's
 * {@link BridgeAdd} what the steps after it need; a step that makes something DEL removes marks that
 * teardown step reached in the call's Undo (shared/undo/teardown.ts) first, so a failure rolls back
 * exactly what was reached.
 */
import { InternalError } from "../../shared/cni/errors.ts";
import { IPAM_STEP } from "../../shared/cni/ipam-delegation.ts";
import type { CmdArgs, Interface, Result } from "../../shared/cni/types.ts";
import { annotate } from "../../shared/error/annotate.ts";
import { lockOf, type FirewallDrivers } from "../../shared/firewall/backend.ts";
import { setupMasquerade } from "../../shared/firewall/ipmasq-steps.ts";
import type { MasqBackendName } from "../../shared/firewall/ipmasq-feature.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { CONTAINER_LINK_STEP, type CreatedLink } from "../../shared/iface/container-link.ts";
import { enableNeighbourNotify, setSysctlsQuietly } from "../../shared/iface/link-sysctls.ts";
import { enableIPForward } from "../../shared/iface/forward.ts";
import { v11InterfaceFields } from "../../shared/iface/interface-fields.ts";
import { sleepSync } from "../../shared/iface/settle.ts";
import { setupVeth, type LinkInfo } from "../../shared/iface/veth.ts";
import { IF_OPER_UP } from "../../shared/netlink/constants/if-link.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import type { NetNS } from "../../shared/netns/netns.ts";
import type { Undo } from "../../shared/undo/teardown.ts";
import type { BridgeConf } from "./config.ts";
import { bridgeByName } from "./ensure-bridge.ts";
import { calcGateways, ensureAddr, type Gateways } from "./gateway.ts";
import { attachPort } from "./port.ts";
import { setupSpoofCheck, SPOOFCHECK_STEP } from "./spoofcheck.ts";
import { ensureVlanGateway } from "./vlan-gateway.ts";

/** One bridge ADD as its steps see it: the call, where it works, and what earlier steps made. */
export interface BridgeAdd {
  readonly conf: BridgeConf;
  readonly args: CmdArgs;
  readonly d: FirewallDrivers;
  /** The masquerade backend, checked before anything was created. */
  readonly masqBackend: MasqBackendName | undefined;
  readonly hostNs: NetNS;
  readonly hostNl: Handle;
  /** The container netns, and a Handle whose socket lives in it. */
  readonly ns: NetNS;
  readonly contNl: Handle;
  /** The container link this ADD created (its index once the pair exists), for the rollback. */
  readonly created: CreatedLink;
  readonly undo: Undo;
  /** The bridge. */
  readonly br: Link;
  /** What "veth pair" made. */
  pair?: VethPair;
  /** The result: its interfaces from "veth pair" on, the IPAM parts from "IPAM" on. */
  readonly result: Result;
  /** The gateway addresses the result's IPs call for: none until "IPAM". */
  gateways: Gateways;
}

/** Both ends of the pair, and the result's entries for the bridge and the host end (their MACs are read again last). */
interface VethPair {
  host: LinkInfo;
  container: LinkInfo;
  bridgeIface: Interface;
  hostIface: Interface;
}

/** One step of ADD; `when` (default: always) says whether it applies to this call. */
export interface AddStep {
  readonly name: string;
  when?(a: BridgeAdd): boolean;
  run(a: BridgeAdd): void | Promise<void>;
}

/** Delays between polls of the host veth's oper state (upstream's schedule). */
const PORT_STATE_POLLS_MS = [0, 50, 500, 1000, 1000];

function linkSummary(l: Link): Interface {
  return { name: l.name, ...(l.mac ? { mac: l.mac } : {}) };
}

function operStateName(s: number | undefined): string {
  return ["unknown", "not present", "down", "lower layer down", "testing", "dormant", "up"][s ?? 0] ?? `${s}`;
}

/** Waits until the host veth is oper-UP, as upstream; returns it fresh. */
function waitPortUp(nl: Handle, index: number): Link {
  let link = nl.linkByIndex(index);
  for (const [i, ms] of PORT_STATE_POLLS_MS.entries()) {
    if (ms > 0) sleepSync(ms);
    link = nl.linkByIndex(index);
    if (link.operState === IF_OPER_UP) return link;
    if (i === PORT_STATE_POLLS_MS.length - 1) throw new InternalError(`bridge port in error state: ${operStateName(link.operState)}`);
  }
  return link;
}

/** The pair made by "veth pair". */
function pairOf(a: BridgeAdd): VethPair {
  if (a.pair === undefined) throw new TypeError("bridge ADD: a step ran before the veth pair exists");
  return a.pair;
}

/** The container end (CNI_IFNAME, MTU and MAC as configured) and its host peer; the result names them after the bridge. */
export function createVethPair(a: BridgeAdd): void {
  const { conf, args } = a;
  const veth = setupVeth({
    containerNl: a.contNl,
    hostNl: a.hostNl,
    hostNs: a.hostNs,
    ifName: args.ifName,
    ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
    ...(conf.mac !== undefined ? { mac: conf.mac } : {}),
    onCreated: (index) => {
      a.created.index = index;
      a.undo.reached(CONTAINER_LINK_STEP);
    },
  });
  // The MTU the plugin set on both veth ends (a 1.1.0 result's interfaces carry it).
  const mtu = v11InterfaceFields(conf.cniVersion, { mtu: conf.mtu });
  a.pair = { ...veth, bridgeIface: linkSummary(a.br), hostIface: { name: veth.host.name, mac: veth.host.mac, ...mtu } };
  a.result.interfaces = [a.pair.bridgeIface, a.pair.hostIface, { name: veth.container.name, mac: veth.container.mac, sandbox: args.netns, ...mtu }];
}

/** The host end becomes a port of the bridge, with the hairpin, isolation and VLAN settings. */
export function attachToBridge(a: BridgeAdd): void {
  const { conf } = a;
  attachPort(a.hostNl, pairOf(a).host, a.br, {
    hairpin: conf.hairpinMode,
    isolated: conf.portIsolation,
    vlan: conf.vlan,
    trunk: conf.vlanTrunk ?? [],
    preserveDefaultVlan: conf.preserveDefaultVlan,
  });
}

/** Only the container's MAC may come in through the port (spoofcheck.ts), under the firewall lock. */
export function setupSpoofCheckRules(a: BridgeAdd): void {
  a.undo.reached(SPOOFCHECK_STEP);
  const veth = pairOf(a);
  const spoofcheck = { hostVeth: veth.host.name, containerMac: veth.container.mac, containerID: a.args.containerID, ifName: a.args.ifName };
  lockOf(a.d).whileAdding({ network: a.conf.name, ...spoofcheck }, () => setupSpoofCheck(spoofcheck, a.d.nftables));
}

/** IPAM ADD; its addresses, routes and DNS go into the result, completed with the gateways (gateway.ts). */
export async function allocateAddresses(a: BridgeAdd): Promise<void> {
  const ipam = await a.args.delegate.add(a.conf.ipamType);
  a.undo.reached(IPAM_STEP);
  const result = a.result;
  result.ips = ipam.ips ?? [];
  if (ipam.routes) result.routes = ipam.routes;
  if (ipam.dns) result.dns = ipam.dns;
  if (result.ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
  a.gateways = calcGateways(result, a.conf);
}

/** DAD and neighbour notification settings, then the result's addresses and routes on the container end. */
export function configureContainer(a: BridgeAdd): void {
  const { args, ns } = a;
  const dad: [string, string][] = a.conf.enabledad
    ? [[`net/ipv6/conf/${args.ifName}/enhanced_dad`, "1"], [`net/ipv6/conf/${args.ifName}/accept_dad`, "1"]]
    : [[`net/ipv6/conf/${args.ifName}/accept_dad`, "0"]];
  setSysctlsQuietly(ns, dad);
  enableNeighbourNotify(ns, args.ifName, { ndisc: false });
  configureIface({ nl: a.contNl, ns, ifName: args.ifName, result: a.result, warn: args.stderr });
}

/** `isGateway`: the gateway addresses on the bridge (or its VLAN interface, then in the result too), and forwarding. */
export function setupGateways(a: BridgeAdd): void {
  const { conf, hostNl } = a;
  const gws = a.gateways;
  let target = a.br;
  if (conf.vlan !== 0 && gws[4].length + gws[6].length > 0) {
    target = ensureVlanGateway(hostNl, a.hostNs, a.br, conf);
    a.result.interfaces?.push(linkSummary(target));
  }
  const what = target === a.br ? "failed to set bridge addr" : "failed to set vlan interface for bridge with addr";
  for (const family of [4, 6] as const) {
    for (const gw of gws[family]) annotate(what, () => ensureAddr(hostNl, target, gw, conf.forceAddress));
  }
  annotate("failed to enable forwarding", () => enableIPForward({ v4: gws[4].length > 0, v6: gws[6].length > 0 }));
}

/** `ipMasq`: the result's addresses masqueraded (shared/firewall/ipmasq-steps.ts). */
export function masquerade(a: BridgeAdd): void {
  setupMasquerade(a.conf, a.args, a.result.ips ?? [], a.masqBackend, a.d, a.undo);
}

/** Without IPAM (L2 only), nothing configures the container end: it is just set up. */
export function bringContainerLinkUp(a: BridgeAdd): void {
  annotate(`failed to set ${JSON.stringify(a.args.ifName)} up`, () => a.contNl.linkSetUp(pairOf(a).container.index));
}

/** The host veth (oper-UP, as upstream waits for, unless the container end is disabled) and the bridge, read again for their MACs. */
export function readFinalMacs(a: BridgeAdd): void {
  const { conf, hostNl } = a;
  const pair = pairOf(a);
  const host = conf.disableContainerInterface ? hostNl.linkByIndex(pair.host.index) : waitPortUp(hostNl, pair.host.index);
  if (host.mac) pair.hostIface.mac = host.mac;
  const br = bridgeByName(hostNl, conf.bridge);
  if (br.mac) pair.bridgeIface.mac = br.mac;
}

/** A configured `dns` replaces IPAM's (an empty one removes it). */
export function overrideDns(a: BridgeAdd): void {
  if (a.conf.dns) a.result.dns = a.conf.dns;
  else delete a.result.dns;
}
