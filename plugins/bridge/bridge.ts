/**
 * bridge: an interface plugin that attaches the container to a Linux bridge in the host netns
 * through a veth pair (upstream plugins/main/bridge/bridge.go at HEAD).
 * Verbs: ADD, CHECK, DEL, STATUS (code 50 when the `bridge` name is taken by a link that is not a
 * bridge, shared/iface/status.ts; then the IPAM plugin's) and GC (IPAM, then this network's stale
 * masquerade and spoof-check rules: gc.ts).
 *
 * ADD creates the bridge when missing, then runs its steps (add-steps.ts): the veth pair (container
 * end CNI_IFNAME, host end `veth<8 hex>` as a bridge port with the hairpin / isolated / VLAN
 * settings), optional MAC spoof-check rules, then — with IPAM — the addresses and routes in the
 * container, the gateway addresses on the bridge, forwarding and masquerading. Without IPAM
 * (L2-only) it just brings the container end up. A failure rolls back through the DEL steps it
 * reached.
 * DEL: IPAM DEL, the masquerade rules, the container link, the spoof-check rules — every step
 * attempted, failures reported together.
 *
 * Deliberate differences from upstream: DIFFERENCES.md.
 */
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InvalidConfigError } from "../../shared/cni/errors.ts";
import { ipamStep, IPAM_STEP } from "../../shared/cni/ipam-delegation.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { lockOf, type FirewallDrivers, type FirewallPluginDeps } from "../../shared/firewall/backend.ts";
import { systemFirewallPluginDeps } from "../../shared/firewall/system.ts";
import { MASQUERADE_STEP, masqBackendOf, masqueradeTeardownStep } from "../../shared/firewall/ipmasq-steps.ts";
import { CONTAINER_LINK_STEP, containerAddressHint, deleteContainerLink, refuseL2ForOldVersions, type CreatedLink } from "../../shared/iface/container-link.ts";
import { interfaceStatus } from "../../shared/iface/status.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { NetNS } from "../../shared/netns/netns.ts";
import { teardown, Undo, type TeardownStep } from "../../shared/undo/teardown.ts";
import {
  allocateAddresses,
  attachToBridge,
  bringContainerLinkUp,
  configureContainer,
  createVethPair,
  masquerade,
  overrideDns,
  readFinalMacs,
  setupGateways,
  setupSpoofCheckRules,
  type AddStep,
  type BridgeAdd,
} from "./add-steps.ts";
import { checkBridge } from "./check.ts";
import { loadBridgeConfig, wantsVlanFiltering, type BridgeConf } from "./config.ts";
import { bridgeStatus, ensureBridge } from "./ensure-bridge.ts";
import { collectGarbage } from "./gc.ts";
import { SPOOFCHECK_STEP, teardownSpoofCheck } from "./spoofcheck.ts";

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

const withIpam = (a: BridgeAdd): boolean => a.conf.ipamType !== "";

/**
 * What bridge's ADD does once the bridge exists and the container netns is open, in order (each
 * step: add-steps.ts); a failure rolls back through {@link teardownSteps}, as far as they were
 * reached.
 */
const ADD_STEPS: readonly AddStep[] = [
  { name: "veth pair", run: createVethPair },
  { name: "bridge port", run: attachToBridge },
  { name: SPOOFCHECK_STEP, when: (a) => a.conf.macspoofchk, run: setupSpoofCheckRules },
  { name: IPAM_STEP, when: withIpam, run: allocateAddresses },
  { name: "container addresses", when: withIpam, run: configureContainer },
  { name: "gateway addresses", when: (a) => withIpam(a) && a.conf.isGateway, run: setupGateways },
  { name: MASQUERADE_STEP, when: (a) => withIpam(a) && a.conf.ipMasq, run: masquerade },
  { name: "container link up", when: (a) => !withIpam(a) && !a.conf.disableContainerInterface, run: bringContainerLinkUp },
  { name: "final MACs", run: readFinalMacs },
  { name: "DNS override", when: (a) => a.conf.dnsOverride, run: overrideDns },
];

/** bridge, writing its spoof-check and masquerade rules through `deps` (shared/firewall/backend.ts). */
export function makeBridgePlugin(deps: FirewallPluginDeps): PluginSpec {
  async function add(args: CmdArgs): Promise<Result> {
    const conf = loadBridgeConfig(args);
    validateCombination(conf);
    const masqBackend = masqBackendOf(conf);
    const d = deps.drivers(args);
    using hostNs = NetNS.current();
    using hostNl = Handle.open();
    const br = ensureBridge(hostNl, { name: conf.bridge, mtu: conf.mtu, promisc: conf.promiscMode, vlanFiltering: wantsVlanFiltering(conf) });
    using ns = openContainerNetns(args.netns);
    using contNl = Handle.open(ns);
    const created: CreatedLink = { nl: contNl };
    const undo = new Undo(teardownSteps(conf, args, d, created), args.stderr);
    const a: BridgeAdd = { conf, args, d, masqBackend, hostNs, hostNl, ns, contNl, created, undo, br, result: {}, gateways: { 4: [], 6: [] } };
    try {
      for (const step of ADD_STEPS) {
        if (step.when?.(a) ?? true) await step.run(a);
      }
      return a.result;
    } catch (err) {
      return await undo.rollback(err);
    }
  }

  async function del(args: CmdArgs): Promise<void> {
    await teardown(teardownSteps(loadBridgeConfig(args, { forDel: true }), args, deps.drivers(args)));
  }

  async function check(args: CmdArgs): Promise<void> {
    const conf = loadBridgeConfig(args);
    using ns = openContainerNetns(args.netns);
    if (conf.ipamType !== "") await args.delegate.run(conf.ipamType, "CHECK");
    checkBridge(args, conf, ns, deps.drivers(args));
  }

  async function status(args: CmdArgs): Promise<void> {
    const conf = loadBridgeConfig(args, { forDel: true });
    await interfaceStatus(args, { ipamType: conf.ipamType, hostLinks: (nl) => bridgeStatus(nl, conf.bridge) });
  }

  async function gc(args: CmdArgs): Promise<void> {
    await collectGarbage(loadBridgeConfig(args, { forDel: true }), args, deps.drivers(args));
  }

  return { name: "bridge", versions: ALL_VERSIONS, add, check, del, status, gc };
}

export const bridgePlugin: PluginSpec = makeBridgePlugin(systemFirewallPluginDeps);
