/**
 * macvlan: gives the container a macvlan link on a host interface (upstream
 * plugins/main/macvlan/macvlan.go at HEAD).
 *
 * ADD: the master (configured, else a chained prevResult's interface, else the default-route
 * interface; in the container's netns with `linkInContainer`) bounds the MTU; the macvlan (mode, MTU, MAC, bcqueuelen) is created straight
 * into the container netns and goes through the shared container-link ADD
 * (shared/iface/container-link.ts): rename to CNI_IFNAME, then with `ipam.type` IPAM ADD,
 * arp_notify/ndisc_notify and ConfigureIface, without it (L2) just up. `dns` from the config.
 * CHECK: the shared container-link CHECK, with the master present and the configured mode.
 * DEL: IPAM DEL (L3) and the link, both attempted. STATUS: code 50 when the configured master is
 * missing (shared/iface/status.ts), then IPAM STATUS when L3. GC: IPAM GC when L3.
 *
 * Deliberate differences from upstream: DIFFERENCES.md.
 */
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { delegateToIpam } from "../../shared/cni/ipam-delegation.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { checkContainerLink } from "../../shared/iface/check.ts";
import { addContainerLink, delContainerLink, kernelModeName, refuseL2ForOldVersions } from "../../shared/iface/container-link.ts";
import { interfaceStatus, masterStatus } from "../../shared/iface/status.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { MACVLAN_MODE_BY_NAME } from "../../shared/netlink/link-add.ts";
import { loadMacvlanConfig, resolveMaster } from "./config.ts";

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadMacvlanConfig(args);
  refuseL2ForOldVersions(conf.ipamType !== "", args.cniVersion);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  using hostNl = Handle.open();
  const masterNl = conf.linkInContainer ? nl : hostNl;
  const master = resolveMaster(conf, args, masterNl);
  return await addContainerLink(args, { ns, nl }, {
    kind: "macvlan",
    create: (name) =>
      masterNl.linkAddMacvlan({
        name,
        parentIndex: master.index,
        mode: conf.mode,
        ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
        ...(conf.mac !== undefined ? { mac: conf.mac } : {}),
        ...(conf.bcQueueLen > 0 ? { bcQueueLen: conf.bcQueueLen } : {}),
        ...(conf.linkInContainer ? {} : { netnsFd: ns.fd }),
      }),
    ipamType: conf.ipamType,
    neighbourNotify: { ndisc: true },
    dns: conf.dns,
    setsMtu: conf.mtu > 0,
  });
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadMacvlanConfig(args);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  using hostNl = Handle.open();
  await checkContainerLink(args, nl, {
    ipamType: conf.ipamType,
    kind: "macvlan",
    wording: { lowerCase: true },
    master: () => resolveMaster(conf, args, conf.linkInContainer ? nl : hostNl),
    validate: (link) => {
      if (link.macvlanMode !== MACVLAN_MODE_BY_NAME[conf.mode]) {
        const mode = kernelModeName(link.macvlanMode, MACVLAN_MODE_BY_NAME);
        throw new InternalError(`container macvlan mode ${mode} does not match expected value: ${conf.mode}`);
      }
    },
  });
}

async function del(args: CmdArgs): Promise<void> {
  await delContainerLink(args, loadMacvlanConfig(args, { forDel: true }).ipamType);
}

async function status(args: CmdArgs): Promise<void> {
  const conf = loadMacvlanConfig(args, { forDel: true });
  await interfaceStatus(args, { ipamType: conf.ipamType, hostLinks: masterStatus(conf) });
}

async function gc(args: CmdArgs): Promise<void> {
  await delegateToIpam(loadMacvlanConfig(args, { forDel: true }).ipamType, args, "GC");
}

export const macvlanPlugin: PluginSpec = { name: "macvlan", versions: ALL_VERSIONS, add, check, del, status, gc };
