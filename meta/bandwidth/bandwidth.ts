/**
 * bandwidth: a chained plugin that rate-limits the container's traffic with tc token bucket
 * filters (upstream plugins/meta/bandwidth, v1.1.1 / HEAD behaviour).
 *
 * - ingressRate/ingressBurst (bits/s, bits): traffic towards the container; egressRate/egressBurst:
 *   traffic from the container. runtimeConfig `bandwidth` (capability) is used only when none of the
 *   four keys is at the top.
 * - Where (site.ts): as upstream, on the host end of the container's veth — TBF `1:` at its root
 *   for ingress, and for egress a u32 match-all filter on its ingress hook redirecting to an IFB
 *   (`bwp` + 12 hex of sha512(network + containerID), ifb-name.ts) shaped by TBF `1:`; the IFB is
 *   appended to the result's interfaces. Beyond upstream, an interface without a host veth peer
 *   (macvlan, ipvlan, vlan, host-device, …) is shaped from inside the container netns: TBF at its
 *   root for egress, an IFB in the container netns for ingress (appended with its sandbox); an
 *   ipvlan in l3s mode can only limit egress (ingress: code 2).
 * - `unshapedSubnets` / `shapedSubnets` (upstream v1.5.0–v1.5.1 only, reverted at HEAD): an HTB
 *   root with a limited and an uncapped class and u32 prefix filters instead of the TBF
 *   (subnets.ts, htb-setup.ts).
 * - CHECK compares the kernel's TBF rate/limit/buffer with the configured numbers and the redirect;
 *   DEL removes the IFB, the redirect, the ingress and the root qdisc wherever ADD may have put
 *   them (the prevResult is not needed); GC removes this network's IFBs of
 *   attachments that are no longer valid (gc.ts). Every tc object is made over netlink (the
 *   Handle's tc methods); no `tc` binary.
 *
 * Deliberate differences from upstream: DIFFERENCES.md, "bandwidth".
 */
import { openContainerNetns, openNetnsForDel } from "../../shared/cni/container-netns.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { validAttachmentsOf } from "../../shared/cni/netconf.ts";
import { prevResultFrom } from "../../shared/cni/result/prevresult.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { versionsFrom } from "../../shared/cni/version.ts";
import { annotate } from "../../shared/error/annotate.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import { teardown, Undo } from "../../shared/undo/teardown.ts";
import { loadBandwidthConfig, type BandwidthConfig } from "./config.ts";
import { collectIfbs } from "./gc.ts";
import { checkHtb, setupHtb } from "./htb-setup.ts";
import { createIfb, deleteIfb, findIfb } from "./ifb.ts";
import { findSite, hostInterfaceNames, hostPeer, refuseUnshapeable, shapingsOf, type Shaping, type Site } from "./site.ts";
import type { SubnetSelection } from "./subnets.ts";
import { tbfNumbers } from "./tbf-params.ts";
import { redirectsTo, removeRedirects, removeRootQdisc, rootQdisc, setupRedirect, setupTbf, TBF_HANDLE } from "./tc-setup.ts";

/** CNI_IFNAME in the container netns, for ADD and CHECK. */
function containerLink(nl: Handle, ifName: string): Link {
  return annotate(`failed to look up container interface ${JSON.stringify(ifName)}`, () => nl.linkByName(ifName));
}

/** Shapes one device's root: the upstream TBF, or the HTB of htb-setup.ts when subnets are listed. */
function shape(nl: Handle, index: number, s: Shaping, subnets: SubnetSelection | undefined, errPrefix: string): void {
  if (subnets === undefined) setupTbf(nl, index, tbfNumbers(s.limit), errPrefix);
  else setupHtb(nl, index, rootQdisc(nl, index), tbfNumbers(s.limit), subnets, s.field, errPrefix);
}

/**
 * Removes an attachment's shaping from one netns (DEL, and ADD's rollback): our redirect filters on
 * `dev` (towards the IFB, or all of ours once it is gone) and the ingress qdisc they hung on, our
 * root qdisc on `dev` (TBF or HTB `1:`, whichever direction it limited), then the IFB. `dev` is
 * undefined when no device of the attachment is in this netns.
 */
function unshape(nl: Handle, dev: Link | undefined, conf: BandwidthConfig, args: CmdArgs): void {
  const ifb = findIfb(nl, conf.name, args);
  if (dev !== undefined) {
    annotate(`failed to remove the redirect filter on ${dev.name}`, () => removeRedirects(nl, dev.index, ifb?.index));
    annotate(`failed to remove the root qdisc of ${dev.name}`, () => removeRootQdisc(nl, dev.index));
  }
  if (ifb !== undefined) annotate(`failed to delete ${ifb.name}`, () => deleteIfb(nl, ifb.index));
}

/** The site of the attachment for ADD and CHECK, from the kernel and the prevResult's host-side names. */
function siteOf(args: CmdArgs, prev: Result, containerNl: Handle, hostNl: Handle): Site {
  const hostNames = hostInterfaceNames(prev.interfaces ?? []);
  return findSite(containerLink(containerNl, args.ifName), containerNl, hostNl, hostNames);
}

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadBandwidthConfig(args);
  const prev = prevResultFrom(args);
  const { ingress, egress } = conf.bandwidth;
  if (ingress === undefined && egress === undefined) return prev ?? {};
  if (prev === undefined) throw new InternalError("must be called as chained plugin");

  using hostNl = Handle.open();
  using ns = openContainerNetns(args.netns);
  using containerNl = Handle.open(ns);
  const site = siteOf(args, prev, containerNl, hostNl);
  const shapings = shapingsOf(site.where, conf.bandwidth);
  refuseUnshapeable(site, shapings);
  const undo = new Undo([{ name: "shaping", run: () => unshape(site.nl, site.dev, conf, args) }], args.stderr);
  let ifb: Link | undefined;
  try {
    undo.reached("shaping");
    for (const s of shapings) {
      if (s.hook === "root") {
        shape(site.nl, site.dev.index, s, conf.subnets, "create qdisc");
        continue;
      }
      ifb = createIfb(site.nl, conf.name, site.dev, args);
      setupRedirect(site.nl, site.dev.index, ifb.index);
      shape(site.nl, ifb.index, s, conf.subnets, "create ifb qdisc");
    }
  } catch (err) {
    return undo.rollback(err);
  }
  if (ifb !== undefined) {
    prev.interfaces = [
      ...(prev.interfaces ?? []),
      { name: ifb.name, ...(ifb.mac !== undefined ? { mac: ifb.mac } : {}), ...(site.where === "container" ? { sandbox: args.netns } : {}) },
    ];
  }
  return prev;
}

/** Upstream checkTBF: the device's TBF must carry exactly the configured numbers (or our HTB, with subnets). */
function checkTbf(nl: Handle, dev: Link, s: Shaping, subnets: SubnetSelection | undefined): void {
  const want = tbfNumbers(s.limit);
  const root = rootQdisc(nl, dev.index);
  if (subnets !== undefined) {
    checkHtb(nl, dev, root, want, subnets, s.field);
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
  using ns = openContainerNetns(args.netns);
  using containerNl = Handle.open(ns);
  const site = siteOf(args, prev, containerNl, hostNl);
  for (const s of shapingsOf(site.where, conf.bandwidth)) {
    if (s.hook === "root") {
      checkTbf(site.nl, site.dev, s, conf.subnets);
      continue;
    }
    const ifb = findIfb(site.nl, conf.name, args);
    if (ifb === undefined) throw new InternalError("get ifb device: Link not found");
    checkTbf(site.nl, ifb, s, conf.subnets);
    if (!redirectsTo(site.nl, site.dev.index, ifb.index)) throw new InternalError(`no filter on ${site.dev.name} redirects to ${ifb.name}`);
  }
}

/**
 * DEL removes the attachment's shaping wherever ADD may have put it, without the prevResult (which
 * may be missing, empty or different from ADD's, SPEC.md "DEL"): from the host netns (the IFB by
 * name, as upstream; the container interface's host veth peer) and from the container netns when it
 * still exists (the container interface, the IFB there). Every step runs; failures are reported
 * together.
 */
async function del(args: CmdArgs): Promise<void> {
  const conf = loadBandwidthConfig(args, { forDel: true });
  using hostNl = Handle.open();
  using ns = openNetnsForDel(args.netns);
  using containerNl = ns === undefined ? undefined : Handle.open(ns);
  let link: Link | undefined;
  let peer: Link | undefined;
  await teardown([
    {
      name: "shaped devices",
      run: () => {
        link = containerNl?.linkFind(args.ifName);
        if (link !== undefined) peer = hostPeer(link, hostNl);
      },
    },
    { name: "host shaping", run: () => unshape(hostNl, peer, conf, args) },
    {
      name: "container shaping",
      run: () => {
        if (containerNl !== undefined) unshape(containerNl, link, conf, args);
      },
    },
  ]);
}

async function gc(args: CmdArgs): Promise<void> {
  const conf = loadBandwidthConfig(args, { forDel: true });
  const valid = validAttachmentsOf(args.config);
  if (valid === undefined) return; // absent or malformed: collect nothing
  using hostNl = Handle.open();
  await collectIfbs(hostNl, conf.name, valid);
}

export const bandwidthPlugin: PluginSpec = { name: "bandwidth", versions: versionsFrom("0.3.0"), add, check, del, gc };
