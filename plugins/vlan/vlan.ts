/**
 * vlan: gives the container an 802.1Q VLAN link on a host interface (upstream
 * plugins/main/vlan/vlan.go at HEAD).
 *
 * ADD: the master (required; in the container's netns with `linkInContainer`) bounds the MTU; the
 * VLAN link (id, MTU, MAC from CNI_ARGS / runtimeConfig) is created straight into the container netns and goes through the shared
 * container-link ADD (shared/iface/container-link.ts): rename to CNI_IFNAME, then with `ipam.type`
 * IPAM ADD and ConfigureIface, without it (L2 only, beyond upstream: PR #1302) just up. `dns` from
 * the config.
 * CHECK: the shared container-link CHECK, with the master present, the configured VLAN id and (when
 * configured) MTU. DEL: IPAM DEL and the link, both attempted. STATUS: code 50 when the master is
 * missing (shared/iface/status.ts), then IPAM STATUS. GC: IPAM GC.
 *
 * Deliberate differences from upstream: DIFFERENCES.md.
 */
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { delegateToIpam } from "../../shared/cni/ipam-delegation.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { checkContainerLink } from "../../shared/iface/check.ts";
import { addContainerLink, delContainerLink, lookupMaster, refuseL2ForOldVersions } from "../../shared/iface/container-link.ts";
import { interfaceStatus, masterStatus } from "../../shared/iface/status.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import { loadVlanConfig } from "./config.ts";

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadVlanConfig(args);
  refuseL2ForOldVersions(conf.ipamType !== "", args.cniVersion);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  using hostNl = Handle.open();
  const masterNl = conf.linkInContainer ? nl : hostNl;
  const master = lookupMaster(masterNl, conf.master, conf.mtu);
  return await addContainerLink(args, { ns, nl }, {
    kind: "vlan",
    create: (name) =>
      masterNl.linkAddVlan({
        name,
        parentIndex: master.index,
        vlanId: conf.vlanId,
        ...(conf.mtu > 0 ? { mtu: conf.mtu } : {}),
        ...(conf.mac !== undefined ? { mac: conf.mac } : {}),
        ...(conf.linkInContainer ? {} : { netnsFd: ns.fd }),
      }),
    ipamType: conf.ipamType,
    dns: conf.dns,
    setsMtu: conf.mtu > 0,
  });
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadVlanConfig(args);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  using hostNl = Handle.open();
  await checkContainerLink(args, nl, {
    ipamType: conf.ipamType,
    kind: "vlan",
    wording: { prevResultPrefix: "vlan: ", linkPrefix: "vlan: " },
    master: () => lookupMaster(conf.linkInContainer ? nl : hostNl, conf.master),
    validate: (link, iface) => {
      if (link.vlanId !== conf.vlanId) {
        throw new InternalError(`Error: container interface ${iface.name} has VLAN ID ${link.vlanId ?? "none"}, configured ${conf.vlanId}`);
      }
      if (conf.mtu !== 0 && conf.mtu !== link.mtu) {
        throw new InternalError(`Error: container interface ${iface.name} has MTU ${link.mtu}, configured ${conf.mtu}`);
      }
    },
  });
}

async function del(args: CmdArgs): Promise<void> {
  await delContainerLink(args, loadVlanConfig(args, { forDel: true }).ipamType);
}

async function status(args: CmdArgs): Promise<void> {
  const conf = loadVlanConfig(args, { forDel: true });
  await interfaceStatus(args, { ipamType: conf.ipamType, hostLinks: masterStatus(conf) });
}

async function gc(args: CmdArgs): Promise<void> {
  await delegateToIpam(loadVlanConfig(args, { forDel: true }).ipamType, args, "GC");
}

export const vlanPlugin: PluginSpec = { name: "vlan", versions: ALL_VERSIONS, add, check, del, status, gc };
