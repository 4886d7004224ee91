/**
 * bridge: an interface plugin that attaches the container to a Linux bridge in the host netns
 * through a veth pair (upstream plugins/main/bridge/bridge.go at HEAD).
 * Verbs: ADD, CHECK, DEL, STATUS (code 50 when the `bridge` name is taken by a link that is not a
 * bridge, shared/iface/status.ts; then the IPAM plugin's) and GC (IPAM, then this network's stale
 * masquerade and spoof-check rules: gc.ts).
 *
 * ADD creates the bridge when missing, the veth pair (container end CNI_IFNAME, host end
 * `veth<8 hex>` as a bridge port with the hairpin / isolated / VLAN settings), optional MAC
 * spoof-check rules, then — with IPAM — the addresses and routes in the container, the gateway
 * addresses on the bridge, forwarding and masquerading. Without IPAM (L2-only) it just brings the
 * container end up. A failure rolls back through the DEL steps it reached.
 * DEL: IPAM DEL, the container link, the spoof-check rules, the masquerade rules — every step
 * attempted, failures reported together.
 *
 * Deliberate differences from upstream: DIFFERENCES.md.
 */
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InternalError, InvalidConfigError } from "../../shared/cni/errors.ts";
import { delegateToIpam, ipamStep, IPAM_STEP } from "../../shared/cni/ipam-delegation.ts";
import type { CmdArgs, Interface, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { annotate } from "../../shared/error/annotate.ts";
import { lockOf, systemFirewallPluginDeps, type FirewallDrivers, type FirewallPluginDeps } from "../../shared/firewall/backend.ts";
import { masqBackendOf, masqueradeTeardownStep, setupMasquerade } from "../../shared/firewall/ipmasq-steps.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import {
  CONTAINER_LINK_STEP,
  containerAddressHint,
  deleteContainerLink,
  enableNeighbourNotify,
  refuseL2ForOldVersions,
  setSysctlsQuietly,
  type CreatedLink,
} from "../../shared/iface/container-link.ts";
import { enableIPForward } from "../../shared/iface/forward.ts";
import { v11InterfaceFields } from "../../shared/iface/interface-fields.ts";
import { sleepSync } from "../../shared/iface/settle.ts";
import { interfaceStatus } from "../../shared/iface/status.ts";
import { setupVeth } from "../../shared/iface/veth.ts";
import { IF_OPER_UP } from "../../shared/netlink/constants/if-link.ts";
import { Handle, type Link } from "../../shared/netlink/index.ts";
import { NetNS } from "../../shared/netns/index.ts";
import { teardown, Undo, type TeardownStep } from "../../shared/undo/teardown.ts";
import { checkBridge } from "./check.ts";
import { loadBridgeConf, wantsVlanFiltering, type BridgeConf } from "./config.ts";
import { bridgeByName, bridgeStatus, ensureBridge } from "./ensure-bridge.ts";
import { collectGarbage } from "./gc.ts";
import { calcGateways, ensureAddr } from "./gateway.ts";
import { attachPort } from "./port.ts";
import { setupSpoofCheck, teardownSpoofCheck } from "./spoofcheck.ts";
import { ensureVlanGateway } from "./vlan-gateway.ts";

/** Delays between polls of the host veth's oper state (upstream's schedule). */
const PORT_STATE_POLLS_MS = [0, 50, 500, 1000, 1000];

function linkSummary(l: Link): Interface {
  return { name: l.name, ...(l.mac ? { mac: l.mac } : {}) };
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

function operStateName(s: number | undefined): string {
  return ["unknown", "not present", "down", "lower layer down", "testing", "dormant", "up"][s ?? 0] ?? `${s}`;
}

/** Options that cannot go together (code 7), checked before anything is created. */
function validateCombination(conf: BridgeConf): void {
  // A 0.1.0/0.2.0 result cannot carry an IP-less (L2) attachment; upstream fails the same way, but
  // only after creating the veth pair, which it then leaks.
  refuseL2ForOldVersions(conf.ipamType !== "", conf.cniVersion);
  if (conf.ipamType !== "" && conf.disableContainerInterface) {
    throw new InvalidConfigError("cannot use IPAM when DisableContainerInterface flag is set");
  }
  if (conf.hairpinMode && conf.promiscMode) {
    throw new InvalidConfigError("cannot set hairpin mode and promiscuous mode at the same time");
  }
}

const SPOOFCHECK_STEP = "spoof-check rules";

/**
 * What bridge removes, in DEL's order: the IPAM lease (first, while the container link exists, so a
 * dhcp lease can be released through it), the masquerade rules (keyed by network and container;
 * the addresses the link carries only help with legacy rule forms), the container link (the pair;
 * `created` on a rolled-back ADD), the spoof-check rules. The bridge, its addresses and the VLAN
 * gateway interface are shared by the network and stay.
 *
 * The rules go before the link (upstream removes them after it): the kernel's cleanup of the
 * rules' nf_tables commit (an RCU grace period) then runs during the veth's deletion, which waits
 * for the kernel longer, instead of delaying a plugin process's exit (shared/netlink/
 * netfilter-release.ts).
 */
function teardownSteps(conf: BridgeConf, args: CmdArgs, d: FirewallDrivers, created?: CreatedLink): TeardownStep[] {
  const attachment = { containerID: args.containerID, ifName: args.ifName };
  const spoofcheck = (): void => lockOf(d).whileDeleting({ network: conf.name, ...attachment }, () => teardownSpoofCheck(attachment, d.nftables));
  return [
    ipamStep(conf.ipamType, args),
    masqueradeTeardownStep(conf, args, d, () => containerAddressHint(args, created)),
    { name: CONTAINER_LINK_STEP, run: () => void deleteContainerLink(args, created) },
    { name: SPOOFCHECK_STEP, run: () => (conf.macspoofchk ? spoofcheck() : undefined) },
  ];
}

/** bridge, writing its spoof-check and masquerade rules through `deps` (shared/firewall/backend.ts). */
export function makeBridgePlugin(deps: FirewallPluginDeps): PluginSpec {
  async function add(args: CmdArgs): Promise<Result> {
    const conf = loadBridgeConf(args);
    validateCombination(conf);
    const masqBackend = masqBackendOf(conf);
    const d = deps.drivers(args);

    using hostNs = NetNS.current();
    using hostNl = Handle.open();
    let br = ensureBridge(hostNl, {
      name: conf.bridge,
      mtu: conf.mtu,
      promisc: conf.promiscMode,
      vlanFiltering: wantsVlanFiltering(conf),
    });

    using ns = openContainerNetns(args.netns);
    using contNl = Handle.open(ns);
    const created: CreatedLink = { nl: contNl };
    const undo = new Undo(teardownSteps(conf, args, d, created), args.stderr);
    try {
      const veth = setupVeth({
        containerNl: contNl,
        hostNl,
        hostNs,
        ifName: args.ifName,
        ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
        ...(conf.mac !== undefined ? { mac: conf.mac } : {}),
        onCreated: (index) => {
          created.index = index;
          undo.reached(CONTAINER_LINK_STEP);
        },
      });
      attachPort(hostNl, veth.host, br, {
        hairpin: conf.hairpinMode,
        isolated: conf.portIsolation,
        vlan: conf.vlan,
        trunk: conf.vlanTrunk ?? [],
        preserveDefaultVlan: conf.preserveDefaultVlan,
      });

      // The MTU the plugin set on both veth ends (a 1.1.0 result's interfaces carry it).
      const mtu = v11InterfaceFields(conf.cniVersion, { mtu: conf.mtu });
      const hostIface: Interface = { name: veth.host.name, mac: veth.host.mac, ...mtu };
      const brIface: Interface = linkSummary(br);
      const contIface: Interface = { name: veth.container.name, mac: veth.container.mac, sandbox: args.netns, ...mtu };
      const result: Result = { interfaces: [brIface, hostIface, contIface] };

      if (conf.macspoofchk) {
        undo.reached(SPOOFCHECK_STEP);
        const spoofcheck = { hostVeth: veth.host.name, containerMac: veth.container.mac, containerID: args.containerID, ifName: args.ifName };
        lockOf(d).whileAdding({ network: conf.name, ...spoofcheck }, () => setupSpoofCheck(spoofcheck, d.nftables));
      }

      if (conf.ipamType !== "") {
        const ipam = await args.delegate.add(conf.ipamType);
        undo.reached(IPAM_STEP);
        result.ips = ipam.ips ?? [];
        if (ipam.routes) result.routes = ipam.routes;
        if (ipam.dns) result.dns = ipam.dns;
        if (result.ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
        const gws = calcGateways(result, conf);

        const dad: [string, string][] = conf.enabledad
          ? [[`net/ipv6/conf/${args.ifName}/enhanced_dad`, "1"], [`net/ipv6/conf/${args.ifName}/accept_dad`, "1"]]
          : [[`net/ipv6/conf/${args.ifName}/accept_dad`, "0"]];
        setSysctlsQuietly(ns, dad);
        enableNeighbourNotify(ns, args.ifName, { ndisc: false });
        configureIface({ nl: contNl, ns, ifName: args.ifName, result, warn: args.stderr });

        if (conf.isGateway) {
          let target = br;
          if (conf.vlan !== 0 && gws[4].length + gws[6].length > 0) {
            target = ensureVlanGateway(hostNl, hostNs, br, conf);
            result.interfaces!.push(linkSummary(target));
          }
          const what = target === br ? "failed to set bridge addr" : "failed to set vlan interface for bridge with addr";
          for (const family of [4, 6] as const) {
            for (const gw of gws[family]) annotate(what, () => ensureAddr(hostNl, target, gw, conf.forceAddress));
          }
          annotate("failed to enable forwarding", () => enableIPForward({ v4: gws[4].length > 0, v6: gws[6].length > 0 }));
        }

        setupMasquerade(conf, args, result.ips, masqBackend, d, undo);
      } else if (!conf.disableContainerInterface) {
        annotate(`failed to set ${JSON.stringify(args.ifName)} up`, () => contNl.linkSetUp(veth.container.index));
      }

      const host = conf.disableContainerInterface ? hostNl.linkByIndex(veth.host.index) : waitPortUp(hostNl, veth.host.index);
      if (host.mac) hostIface.mac = host.mac;
      br = bridgeByName(hostNl, conf.bridge);
      if (br.mac) brIface.mac = br.mac;

      if (conf.dnsOverride) {
        if (conf.dns) result.dns = conf.dns;
        else delete result.dns;
      }
      return result;
    } catch (err) {
      return await undo.rollback(err);
    }
  }

  async function del(args: CmdArgs): Promise<void> {
    await teardown(teardownSteps(loadBridgeConf(args, { lenient: true }), args, deps.drivers(args)));
  }

  async function check(args: CmdArgs): Promise<void> {
    const conf = loadBridgeConf(args);
    using ns = openContainerNetns(args.netns);
    if (conf.ipamType !== "") await args.delegate.run(conf.ipamType, "CHECK");
    checkBridge(args, conf, ns, deps.drivers(args));
  }

  async function status(args: CmdArgs): Promise<void> {
    const conf = loadBridgeConf(args, { lenient: true });
    await interfaceStatus(args, { ipamType: conf.ipamType, hostLinks: (nl) => bridgeStatus(nl, conf.bridge) });
  }

  async function gc(args: CmdArgs): Promise<void> {
    await collectGarbage(loadBridgeConf(args, { lenient: true }), args, deps.drivers(args));
  }

  return { name: "bridge", versions: ALL_VERSIONS, add, check, del, status, gc };
}

export const bridgePlugin: PluginSpec = makeBridgePlugin(systemFirewallPluginDeps);
