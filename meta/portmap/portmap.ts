/**
 * portmap: forwards host ports to the container (chained plugin, capability `portMappings`), with
 * iptables or nftables, byte-compatible with upstream HEAD's chains, comments and nft objects so Go
 * and TypeScript plugins tear down each other's rules (upstream-matrix §2.12).
 *
 * Differences from the Go plugins (1.1.1 / HEAD), on purpose:
 * - one iptables-restore per IP family (or one nft transaction) per call instead of a process per
 *   rule: 200 mappings in milliseconds, not seconds (#510);
 * - validation: ports must be 1–65535, protocol tcp/udp/sctp (any case, stored lower-case), a hostIP
 *   that does not parse is an error (upstream silently produced unusable rules); errors are code 7;
 * - a host port already forwarded by another container on an overlapping hostIP and the same
 *   protocol is refused (upstream: last writer wins, silently);
 * - UDP conntrack entries of the mapped host ports are deleted after DEL too, not only after ADD
 *   (#1190), through NETLINK_NETFILTER;
 * - DEL removes the container's rules even when `portMappings` is not passed again (the chain name
 *   and nft comments derive from network + container ID), from both backends;
 * - localhost hostPort: a martian guard drops non-loopback traffic to 127.0.0.0/8 (filter INPUT
 *   chain CNI-HOSTPORT-LOCALNET, or nft chain localnet_guard), and route_localnet is set back to 0
 *   on the last DEL when this plugin turned it on (#729);
 * - nftables: every entry is gated by `fib daddr type local` (CVE-2025-67499 fix, as HEAD);
 * - re-ADD makes the container's rules exact (stale rules from an earlier ADD are replaced);
 * - CHECK compares the exact rules, reads only, and only checks families the container has (#819);
 * - GC removes this network's CNI-DN-* chains of containers not in `cni.dev/valid-attachments`
 *   (iptables; nftables rules carry only the container ID, so GC leaves them, as upstream);
 * - nftables is chosen by default also when nft-style conditions are given without `backend`.
 */
import { validAttachmentsOf } from "../../shared/cni/netconf.ts";
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { CommandNotFoundError } from "../../shared/firewall/exec.ts";
import { systemIptables, type IptablesDriver } from "../../shared/firewall/iptables/driver.ts";
import { isNftUnsupported, systemNft, type NftDriver } from "../../shared/firewall/nftables/driver.ts";
import type { CIDR, IPFamily } from "../../shared/ip/ip.ts";
import { containerIPs, loadPortmapConfig, mappingsForFamily, requirePrevResult, type PortmapBackend, type PortmapConfig } from "./config.ts";
import { findConflicts } from "./conflicts.ts";
import { flushUdpConntrack } from "./conntrack.ts";
import { checkPortsIptables, forwardPortsIptables, gcPortsIptables, unforwardPortsIptables, type ForeignPort } from "./iptables-backend.ts";
import type { ForwardedPort } from "./iptables-rules.ts";
import { enableRouteLocalnet, releaseRouteLocalnet, routeInterface } from "./localnet.ts";
import { checkPortsNftables, forwardPortsNftables, unforwardPortsNftables } from "./nftables-backend.ts";

/** The firewall tools portmap talks to; tests pass fakes. */
export interface PortmapDrivers {
  iptables: IptablesDriver;
  nftables: NftDriver;
}

let drivers: PortmapDrivers | undefined;
function systemDrivers(): PortmapDrivers {
  drivers ??= { iptables: systemIptables(), nftables: systemNft };
  return drivers;
}

/** Upstream's default: iptables, unless iptables is unusable and nftables usable. */
export function resolveBackend(b: PortmapBackend | undefined, d: PortmapDrivers): PortmapBackend {
  if (b !== undefined) return b;
  return !d.iptables.available() && d.nftables.available() ? "nftables" : "iptables";
}

function attachmentKey(conf: PortmapConfig, containerID: string): string {
  return `${conf.name}/${containerID}`;
}

/** ADD for one container address in the chosen backend. */
export function forwardPorts(d: PortmapDrivers, backend: PortmapBackend, conf: PortmapConfig, containerID: string, container: CIDR, guard: boolean): void {
  const mine = mappingsForFamily(conf.mappings, container.ip.family);
  const checkConflicts = (foreign: ForeignPort[], family: IPFamily): void => {
    const problems = findConflicts(mine, foreign, family);
    if (problems.length) throw new InternalError(problems.join("; "));
  };
  try {
    if (backend === "nftables") forwardPortsNftables(d.nftables, conf, containerID, container, { guard, checkConflicts });
    else forwardPortsIptables(d.iptables, conf, containerID, container, { guard, checkConflicts });
  } catch (err) {
    if (err instanceof InternalError && !(err.cause instanceof Error)) throw err;
    throw new InternalError(`unable to set up ${backend} rules for port mappings: ${messageOf(err)}`, { cause: err });
  }
}

function isUnsupported(err: unknown): boolean {
  return err instanceof CommandNotFoundError || isNftUnsupported(err);
}

/** Removes the container's rules from both backends; returns the ports they forwarded. */
export function unforwardPorts(d: PortmapDrivers, network: string, containerID: string): ForwardedPort[] {
  const removed: ForwardedPort[] = [];
  const errors: string[] = [];
  if (d.iptables.available()) {
    try {
      removed.push(...unforwardPortsIptables(d.iptables, network, containerID));
    } catch (err) {
      if (!isUnsupported(err)) errors.push(`(iptables) ${messageOf(err)}`);
    }
  }
  if (d.nftables.available()) {
    try {
      removed.push(...unforwardPortsNftables(d.nftables, containerID));
    } catch (err) {
      if (!isUnsupported(err)) errors.push(`(nftables) ${messageOf(err)}`);
    }
  }
  if (errors.length) throw new InternalError(`failed to remove port mappings: ${errors.join("; ")}`);
  return removed;
}

function udpPorts(ports: readonly { protocol: string; hostPort: number }[]): number[] {
  return [...new Set(ports.filter((p) => p.protocol === "udp").map((p) => p.hostPort))];
}

export function makePortmapPlugin(getDrivers: () => PortmapDrivers = systemDrivers): PluginSpec {
  function add(args: CmdArgs): Result {
    const conf = loadPortmapConfig(args);
    const prev = requirePrevResult(args, "must be called as chained plugin");
    if (conf.mappings.length === 0) return prev;
    const d = getDrivers();
    const backend = resolveBackend(conf.backend, d);
    const ips = containerIPs(prev, args.ifName);
    const localhost = conf.snat;
    for (const ip of [ips.v4, ips.v6]) {
      if (ip === undefined) continue;
      forwardPorts(d, backend, conf, args.containerID, ip, localhost);
      // After the rules: new packets of stale UDP flows then hit the new DNAT (#123).
      flushUdpConntrack(ip.ip.family, udpPorts(mappingsForFamily(conf.mappings, ip.ip.family)));
    }
    if (ips.v4 !== undefined && localhost) {
      const ifName = routeInterface(ips.v4.ip);
      if (ifName !== undefined) enableRouteLocalnet(ifName, attachmentKey(conf, args.containerID));
    }
    return prev;
  }

  function del(args: CmdArgs): void {
    const conf = loadPortmapConfig(args);
    const removed = unforwardPorts(getDrivers(), conf.name, args.containerID);
    const ports = udpPorts([...removed, ...conf.mappings]);
    for (const family of [4, 6] as const) flushUdpConntrack(family, ports);
    releaseRouteLocalnet(attachmentKey(conf, args.containerID));
  }

  function check(args: CmdArgs): void {
    const conf = loadPortmapConfig(args);
    const prev = requirePrevResult(args, "Required prevResult missing");
    if (conf.mappings.length === 0) return;
    const d = getDrivers();
    const backend = resolveBackend(conf.backend, d);
    const ips = containerIPs(prev, args.ifName);
    const problems: string[] = [];
    for (const ip of [ips.v4, ips.v6]) {
      if (ip === undefined) continue;
      problems.push(
        ...(backend === "nftables" ? checkPortsNftables(d.nftables, conf, args.containerID, ip) : checkPortsIptables(d.iptables, conf, args.containerID, ip)),
      );
    }
    if (problems.length) throw new InternalError(`port mappings of ${args.containerID} are not in place: ${problems.join("; ")}`);
  }

  function gc(args: CmdArgs): void {
    const conf = loadPortmapConfig(args);
    const valid = validAttachmentsOf(args.config);
    if (valid === undefined) return; // absent or malformed: collect nothing
    const keep = new Set(valid.map((a) => a.containerID));
    const d = getDrivers();
    if (!d.iptables.available()) return;
    try {
      gcPortsIptables(d.iptables, conf.name, keep);
    } catch (err) {
      if (!isUnsupported(err)) throw new InternalError(`failed to garbage-collect port mappings: ${messageOf(err)}`, { cause: err });
    }
  }

  return { name: "portmap", versions: ALL_VERSIONS, add, del, check, gc, status: () => undefined };
}

export const portmapPlugin: PluginSpec = makePortmapPlugin();
