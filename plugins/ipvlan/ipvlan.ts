/**
 * ipvlan: gives the container an ipvlan link on a host interface (upstream
 * plugins/main/ipvlan/ipvlan.go at HEAD).
 *
 * ADD: the master (configured; when chained, the prevResult's single interface; else the
 * default-route interface — in the container's netns with `linkInContainer`) bounds the MTU; the
 * ipvlan (mode l2/l3/l3s, MTU) is created straight into the container netns and goes through the
 * shared container-link ADD (shared/iface/container-link.ts): rename to CNI_IFNAME, addresses from
 * IPAM ADD — or, chained with an empty `ipam.type`, the prevResult's IPs and routes —,
 * arp_notify/ndisc_notify, ConfigureIface; with neither (L2 only, beyond upstream: #572) just up.
 * `dns` from the config.
 * CHECK: the shared container-link CHECK, with the master present and the configured mode.
 * DEL: IPAM DEL (if set) and the link, both attempted. STATUS: code 50 when the configured master is
 * missing (shared/iface/status.ts), then IPAM STATUS if set. GC: IPAM GC if set.
 *
 * Deliberate differences from upstream: DIFFERENCES.md.
 */
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { delegateToIpam } from "../../shared/cni/ipam-delegation.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { checkContainerLink } from "../../shared/iface/check.ts";
import { addContainerLink, delContainerLink, kernelModeName, lookupMaster, refuseL2ForOldVersions } from "../../shared/iface/container-link.ts";
import { defaultRouteInterface } from "../../shared/iface/default-route.ts";
import { IPVLAN_MODE_L2, IPVLAN_MODE_L3, IPVLAN_MODE_L3S } from "../../shared/netlink/constants/if-link.ts";
import { interfaceStatus, masterStatus } from "../../shared/iface/status.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { ipvlanMasterName, loadIpvlanConfig } from "./config.ts";

/** IPVLAN_MODE_* by mode name. */
const MODE_VALUES = { l2: IPVLAN_MODE_L2, l3: IPVLAN_MODE_L3, l3s: IPVLAN_MODE_L3S } as const;

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadIpvlanConfig(args);
  const chained = conf.ipamType === "" && (conf.prevResult?.ips ?? []).length > 0 ? conf.prevResult : undefined;
  refuseL2ForOldVersions(conf.ipamType !== "" || chained !== undefined, args.cniVersion);

  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  using hostNl = Handle.open();
  const masterNl = conf.linkInContainer ? nl : hostNl;
  const master = lookupMaster(masterNl, ipvlanMasterName(conf, masterNl), conf.mtu);
  return await addContainerLink(args, { ns, nl }, {
    kind: "ipvlan",
    create: (name) =>
      masterNl.linkAddIpvlan({
        name,
        parentIndex: master.index,
        mode: conf.mode,
        ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
        ...(conf.linkInContainer ? {} : { netnsFd: ns.fd }),
      }),
    ipamType: conf.ipamType,
    ...(chained !== undefined ? { chained } : {}),
    neighbourNotify: { ndisc: true },
    dns: conf.dns,
    setsMtu: conf.mtu > 0,
  });
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadIpvlanConfig(args);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  using hostNl = Handle.open();
  const masterNl = conf.linkInContainer ? nl : hostNl;
  await checkContainerLink(args, nl, {
    ipamType: conf.ipamType,
    kind: "ipvlan",
    // Without a configured master: the default-route one, unless chained (its master is not known).
    master: () => {
      if (conf.master !== "") lookupMaster(masterNl, conf.master);
      else if (conf.ipamType !== "") lookupMaster(masterNl, defaultRouteInterface(masterNl));
    },
    validate: (link) => {
      if (link.ipvlanMode !== MODE_VALUES[conf.mode]) {
        throw new InternalError(`Container IPVlan mode ${kernelModeName(link.ipvlanMode, MODE_VALUES)} does not match expected value: ${conf.mode}`);
      }
    },
  });
}

async function del(args: CmdArgs): Promise<void> {
  await delContainerLink(args, loadIpvlanConfig(args, { forDel: true }).ipamType);
}

async function status(args: CmdArgs): Promise<void> {
  const conf = loadIpvlanConfig(args, { forDel: true });
  await interfaceStatus(args, { ipamType: conf.ipamType, hostLinks: masterStatus(conf) });
}

async function gc(args: CmdArgs): Promise<void> {
  await delegateToIpam(loadIpvlanConfig(args, { forDel: true }).ipamType, args, "GC");
}

export const ipvlanPlugin: PluginSpec = { name: "ipvlan", versions: ALL_VERSIONS, add, check, del, status, gc };
