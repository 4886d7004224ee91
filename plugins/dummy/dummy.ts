/**
 * dummy: gives the container a dummy link carrying IPAM addresses (upstream
 * plugins/main/dummy/dummy.go at HEAD). Not in the Debian 1.1.1 binaries.
 *
 * ADD: IPAM is required; the dummy is created in the container netns and goes through the shared
 * container-link ADD (shared/iface/container-link.ts): rename to CNI_IFNAME, IPAM ADD,
 * ConfigureIface. The result's `dns` is IPAM's (the config's `dns` is not used, as upstream).
 * CHECK: the shared container-link CHECK, with the link up. DEL: IPAM DEL and the link, both
 * attempted. STATUS and GC: IPAM's.
 *
 * Deliberate differences from upstream: DIFFERENCES.md.
 */
import { openContainerNetns } from "../../shared/cni/container-netns.ts";
import { t } from "../../shared/cni/decode.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { delegateToIpam } from "../../shared/cni/ipam-delegation.ts";
import { ipamTypeOf, loadNetConf, netConfFields, type LoadOptions } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { checkContainerLink } from "../../shared/iface/check.ts";
import { addContainerLink, delContainerLink, requireIpam } from "../../shared/iface/container-link.ts";
import { IFF_UP } from "../../shared/netlink/constants/if-link.ts";
import { Handle } from "../../shared/netlink/handle.ts";

const dummySchema = t.object("NetConf", { ...netConfFields });

/**
 * Parses the config (`failed to load netconf: …`) and returns the IPAM type; `forDel` relaxes
 * nothing: upstream's DEL parses the config as strictly.
 */
function loadDummyConfig(args: CmdArgs, _opts: LoadOptions = {}): { ipamType: string } {
  loadNetConf(dummySchema, args);
  return { ipamType: ipamTypeOf(args) };
}

async function add(args: CmdArgs): Promise<Result> {
  const { ipamType } = loadDummyConfig(args);
  requireIpam("dummy", ipamType);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  return await addContainerLink(args, { ns, nl }, {
    kind: "dummy",
    create: (name) => nl.linkAddDummy({ name }),
    ipamType,
    dns: "ipam",
  });
}

async function check(args: CmdArgs): Promise<void> {
  const { ipamType } = loadDummyConfig(args);
  requireIpam("dummy", ipamType);
  using ns = openContainerNetns(args.netns);
  using nl = Handle.open(ns);
  await checkContainerLink(args, nl, {
    ipamType,
    kind: "dummy",
    wording: { prevResultPrefix: "dummy: " },
    validate: (link, iface) => {
      if ((link.flags & IFF_UP) === 0) throw new InternalError(`Interface ${iface.name} is down`);
    },
  });
}

async function del(args: CmdArgs): Promise<void> {
  await delContainerLink(args, loadDummyConfig(args, { forDel: true }).ipamType);
}

async function status(args: CmdArgs): Promise<void> {
  const { ipamType } = loadDummyConfig(args);
  requireIpam("dummy", ipamType);
  await delegateToIpam(ipamType, args, "STATUS");
}

async function gc(args: CmdArgs): Promise<void> {
  await delegateToIpam(loadDummyConfig(args).ipamType, args, "GC");
}

export const dummyPlugin: PluginSpec = { name: "dummy", versions: ALL_VERSIONS, add, check, del, status, gc };
