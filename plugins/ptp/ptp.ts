/**
 * ptp: an interface plugin that connects the container to the host with a veth pair and routes
 * (no bridge). Mirrors upstream plugins/main/ptp/ptp.go (HEAD); the container end takes the MAC
 * of CNI_ARGS `MAC` / `runtimeConfig.mac` (beyond upstream, #492).
 *
 * ADD: IPAM ADD first (every address needs a gateway), forwarding sysctls, the veth pair
 * (CNI_IFNAME in the container, `vethXXXXXXXX` in the host with accept_ra=0), ConfigureIface, the
 * container's connected route replaced by a route via the gateway (so all traffic goes through the
 * host), `<gw>/32` (/128) on the host veth plus a host route to the container address, then ipMasq.
 * A failure rolls back through the DEL steps it reached.
 * CHECK: IPAM CHECK, then the prevResult's container interface (veth, MAC), addresses and routes,
 * and the masquerade rules when `ipMasq` is set.
 * DEL: IPAM DEL, the link if the netns still exists, the masquerade rules — every step attempted,
 * failures reported together. STATUS delegates to IPAM; GC too, then collects the stale
 * masquerade rules (shared/firewall/ipmasq-steps.ts, as bridge).
 *
 * Deliberate differences from upstream: DIFFERENCES.md.
 */
import { runtimeContainerMac } from "../../shared/cni/container-mac.ts";
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { delegateToIpam, ipamStep, IPAM_STEP } from "../../shared/cni/ipam-delegation.ts";
import { validAttachmentsOf } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { annotate, annotateError } from "../../shared/error/annotate.ts";
import type { FirewallDrivers, FirewallPluginDeps } from "../../shared/firewall/backend.ts";
import { systemFirewallPluginDeps } from "../../shared/firewall/system.ts";
import { checkMasquerade, collectMasquerade, masqBackendOf, masqueradeTeardownStep, setupMasquerade } from "../../shared/firewall/ipmasq-steps.ts";
import { checkContainerLink } from "../../shared/iface/check.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { CONTAINER_LINK_STEP, containerAddressHint, deleteContainerLink, type CreatedLink } from "../../shared/iface/container-link.ts";
import { enableIPForward, forwardFamiliesOf } from "../../shared/iface/forward.ts";
import { v11InterfaceFields } from "../../shared/iface/interface-fields.ts";
import { setupVeth, type LinkInfo } from "../../shared/iface/veth.ts";
import { IFA_F_NODAD } from "../../shared/netlink/constants/if-addr.ts";
import { RT_SCOPE_HOST, RT_SCOPE_LINK, RT_SCOPE_UNIVERSE } from "../../shared/netlink/constants/rtnetlink.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { isExists } from "../../shared/netlink/errors.ts";
import { NetNS } from "../../shared/netns/netns.ts";
import { teardown, Undo, type TeardownStep } from "../../shared/undo/teardown.ts";
import { loadPtpConfig, type PtpConfig } from "./config.ts";
import { ptpAddress, type PtpAddress } from "./routes.ts";

/** Index of the container interface in the result (host veth is 0). */
const CONTAINER_IFACE = 1;

// ---- kernel helpers --------------------------------------------------------------------------

/** In the container: replace each connected route by a /32 to the gateway and the subnet via it. */
function routeThroughGateway(nl: Handle, ifName: string, index: number, addrs: readonly PtpAddress[]): void {
  for (const a of addrs) {
    // `ip route del NET dev IF` (the kernel's connected route).
    annotate(`failed to delete route ${a.network.address}/${a.network.prefixLen} dev ${ifName}`, () =>
      nl.routeDel({ family: a.family, dst: a.network, oif: index }),
    );
    // `ip route add GW/32 dev IF scope link src IP`
    const toGateway = { family: a.family, dst: { address: a.gateway, prefixLen: a.hostPrefixLen }, oif: index, scope: RT_SCOPE_LINK, src: a.ip };
    // `ip route add NET via GW dev IF src IP`
    const viaGateway = { family: a.family, dst: a.network, gw: a.gateway, oif: index, scope: RT_SCOPE_UNIVERSE, src: a.ip };
    for (const r of [toGateway, viaGateway]) {
      const via = "gw" in r ? ` via ${r.gw}` : "";
      annotate(`failed to add route ${r.dst.address}/${r.dst.prefixLen}${via} dev ${ifName} src ${a.ip}`, () => nl.routeAdd(r));
    }
  }
}

/** In the host: `ip addr add GW/32 dev VETH` and `ip route add IP/32 dev VETH scope host` per address. */
function setupHostVeth(nl: Handle, host: LinkInfo, addrs: readonly PtpAddress[]): void {
  for (const a of addrs) {
    annotate(`failed to add IP addr ${a.gateway}/${a.hostPrefixLen} to veth`, () =>
      nl.addrAdd(host.index, {
        address: a.gateway,
        prefixLen: a.hostPrefixLen,
        family: a.family,
        ...(a.family === 6 ? { flags: IFA_F_NODAD } : {}),
      }),
    );
    try {
      nl.routeAdd({ family: a.family, dst: { address: a.ip, prefixLen: a.hostPrefixLen }, oif: host.index, scope: RT_SCOPE_HOST });
    } catch (err) {
      if (!isExists(err)) throw annotateError("failed to add route on host", err);
    }
  }
}

// ---- verbs -----------------------------------------------------------------------------------

/**
 * What ptp removes, in DEL's order: the IPAM lease, the masquerade rules (keyed by network and
 * container; the addresses the link carries only help with legacy rule forms), the container link
 * (the pair; `created` on a rolled-back ADD). The rules go before the link, as in bridge (see its
 * teardownSteps).
 */
function teardownSteps(conf: PtpConfig, args: CmdArgs, d: FirewallDrivers, created?: CreatedLink): TeardownStep[] {
  return [
    ipamStep(conf.ipamType, args),
    masqueradeTeardownStep(conf, args, d, () => containerAddressHint(args, created)),
    { name: CONTAINER_LINK_STEP, run: () => void deleteContainerLink(args, created) },
  ];
}

/** ptp, writing its masquerade rules through `deps` (shared/firewall/backend.ts). */
export function makePtpPlugin(deps: FirewallPluginDeps): PluginSpec {
  async function add(args: CmdArgs): Promise<Result> {
    const conf = loadPtpConfig(args);
    // Refuse an unknown ipMasqBackend before anything is allocated.
    const backend = masqBackendOf(conf);
    const mac = runtimeContainerMac(args, conf.runtimeMac);
    const d = deps.drivers(args);
    using ns = openContainerNetns(args.netns);
    using hostNs = NetNS.current();
    using containerNl = Handle.open(ns);
    using hostNl = Handle.open(hostNs);
    const created: CreatedLink = { nl: containerNl };
    const undo = new Undo(teardownSteps(conf, args, d, created), args.stderr);
    try {
      const result = await args.delegate.add(conf.ipamType);
      undo.reached(IPAM_STEP);
      const ips = result.ips ?? [];
      if (ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
      const addrs: PtpAddress[] = [];
      for (const ipc of ips) {
        const a = ptpAddress(ipc.address, ipc.gateway);
        if (typeof a === "string") throw new InternalError(a);
        addrs.push(a);
      }
      annotate("Could not enable IP forwarding", () => enableIPForward(forwardFamiliesOf(ips)));

      const veth = setupVeth({
        containerNl,
        hostNl,
        hostNs,
        ifName: args.ifName,
        ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
        ...(mac !== undefined ? { mac } : {}),
        onCreated: (index) => {
          created.index = index;
          undo.reached(CONTAINER_LINK_STEP);
        },
      });
      for (const ipc of ips) ipc.interface = CONTAINER_IFACE;
      const mtu = v11InterfaceFields(args.cniVersion, { mtu: conf.mtu });
      result.interfaces = [
        { name: veth.host.name, mac: veth.host.mac, ...mtu },
        { name: veth.container.name, mac: veth.container.mac, sandbox: args.netns, ...mtu },
      ];
      configureIface({ nl: containerNl, ns, ifName: args.ifName, result, warn: args.stderr });
      routeThroughGateway(containerNl, args.ifName, veth.container.index, addrs);
      setupHostVeth(hostNl, veth.host, addrs);
      setupMasquerade(conf, args, ips, backend, d, undo);
      if (conf.dns !== undefined) result.dns = conf.dns;
      return result;
    } catch (err) {
      return await undo.rollback(err);
    }
  }

  async function check(args: CmdArgs): Promise<void> {
    const conf = loadPtpConfig(args);
    using ns = openContainerNetns(args.netns);
    using nl = Handle.open(ns);
    const prev = await checkContainerLink(args, nl, {
      ipamType: conf.ipamType,
      kind: "veth",
      kindLabel: "veth/p2p",
      wording: { prevResultPrefix: "ptp: ", linkPrefix: "ptp: " },
    });
    checkMasquerade(conf, args, (prev.ips ?? []).map((i) => i.address), deps.drivers(args));
  }

  async function del(args: CmdArgs): Promise<void> {
    await teardown(teardownSteps(loadPtpConfig(args, { forDel: true }), args, deps.drivers(args)));
  }

  async function status(args: CmdArgs): Promise<void> {
    await delegateToIpam(loadPtpConfig(args).ipamType, args, "STATUS");
  }

  async function gc(args: CmdArgs): Promise<void> {
    const conf = loadPtpConfig(args);
    await delegateToIpam(conf.ipamType, args, "GC");
    const keep = validAttachmentsOf(args.config);
    if (keep !== undefined) collectMasquerade(conf, keep, deps.drivers(args));
  }

  return { name: "ptp", versions: ALL_VERSIONS, add, check, del, status, gc };
}

export const ptpPlugin: PluginSpec = makePtpPlugin(systemFirewallPluginDeps);
