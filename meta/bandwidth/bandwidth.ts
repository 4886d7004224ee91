/**
 * bandwidth: a chained plugin that rate-limits the container's traffic with tc token bucket
 * filters (upstream plugins/meta/bandwidth, v1.1.1 / HEAD behaviour).
 *
 * - ingressRate/ingressBurst (bits/s, bits): traffic towards the container, TBF `1:` at the root
 *   of the host veth.
 * - egressRate/egressBurst: traffic from the container, redirected by a u32 match-all filter on
 *   the host veth's ingress hook to an IFB (`bwp` + 12 hex of sha512(network + containerID)),
 *   shaped by TBF `1:` on the IFB. The IFB is appended to the result's interfaces.
 * - runtimeConfig `bandwidth` (capability) is used only when none of the four keys is at the top.
 * - `unshapedSubnets` / `shapedSubnets` (upstream v1.5.0–v1.5.1 only, reverted at HEAD): an HTB
 *   root with a limited and an uncapped class and u32 prefix filters instead of the TBF
 *   (subnets.ts, htb-setup.ts).
 * - CHECK compares the kernel's TBF rate/limit/buffer with the configured numbers; DEL removes the
 *   IFB. Every tc object is made over netlink (the Handle's tc methods); no `tc` binary.
 *
 * Deliberate differences from upstream: DIFFERENCES.md, "bandwidth".
 */
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { annotate } from "../../shared/error/annotate.ts";
import { prevResultFrom } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { versionsFrom } from "../../shared/cni/version.ts";
import { Handle, isNotFound, type Link } from "../../shared/netlink/index.ts";
import { loadBandwidthConfig, type BandwidthConfig, type Limit } from "./config.ts";
import { findHostVeth } from "./host-veth.ts";
import { checkHtb, setupHtb, type PeerField } from "./htb-setup.ts";
import { derivedIfbName, ifbAlias, ifbBelongsTo, upstreamIfbName } from "./ifb-name.ts";
import type { SubnetSelection } from "./subnets.ts";
import { tbfNumbers } from "./tbf-params.ts";
import { redirectsTo, removeHostShaping, rootQdisc, setupRedirect, setupTbf, TBF_HANDLE } from "./tc-setup.ts";

/** The IFB of (containerID, ifName) if it exists: the upstream name when it belongs to us, else the derived one. */
function findIfb(nl: Handle, network: string, args: CmdArgs): Link | undefined {
  const up = nl.linkFind(upstreamIfbName(network, args.containerID));
  if (up !== undefined && ifbBelongsTo(up.alias, args.containerID, args.ifName)) return up;
  return nl.linkFind(derivedIfbName(network, args.containerID, args.ifName));
}

/** Picks the IFB name for ADD, deleting a leftover of this same attachment. */
function ifbNameForAdd(nl: Handle, network: string, args: CmdArgs): string {
  const upstream = upstreamIfbName(network, args.containerID);
  const up = nl.linkFind(upstream);
  if (up === undefined) return upstream;
  if (ifbBelongsTo(up.alias, args.containerID, args.ifName)) {
    nl.linkDel(up.index); // leftover of a failed DEL
    return upstream;
  }
  const derived = derivedIfbName(network, args.containerID, args.ifName);
  const old = nl.linkFind(derived);
  if (old !== undefined) nl.linkDel(old.index);
  return derived;
}

/** Creates the IFB (upstream CreateIfb): host veth MTU and txqueuelen, alias, up. */
function createIfb(nl: Handle, name: string, host: Link, args: CmdArgs): Link {
  return annotate("adding link", () => {
    nl.linkAddIfb({ name, mtu: host.mtu, ...(host.txqlen !== undefined ? { txqlen: host.txqlen } : {}) });
    const ifb = nl.linkByName(name);
    nl.linkSetAlias(ifb.index, ifbAlias(args.containerID, args.ifName));
    nl.linkSetUp(ifb.index);
    return nl.linkByName(name);
  });
}

interface Attachment {
  conf: BandwidthConfig;
  result: Result;
  host: Link;
}

/** prevResult + the host veth, for ADD and CHECK. */
function attach(args: CmdArgs, conf: BandwidthConfig, prev: Result, hostNl: Handle): Attachment {
  using ns = openContainerNetns(args.netns);
  using containerNl = Handle.open(ns);
  const host = findHostVeth(prev.interfaces ?? [], containerNl, hostNl, args.ifName);
  return { conf, result: prev, host };
}

/** Shapes one device's root: the upstream TBF, or the HTB of htb-setup.ts when subnets are listed. */
function shape(nl: Handle, index: number, limit: Limit, subnets: SubnetSelection | undefined, field: PeerField, errPrefix: string): void {
  if (subnets === undefined) setupTbf(nl, index, tbfNumbers(limit), errPrefix);
  else setupHtb(nl, index, rootQdisc(nl, index), tbfNumbers(limit), subnets, field, errPrefix);
}

function add(args: CmdArgs): Result {
  const conf = loadBandwidthConfig(args);
  const prev = prevResultFrom(args);
  const { ingress, egress } = conf.bandwidth;
  if (ingress === undefined && egress === undefined) return prev ?? {};
  if (prev === undefined) throw new InternalError("must be called as chained plugin");

  using hostNl = Handle.open();
  const { result, host } = attach(args, conf, prev, hostNl);
  if (ingress !== undefined) shape(hostNl, host.index, ingress, conf.subnets, "src", "create qdisc");
  if (egress !== undefined) {
    const ifb = createIfb(hostNl, ifbNameForAdd(hostNl, conf.name, args), host, args);
    try {
      setupRedirect(hostNl, host, ifb.index);
      shape(hostNl, ifb.index, egress, conf.subnets, "dst", "create ifb qdisc");
    } catch (err) {
      try {
        removeHostShaping(hostNl, host, { ifbIndex: ifb.index, root: false });
        hostNl.linkDel(ifb.index);
      } catch {
        // rollback is best effort; DEL retries
      }
      throw err;
    }
    result.interfaces = [...(result.interfaces ?? []), { name: ifb.name, ...(ifb.mac !== undefined ? { mac: ifb.mac } : {}) }];
  }
  return result;
}

/** Upstream checkTBF: the device's TBF must carry exactly the configured numbers (or our HTB, with subnets). */
function checkTbf(nl: Handle, dev: Link, limit: Limit, subnets: SubnetSelection | undefined, field: PeerField): void {
  const want = tbfNumbers(limit);
  const root = rootQdisc(nl, dev.index);
  if (subnets !== undefined) {
    checkHtb(nl, dev, root, want, subnets, field);
    return;
  }
  if (root === undefined || root.kind === "noqueue") throw new InternalError("Failed to find qdisc");
  if (root.kind !== "tbf" || root.tbf === undefined) throw new InternalError(`Failed to find tbf qdisc on ${dev.name} (found ${root.kind})`);
  if (root.handle !== TBF_HANDLE) throw new InternalError(`tbf qdisc on ${dev.name} is not 1:`);
  if (root.tbf.rate !== want.rate) throw new InternalError("Rate doesn't match");
  if (root.tbf.limit !== want.limit) throw new InternalError("Limit doesn't match");
  if (root.tbf.buffer !== want.buffer) throw new InternalError("Buffer doesn't match");
}

function check(args: CmdArgs): void {
  const conf = loadBandwidthConfig(args);
  const prev = prevResultFrom(args);
  if (prev === undefined) throw new InternalError("must be called as a chained plugin");
  using hostNl = Handle.open();
  const { host } = attach(args, conf, prev, hostNl);
  const { ingress, egress } = conf.bandwidth;
  if (ingress !== undefined) checkTbf(hostNl, host, ingress, conf.subnets, "src");
  if (egress !== undefined) {
    const ifb = findIfb(hostNl, conf.name, args);
    if (ifb === undefined) throw new InternalError("get ifb device: Link not found");
    checkTbf(hostNl, ifb, egress, conf.subnets, "dst");
    if (!redirectsTo(hostNl, host, ifb.index)) throw new InternalError(`no filter on ${host.name} redirects to ${ifb.name}`);
  }
}

/** The host veth of this attachment, when the netns and prevResult still allow finding it. */
function hostVethForDel(args: CmdArgs, hostNl: Handle): Link | undefined {
  const prev = prevResultFrom(args);
  if (prev === undefined) return undefined;
  const ns = openNetnsForDel(args.netns);
  if (ns === undefined) return undefined;
  try {
    using containerNl = Handle.open(ns);
    return findHostVeth(prev.interfaces ?? [], containerNl, hostNl, args.ifName);
  } catch {
    return undefined;
  } finally {
    ns.close();
  }
}

function del(args: CmdArgs): void {
  const conf = loadBandwidthConfig(args, false);
  using hostNl = Handle.open();
  const ifb = findIfb(hostNl, conf.name, args);
  const host = hostVethForDel(args, hostNl);
  if (host !== undefined) {
    removeHostShaping(hostNl, host, { ifbIndex: ifb?.index, root: conf.bandwidth.ingress !== undefined });
  }
  if (ifb !== undefined) {
    try {
      hostNl.linkDel(ifb.index);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

export const bandwidthPlugin: PluginSpec = {
  name: "bandwidth",
  versions: versionsFrom("0.3.0"),
  add,
  check,
  del,
};
