/**
 * ptp: an interface plugin that connects the container to the host with a veth pair and routes
 * (no bridge). Mirrors upstream plugins/main/ptp/ptp.go (HEAD), upstream-matrix §2.2.
 *
 * ADD: IPAM ADD first (every address needs a gateway), forwarding sysctls, the veth pair
 * (CNI_IFNAME in the container, `vethXXXXXXXX` in the host with accept_ra=0), ConfigureIface, the
 * container's connected route replaced by a route via the gateway (so all traffic goes through the
 * host), `<gw>/32` (/128) on the host veth plus a host route to the container address, then ipMasq.
 * CHECK: IPAM CHECK, then the prevResult's container interface (veth, MAC), addresses and routes.
 * DEL: IPAM DEL first, the link if the netns still exists, then ipMasq teardown.
 * STATUS and GC delegate to IPAM.
 *
 * Deliberate differences from upstream:
 * - any failure after IPAM ADD removes what ADD created (veth, masquerade rules) and releases the
 *   address; upstream leaves the link and, on some paths, the lease;
 * - DEL removes the masquerade rules even when the netns is gone or CNI_NETNS is unset (teardown is
 *   keyed by network name + container ID, not by the addresses read from the netns; upstream #810);
 * - an unknown `ipMasqBackend` is refused before IPAM runs; a missing gateway is a clear error;
 * - the IPv6 gateway on the host veth skips DAD (the only other end of the link is the container,
 *   which never holds the gateway), so the gateway answers as soon as ADD returns;
 * - CHECK also verifies the masquerade rules when `ipMasq` is set.
 */
import { delegate, delegateAdd } from "../../shared/cni/invoke.ts";
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { prevResultFrom, validAttachmentsOf } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { NetNS } from "../../shared/netns/index.ts";
import { Handle, isExists } from "../../shared/netlink/index.ts";
import { IFA_F_NODAD } from "../../shared/netlink/constants/if-addr.ts";
import { RT_SCOPE_HOST, RT_SCOPE_LINK, RT_SCOPE_UNIVERSE } from "../../shared/netlink/constants/rtnetlink.ts";
import { validateExpectedInterfaceIPs, validateExpectedRoutes, validateLinkKind, findResultInterface } from "../../shared/iface/check.ts";
import { configureIface } from "../../shared/iface/configure.ts";
import { enableIPForward, forwardFamiliesOf } from "../../shared/iface/forward.ts";
import { delLinkByNameAddr, setupVeth, type LinkInfo } from "../../shared/iface/veth.ts";
import { loadPtpConfig, type PtpConfig } from "./config.ts";
import { checkMasq, gcMasq, masqBackendOf, setupMasq, teardownMasq } from "./masq.ts";
import { ptpAddress, type PtpAddress } from "./routes.ts";

/** Index of the container interface in the result (host veth is 0). */
const CONTAINER_IFACE = 1;

// ---- kernel helpers --------------------------------------------------------------------------

/** In the container: replace each connected route by a /32 to the gateway and the subnet via it. */
function routeThroughGateway(nl: Handle, ifName: string, index: number, addrs: readonly PtpAddress[]): void {
  for (const a of addrs) {
    // `ip route del NET dev IF` (the kernel's connected route).
    try {
      nl.routeDel({ family: a.family, dst: a.network, oif: index });
    } catch (err) {
      throw new InternalError(`failed to delete route ${a.network.address}/${a.network.prefixLen} dev ${ifName}: ${messageOf(err)}`, { cause: err });
    }
    // `ip route add GW/32 dev IF scope link src IP`
    const toGateway = { family: a.family, dst: { address: a.gateway, prefixLen: a.hostPrefixLen }, oif: index, scope: RT_SCOPE_LINK, src: a.ip };
    // `ip route add NET via GW dev IF src IP`
    const viaGateway = { family: a.family, dst: a.network, gw: a.gateway, oif: index, scope: RT_SCOPE_UNIVERSE, src: a.ip };
    for (const r of [toGateway, viaGateway]) {
      try {
        nl.routeAdd(r);
      } catch (err) {
        const via = "gw" in r ? ` via ${r.gw}` : "";
        throw new InternalError(`failed to add route ${r.dst.address}/${r.dst.prefixLen}${via} dev ${ifName} src ${a.ip}: ${messageOf(err)}`, { cause: err });
      }
    }
  }
}

/** In the host: `ip addr add GW/32 dev VETH` and `ip route add IP/32 dev VETH scope host` per address. */
function setupHostVeth(nl: Handle, host: LinkInfo, addrs: readonly PtpAddress[]): void {
  for (const a of addrs) {
    try {
      nl.addrAdd(host.index, {
        address: a.gateway,
        prefixLen: a.hostPrefixLen,
        family: a.family,
        ...(a.family === 6 ? { flags: IFA_F_NODAD } : {}),
      });
    } catch (err) {
      throw new InternalError(`failed to add IP addr ${a.gateway}/${a.hostPrefixLen} to veth: ${messageOf(err)}`, { cause: err });
    }
    try {
      nl.routeAdd({ family: a.family, dst: { address: a.ip, prefixLen: a.hostPrefixLen }, oif: host.index, scope: RT_SCOPE_HOST });
    } catch (err) {
      if (!isExists(err)) throw new InternalError(`failed to add route on host: ${messageOf(err)}`, { cause: err });
    }
  }
}

/** Rollback: `ip link del NAME` in the container (removes the pair); failures are left to DEL. */
function deleteLinkQuietly(nl: Handle, name: string): void {
  try {
    nl.linkDel(nl.linkByName(name).index);
  } catch {
    // already gone, or nothing more we can do during a rollback; the runtime's DEL retries
  }
}

// ---- verbs -----------------------------------------------------------------------------------

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadPtpConfig(args);
  // Refuse an unknown ipMasqBackend before anything is allocated.
  const backend = conf.ipMasq ? masqBackendOf(conf) : undefined;

  const result = await delegateAdd(conf.ipamType, args);
  let created = false;
  let masqTouched = false;
  try {
    const ips = result.ips ?? [];
    if (ips.length === 0) throw new InternalError("IPAM plugin returned missing IP config");
    const addrs: PtpAddress[] = [];
    for (const ipc of ips) {
      const a = ptpAddress(ipc.address, ipc.gateway);
      if (typeof a === "string") throw new InternalError(a);
      addrs.push(a);
    }
    try {
      enableIPForward(forwardFamiliesOf(ips));
    } catch (err) {
      throw new InternalError(`Could not enable IP forwarding: ${messageOf(err)}`, { cause: err });
    }

    using ns = openContainerNetns(args.netns);
    using hostNs = NetNS.current();
    using containerNl = Handle.open(ns);
    using hostNl = Handle.open(hostNs);
    try {
      const veth = setupVeth({
        containerNl,
        hostNl,
        hostNs,
        ifName: args.ifName,
        ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
      });
      created = true;
      for (const ipc of ips) ipc.interface = CONTAINER_IFACE;
      result.interfaces = [
        { name: veth.host.name, mac: veth.host.mac },
        { name: veth.container.name, mac: veth.container.mac, sandbox: args.netns },
      ];
      configureIface({ nl: containerNl, ns, ifName: args.ifName, result });
      routeThroughGateway(containerNl, args.ifName, veth.container.index, addrs);
      setupHostVeth(hostNl, veth.host, addrs);
      if (conf.ipMasq) {
        masqTouched = true;
        setupMasq(conf, args, ips, backend);
      }
    } catch (err) {
      if (created) deleteLinkQuietly(containerNl, args.ifName);
      throw err;
    }
  } catch (err) {
    await rollback(conf, args, masqTouched);
    throw err;
  }
  if (conf.dns !== undefined) result.dns = conf.dns;
  return result;
}

/** Undo after a failed ADD: masquerade rules (if any were touched), then the IPAM lease. */
async function rollback(conf: PtpConfig, args: CmdArgs, masqTouched: boolean): Promise<void> {
  if (masqTouched) {
    try {
      teardownMasq(conf, args, undefined);
    } catch {
      // best effort; DEL will retry
    }
  }
  try {
    await delegate(conf.ipamType, args, "DEL");
  } catch {
    // best effort, as upstream
  }
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadPtpConfig(args);
  using ns = openContainerNetns(args.netns);
  await delegate(conf.ipamType, args, "CHECK");
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InternalError("ptp: Required prevResult missing");

  const found = findResultInterface(prev, args.ifName, args.netns);
  if (found === undefined) throw new InternalError(`Sandbox in prevResult  doesn't match configured netns: ${args.netns}`);
  const iface = found.iface;

  using nl = Handle.open(ns);
  if (iface.name === "") throw new InternalError(`Container interface name missing in prevResult: ${iface.name}`);
  validateLinkKind(nl, iface.name, {
    kind: "veth",
    ...(iface.mac !== undefined ? { mac: iface.mac } : {}),
    prefix: "ptp: ",
    kindLabel: "veth/p2p",
  });
  validateExpectedInterfaceIPs(nl, args.ifName, prev.ips ?? []);
  validateExpectedRoutes(nl, prev.routes ?? []);

  if (conf.ipMasq) {
    const ips = (prev.ips ?? []).map((i) => i.address);
    checkMasq(conf, args, ips);
  }
}

async function del(args: CmdArgs): Promise<void> {
  const conf = loadPtpConfig(args);
  await delegate(conf.ipamType, args, "DEL");

  const errors: unknown[] = [];
  let ips: string[] | undefined;
  try {
    const ns = openNetnsForDel(args.netns);
    if (ns !== undefined) {
      using owned = ns;
      using nl = Handle.open(owned);
      ips = delLinkByNameAddr(nl, args.ifName);
    }
  } catch (err) {
    errors.push(err);
  }
  if (conf.ipMasq) {
    try {
      teardownMasq(conf, args, ips);
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new InternalError(errors.map(messageOf).join("; "), { cause: errors[0] });
}

async function status(args: CmdArgs): Promise<void> {
  const conf = loadPtpConfig(args);
  await delegate(conf.ipamType, args, "STATUS");
}

async function gc(args: CmdArgs): Promise<void> {
  const conf = loadPtpConfig(args);
  await delegate(conf.ipamType, args, "GC");
  if (conf.ipMasq) {
    const keep = validAttachmentsOf(args.config);
    if (keep !== undefined) gcMasq(conf, keep);
  }
}

export const ptpPlugin: PluginSpec = {
  name: "ptp",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status,
  gc,
};
