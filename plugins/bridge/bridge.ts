/**
 * bridge: an interface plugin that attaches the container to a Linux bridge in the host netns
 * through a veth pair (upstream plugins/main/bridge/bridge.go at HEAD, upstream-matrix §2.1).
 * Verbs: ADD, CHECK, DEL, STATUS and GC (both delegated to the IPAM plugin when there is one).
 *
 * ADD creates the bridge when missing, the veth pair (container end CNI_IFNAME, host end
 * `veth<8 hex>` as a bridge port with the hairpin / isolated / VLAN settings), optional MAC
 * spoof-check rules, then — with IPAM — the addresses and routes in the container, the gateway
 * addresses on the bridge, forwarding and masquerading. Without IPAM (L2-only) it just brings the
 * container end up.
 *
 * Deviations from upstream (all deliberate):
 * - ADD rolls back what it did on failure (IPAM lease, veth pair, spoof-check and masquerade
 *   rules); upstream leaves the veth behind.
 * - The bridge MAC is pinned for every bridge, not only gateway bridges (cni#285, probe P31).
 * - CHECK works in L2 mode (upstream always delegates IPAM CHECK and fails with
 *   "no plugin name provided").
 * - DEL always removes masquerade rules, also when the netns is gone or CNI_NETNS is unset
 *   (upstream #810), and still runs every teardown step when IPAM DEL fails (the IPAM error is
 *   reported afterwards); a config whose VLAN/MTU/MAC values became invalid can still be deleted.
 * - Config errors are code 7 (upstream 999).
 */
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { delegate, delegateAdd } from "../../shared/cni/invoke.ts";
import { writeAllSync } from "../../shared/cni/stdio.ts";
import type { CmdArgs, Interface, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS, versionGte } from "../../shared/cni/version.ts";
import { Handle, type Link } from "../../shared/netlink/index.ts";
import { IF_OPER_UP } from "../../shared/netlink/constants/if-link.ts";
import { NetNS, withNetNS } from "../../shared/netns/index.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { enableIPForward } from "../../shared/iface/forward.ts";
import { sleepSync } from "../../shared/iface/settle.ts";
import { delLinkByNameAddr, setupVeth } from "../../shared/iface/veth.ts";
import { sysctlSet } from "../../shared/sysctl/index.ts";
import { parseMasqBackend, setupIPMasq, teardownIPMasq } from "../../shared/firewall/ipmasq.ts";
import { checkBridge } from "./check.ts";
import { loadBridgeConf, wantsVlanFiltering, type BridgeConf } from "./config.ts";
import { bridgeByName, ensureBridge } from "./ensure-bridge.ts";
import { calcGateways, ensureAddr } from "./gateway.ts";
import { attachPort } from "./port.ts";
import { setupSpoofCheck, teardownSpoofCheck } from "./spoofcheck.ts";
import { ensureVlanGateway } from "./vlan-gateway.ts";

/** Delays between polls of the host veth's oper state (upstream's schedule). */
const PORT_STATE_POLLS_MS = [0, 50, 500, 1000, 1000];

/** Undo steps of a half-done ADD, run newest first; failures go to stderr. */
class Rollback {
  readonly #steps: { what: string; run: () => void | Promise<void> }[] = [];
  push(what: string, run: () => void | Promise<void>): void {
    this.#steps.push({ what, run });
  }
  async run(): Promise<void> {
    for (const step of this.#steps.reverse()) {
      try {
        await step.run();
      } catch (err) {
        writeAllSync(2, `bridge: rollback (${step.what}) failed: ${messageOf(err)}\n`);
      }
    }
    this.#steps.length = 0;
  }
}

function linkSummary(l: Link): Interface {
  return { name: l.name, ...(l.mac ? { mac: l.mac } : {}) };
}

/** Writes a sysctl inside the container netns, ignoring failures (upstream ignores these too). */
function containerSysctl(ns: NetNS, key: string, value: string): void {
  try {
    withNetNS(ns, () => sysctlSet(key, value, { ignoreMissing: true }));
  } catch {
    // best effort
  }
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

function validateCombination(conf: BridgeConf): void {
  // A 0.1.0/0.2.0 result cannot carry an IP-less (L2) attachment; upstream fails the same way, but
  // only after creating the veth pair, which it then leaks.
  if (conf.ipamType === "" && !versionGte(conf.cniVersion, "0.3.0")) {
    throw new InternalError("cannot convert: no valid IP addresses");
  }
  if (conf.ipamType !== "" && conf.disableContainerInterface) {
    throw new InternalError("cannot use IPAM when DisableContainerInterface flag is set");
  }
  if (conf.hairpinMode && conf.promiscMode) {
    throw new InternalError("cannot set hairpin mode and promiscuous mode at the same time");
  }
}

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadBridgeConf(args);
  validateCombination(conf);
  const masqBackend = conf.ipMasq ? parseMasqBackend(conf.ipMasqBackend) : undefined;

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
  const rollback = new Rollback();
  try {
    const veth = setupVeth({
      containerNl: contNl,
      hostNl,
      hostNs,
      ifName: args.ifName,
      ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
      ...(conf.mac !== undefined ? { mac: conf.mac } : {}),
    });
    rollback.push("delete veth", () => {
      try {
        contNl.linkDel(veth.container.index);
      } catch {
        hostNl.linkDel(veth.host.index);
      }
    });
    attachPort(hostNl, veth.host, br, {
      hairpin: conf.hairpinMode,
      isolated: conf.portIsolation,
      vlan: conf.vlan,
      trunk: conf.vlanTrunk ?? [],
      preserveDefaultVlan: conf.preserveDefaultVlan,
    });

    const hostIface: Interface = { name: veth.host.name, mac: veth.host.mac };
    const brIface: Interface = linkSummary(br);
    const contIface: Interface = { name: veth.container.name, mac: veth.container.mac, sandbox: args.netns };
    const result: Result = { interfaces: [brIface, hostIface, contIface] };

    if (conf.macspoofchk) {
      setupSpoofCheck({ hostVeth: veth.host.name, containerMac: veth.container.mac, containerID: args.containerID, ifName: args.ifName });
      rollback.push("spoofcheck teardown", () => teardownSpoofCheck({ containerID: args.containerID, ifName: args.ifName }));
    }

    if (conf.ipamType !== "") {
      const ipam = await delegateAdd(conf.ipamType, args);
      rollback.push("IPAM DEL", () => delegate(conf.ipamType, args, "DEL"));
      result.ips = ipam.ips ?? [];
      if (ipam.routes) result.routes = ipam.routes;
      if (ipam.dns) result.dns = ipam.dns;
      if (result.ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
      const gws = calcGateways(result, conf);

      if (conf.enabledad) {
        containerSysctl(ns, `net/ipv6/conf/${args.ifName}/enhanced_dad`, "1");
        containerSysctl(ns, `net/ipv6/conf/${args.ifName}/accept_dad`, "1");
      } else {
        containerSysctl(ns, `net/ipv6/conf/${args.ifName}/accept_dad`, "0");
      }
      containerSysctl(ns, `net/ipv4/conf/${args.ifName}/arp_notify`, "1");
      configureIface({ nl: contNl, ns, ifName: args.ifName, result });

      if (conf.isGateway) {
        let target = br;
        if (conf.vlan !== 0 && gws[4].length + gws[6].length > 0) {
          target = ensureVlanGateway(hostNl, hostNs, br, conf);
          result.interfaces!.push(linkSummary(target));
        }
        for (const family of [4, 6] as const) {
          for (const gw of gws[family]) {
            try {
              ensureAddr(hostNl, target, gw, conf.forceAddress);
            } catch (err) {
              const what = target === br ? "failed to set bridge addr" : "failed to set vlan interface for bridge with addr";
              throw new InternalError(`${what}: ${messageOf(err)}`, { cause: err });
            }
          }
        }
        try {
          enableIPForward({ v4: gws[4].length > 0, v6: gws[6].length > 0 });
        } catch (err) {
          throw new InternalError(`failed to enable forwarding: ${messageOf(err)}`, { cause: err });
        }
      }

      if (conf.ipMasq) {
        const masq = { network: conf.name, containerID: args.containerID, ifName: args.ifName, ips: result.ips.map((i) => i.address) };
        rollback.push("ipMasq teardown", () => teardownIPMasq(masq));
        setupIPMasq(masq, masqBackend);
      }
    } else if (!conf.disableContainerInterface) {
      try {
        contNl.linkSetUp(veth.container.index);
      } catch (err) {
        throw new InternalError(`failed to set ${JSON.stringify(args.ifName)} up: ${messageOf(err)}`, { cause: err });
      }
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
    await rollback.run();
    throw err;
  }
}

async function del(args: CmdArgs): Promise<void> {
  const conf = loadBridgeConf(args, { lenient: true });
  const errors: unknown[] = [];
  let addrs: string[] | undefined;

  // IPAM first, while the container link still exists: a dhcp lease can then be released (DHCPRELEASE
  // leaves through that link); host-local and static do not care about the order.
  if (conf.ipamType !== "") {
    try {
      await delegate(conf.ipamType, args, "DEL");
    } catch (err) {
      errors.push(err);
    }
  }

  const ns = openNetnsForDel(args.netns);
  if (ns !== undefined) {
    using owned = ns;
    try {
      using contNl = Handle.open(owned);
      addrs = delLinkByNameAddr(contNl, args.ifName);
    } catch (err) {
      errors.push(err);
    }
  }

  if (conf.macspoofchk) {
    try {
      teardownSpoofCheck({ containerID: args.containerID, ifName: args.ifName });
    } catch (err) {
      writeAllSync(2, `${messageOf(err)}\n`);
    }
  }

  if (conf.ipMasq) {
    try {
      teardownIPMasq({ network: conf.name, containerID: args.containerID, ifName: args.ifName, ...(addrs && addrs.length > 0 ? { ips: addrs } : {}) });
    } catch (err) {
      errors.push(err);
    }
  }

  if (errors.length > 0) throw errors[0];
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadBridgeConf(args);
  using ns = openContainerNetns(args.netns);
  if (conf.ipamType !== "") await delegate(conf.ipamType, args, "CHECK");
  checkBridge(args, conf, ns);
}

async function status(args: CmdArgs): Promise<void> {
  const conf = loadBridgeConf(args, { lenient: true });
  if (conf.ipamType !== "") await delegate(conf.ipamType, args, "STATUS");
}

async function gc(args: CmdArgs): Promise<void> {
  const conf = loadBridgeConf(args, { lenient: true });
  if (conf.ipamType !== "") await delegate(conf.ipamType, args, "GC");
}

export const bridgePlugin: PluginSpec = {
  name: "bridge",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status,
  gc,
};
