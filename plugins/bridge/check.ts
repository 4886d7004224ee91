/**
 * CHECK for the bridge plugin (upstream bridge.go cmdCheck): the bridge, the container
 * veth and the host veth of prevResult must exist and be wired together (container veth's peer is
 * the host veth, whose master is the bridge), MACs must match where given, the bridge's promiscuous
 * state must equal `promiscMode`, and the result's addresses and routes must be in the container.
 * With `ipMasq`, the masquerade rules are checked as well (beyond upstream). Messages are upstream's.
 */
import { InternalError } from "../../shared/cni/errors.ts";
import type { CmdArgs, Interface } from "../../shared/cni/types.ts";
import { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import { IFF_PROMISC } from "../../shared/netlink/constants/if-link.ts";
import type { NetNS } from "../../shared/netns/netns.ts";
import { requirePrevResult, validateExpectedInterfaceIPs, validateExpectedRoutes } from "../../shared/iface/check.ts";
import type { FirewallDrivers } from "../../shared/firewall/backend.ts";
import { checkMasquerade } from "../../shared/firewall/ipmasq-steps.ts";
import type { BridgeConf } from "./config.ts";

interface Found {
  found: boolean;
  index: number;
  peerIndex: number;
  masterIndex: number;
}

const NOT_FOUND: Found = { found: false, index: 0, peerIndex: 0, masterIndex: 0 };

function lookup(nl: Handle, intf: Interface, expectInSandbox: boolean): Link {
  if (intf.name === "") throw new InternalError("Interface name missing ");
  let link: Link;
  try {
    link = nl.linkByName(intf.name);
  } catch {
    throw new InternalError(`Interface name ${intf.name} not found`);
  }
  const sandbox = intf.sandbox ?? "";
  if (expectInSandbox && sandbox === "") throw new InternalError(`Interface ${intf.name} is expected to be in a sandbox`);
  if (!expectInSandbox && sandbox !== "") throw new InternalError(`Interface ${intf.name} should not be in sandbox`);
  return link;
}

function checkBridgeIface(nl: Handle, intf: Interface, conf: BridgeConf): Found {
  const link = lookup(nl, intf, false);
  if (link.kind !== "bridge") throw new InternalError(`Interface ${intf.name} does not have link type of bridge`);
  if (intf.mac && intf.mac !== link.mac) throw new InternalError(`Bridge interface ${intf.name} Mac doesn't match: ${intf.mac}`);
  const promisc = (link.flags & IFF_PROMISC) !== 0;
  if (promisc !== conf.promiscMode) {
    throw new InternalError(`Bridge interface ${intf.name} configured Promisc Mode ${conf.promiscMode} doesn't match current state: ${promisc} `);
  }
  return { found: true, index: link.index, peerIndex: 0, masterIndex: link.masterIndex ?? 0 };
}

function checkContainerIface(nl: Handle, intf: Interface): Found {
  const link = lookup(nl, intf, true);
  if (link.kind !== "veth") throw new InternalError(`Error: Container interface ${link.name} not of type veth`);
  if (link.parentIndex === undefined) throw new InternalError(`Unable to obtain veth peer index for veth ${link.name}`);
  if (intf.mac && intf.mac !== link.mac) {
    throw new InternalError(`Interface ${intf.name} Mac ${intf.mac} doesn't match container Mac: ${link.mac ?? ""}`);
  }
  return { found: true, index: link.index, peerIndex: link.parentIndex, masterIndex: 0 };
}

function checkHostVeth(nl: Handle, intf: Interface, br: Found, cont: Found): Found {
  const link = lookup(nl, intf, false);
  if (link.kind !== "veth") return NOT_FOUND; // not ours: skip
  if (link.parentIndex === undefined) throw new InternalError(`Unable to obtain veth peer index for veth ${link.name}`);
  if (link.index !== cont.peerIndex || cont.index !== link.parentIndex || (link.masterIndex ?? 0) !== br.index) return NOT_FOUND;
  if (intf.mac && intf.mac !== link.mac) throw new InternalError(`Interface ${intf.name} Mac doesn't match: ${intf.mac} not found`);
  return { found: true, index: link.index, peerIndex: link.parentIndex, masterIndex: link.masterIndex ?? 0 };
}

/**
 * Validates the attachment described by prevResult against the kernel (host and container), and its
 * masquerade rules through `d`.
 */
export function checkBridge(args: CmdArgs, conf: BridgeConf, ns: NetNS, d: FirewallDrivers): void {
  const prev = requirePrevResult(args);
  const interfaces = prev.interfaces ?? [];
  let brMap: Interface = { name: "" };
  let contMap: Interface = { name: "" };
  for (const intf of interfaces) {
    if (intf.name === conf.bridge) brMap = intf;
    else if (intf.name === args.ifName && intf.sandbox === args.netns) contMap = intf;
  }

  using hostNl = Handle.open();
  const br = checkBridgeIface(hostNl, brMap, conf);
  if (args.netns !== (contMap.sandbox ?? "")) {
    throw new InternalError(`Sandbox in prevResult ${contMap.sandbox ?? ""} doesn't match configured netns: ${args.netns}`);
  }
  using contNl = Handle.open(ns);
  const cont = checkContainerIface(contNl, contMap);

  let veth = NOT_FOUND;
  for (const intf of interfaces) {
    if (intf.name === brMap.name || intf.name === contMap.name) continue;
    veth = checkHostVeth(hostNl, intf, br, cont);
    if (veth.found) break;
  }
  if (!br.found) throw new InternalError(`CNI created bridge ${conf.bridge} in host namespace was not found`);
  if (!cont.found) throw new InternalError(`CNI created interface in container ${args.ifName} not found`);
  if (!veth.found) throw new InternalError(`CNI veth created for bridge ${conf.bridge} was not found`);

  validateExpectedInterfaceIPs(contNl, args.ifName, prev.ips ?? []);
  validateExpectedRoutes(contNl, prev.routes ?? []);

  // Beyond upstream: the masquerade rules of this attachment must be in place too.
  const ips = (prev.ips ?? []).map((i) => i.address);
  if (conf.ipamType !== "" && ips.length > 0) checkMasquerade(conf, args, ips, d);
}
