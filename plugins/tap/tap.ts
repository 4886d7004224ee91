/**
 * tap: gives the container a TAP device, for VMs in pods (upstream plugins/main/tap/tap.go at HEAD).
 * Not in the Debian 1.1.1 binaries.
 *
 * ADD: a persistent TAP is created in the container netns through /dev/net/tun (`multiQueue`,
 * `owner`, `group`; vnet_hdr when both owner and group are set, as upstream's netlink path) and
 * goes through the shared container-link ADD (shared/iface/container-link.ts): rename to
 * CNI_IFNAME, then MTU, MAC, port of `bridge` (a bridge inside the container) if set, up; with
 * `ipam.type` IPAM ADD, arp_notify and ConfigureIface. `dns` from the config.
 * CHECK: the shared container-link CHECK (the device is a tun/tap link). DEL: IPAM DEL (L3) and
 * the link, both attempted. STATUS and GC: IPAM's when L3.
 *
 * Deliberate differences from upstream: DIFFERENCES.md.
 */
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { UnsupportedFieldError } from "../../shared/cni/errors.ts";
import { delegateToIpam } from "../../shared/cni/ipam-delegation.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { annotate } from "../../shared/error/annotate.ts";
import { checkContainerLink } from "../../shared/iface/check.ts";
import { addContainerLink, delContainerLink, refuseL2ForOldVersions } from "../../shared/iface/container-link.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { tapAdd } from "../../shared/netlink/tuntap.ts";
import { loadTapConfig, type TapConf } from "./config.ts";

/** MTU, MAC, bridge port and up for the renamed tap (upstream's order). */
function configureTap(nl: Handle, index: number, conf: TapConf, ifName: string): void {
  annotate(`failed to configure tap ${JSON.stringify(ifName)}`, () => {
    if (conf.mtu > 0) nl.linkSetMTU(index, conf.mtu);
    if (conf.mac !== undefined) nl.linkSetMAC(index, conf.mac);
  });
  if (conf.bridge !== "") {
    const bridge = annotate(`failed to get bridge ${conf.bridge}`, () => nl.linkByName(conf.bridge));
    annotate(`failed to set tap ${ifName} as a port of bridge ${conf.bridge}`, () => nl.linkSetMaster(index, bridge.index));
  }
  annotate("failed to set tap interface up", () => nl.linkSetUp(index));
}

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadTapConfig(args);
  if (conf.selinuxContext !== "") throw new UnsupportedFieldError("selinuxContext is not supported by this implementation of tap");
  refuseL2ForOldVersions(conf.ipamType !== "", args.cniVersion);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  return await addContainerLink(args, { ns, nl }, {
    kind: "tap",
    create: (name) =>
      tapAdd(ns, {
        name,
        multiQueue: conf.multiQueue,
        vnetHdr: conf.owner !== undefined && conf.group !== undefined,
        ...(conf.owner !== undefined ? { owner: conf.owner } : {}),
        ...(conf.group !== undefined ? { group: conf.group } : {}),
      }),
    configure: (index) => configureTap(nl, index, conf, args.ifName),
    ipamType: conf.ipamType,
    neighbourNotify: { ndisc: false },
    dns: conf.dns,
    setsMtu: conf.mtu > 0,
  });
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadTapConfig(args);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  await checkContainerLink(args, nl, { ipamType: conf.ipamType, kind: "tun", kindLabel: "tap" });
}

async function del(args: CmdArgs): Promise<void> {
  await delContainerLink(args, loadTapConfig(args, { forDel: true }).ipamType);
}

async function status(args: CmdArgs): Promise<void> {
  await delegateToIpam(loadTapConfig(args).ipamType, args, "STATUS");
}

async function gc(args: CmdArgs): Promise<void> {
  await delegateToIpam(loadTapConfig(args).ipamType, args, "GC");
}

export const tapPlugin: PluginSpec = { name: "tap", versions: ALL_VERSIONS, add, check, del, status, gc };
