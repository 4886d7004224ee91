/**
 * portmap: forwards host ports to the container (chained plugin, capability `portMappings`), with
 * iptables or nftables (upstream plugins/meta/portmap), byte-compatible with upstream HEAD's chains,
 * comments and nft objects so Go and TypeScript plugins tear down each other's rules. What differs
 * from upstream on purpose is listed in DIFFERENCES.md (portmap).
 */
import { annotate } from "../../shared/error/annotate.ts";
import { InternalError } from "../../shared/cni/errors.ts";
import { validAttachmentsOf } from "../../shared/cni/netconf.ts";
import { prevResultFrom } from "../../shared/cni/result/prevresult.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { chooseBackend, collectEverywhere, lockOf, teardownEverywhere, type BackendName, type FirewallDrivers, type FirewallPluginDeps } from "../../shared/firewall/backend.ts";
import { systemFirewallPluginDeps } from "../../shared/firewall/system.ts";
import type { CIDR } from "../../shared/ip/cidr.ts";
import type { PortmapDelTarget, PortmapFeature } from "./backend.ts";
import type { ForeignPort } from "./config.ts";
import { loadPortmapConfig, mappingsForFamily, type PortmapConfig } from "./config.ts";
import { containerIPs, requirePrevResult } from "./container.ts";
import { duplicateMappings, shadowedPorts } from "./conflicts.ts";
import { flushUdpConntrack } from "./conntrack.ts";
import { iptablesPortmap } from "./iptables-backend.ts";
import { enableRouteLocalnet, releaseRouteLocalnet, routeInterface } from "./localnet.ts";
import { nftablesPortmap } from "./nftables-backend.ts";

/** portmap in each backend, over `d`. */
export function portmapFeatures(d: FirewallDrivers): Record<BackendName, PortmapFeature> {
  return { iptables: iptablesPortmap(d.iptables), nftables: nftablesPortmap(d.nftables) };
}

function attachmentKey(conf: PortmapConfig, containerID: string): string {
  return `${conf.name}/${containerID}`;
}

/** The distinct UDP host ports of `ports` (their conntrack entries are flushed after a change). */
export function udpPorts(ports: readonly { protocol: string; hostPort: number }[]): number[] {
  return [...new Set(ports.filter((p) => p.protocol === "udp").map((p) => p.hostPort))];
}

/** portmap, writing its rules through `deps` (shared/firewall/backend.ts). */
export function makePortmapPlugin(deps: FirewallPluginDeps): PluginSpec {
  /** ADD for one container address in the chosen backend. */
  function forward(f: PortmapFeature, conf: PortmapConfig, args: CmdArgs, container: CIDR, guard: boolean): void {
    const containerID = args.containerID;
    const family = container.ip.family;
    const mine = mappingsForFamily(conf.mappings, family);
    const duplicates = duplicateMappings(mine, family);
    if (duplicates.length) throw new InternalError(duplicates.join("; "));
    // Once per clash, also when a restore is retried and the rules are read again.
    const told = new Set<string>();
    const foreign = (ports: readonly ForeignPort[]): void => {
      for (const line of shadowedPorts(mine, ports)) {
        if (told.has(line)) continue;
        told.add(line);
        args.stderr(`portmap: ${line}; container ${JSON.stringify(containerID)} now takes precedence (the older rules were most likely leaked by a container removed without DEL)\n`);
      }
    };
    annotate(`unable to set up ${f.backend} rules for port mappings`, () => f.setup({ conf, containerID, container, guard, foreign }));
  }

  function add(args: CmdArgs): Result {
    const conf = loadPortmapConfig(args);
    const prev = requirePrevResult(args, "must be called as chained plugin");
    if (conf.mappings.length === 0) return prev;
    const d = deps.drivers(args);
    const f = portmapFeatures(d)[chooseBackend(conf.backend, d)];
    const ips = containerIPs(prev, args.ifName);
    const localhost = conf.snat;
    lockOf(d).whileAdding({ network: conf.name, containerID: args.containerID, ifName: args.ifName }, () => {
      for (const ip of [ips.v4, ips.v6]) {
        if (ip === undefined) continue;
        forward(f, conf, args, ip, localhost);
        // After the rules: new packets of stale UDP flows then hit the new DNAT (#123).
        flushUdpConntrack(ip.ip.family, udpPorts(mappingsForFamily(conf.mappings, ip.ip.family)), args.stderr);
      }
    });
    if (ips.v4 !== undefined && localhost) {
      const ifName = routeInterface(ips.v4.ip);
      if (ifName !== undefined) enableRouteLocalnet(ifName, attachmentKey(conf, args.containerID));
    }
    return prev;
  }

  function del(args: CmdArgs): void {
    const conf = loadPortmapConfig(args, { forDel: true });
    const target: PortmapDelTarget = { network: conf.name, containerID: args.containerID, conf };
    // A prevResult with the container's addresses names its families: ADD only wrote those. One
    // without (missing, `{}`, no `ips`: SPEC.md "DEL") says nothing, and both families are cleaned.
    const prev = prevResultFrom(args);
    if (prev !== undefined) {
      const ips = containerIPs(prev, args.ifName);
      const families = ([4, 6] as const).filter((f) => (f === 4 ? ips.v4 : ips.v6) !== undefined);
      if (families.length > 0) target.families = families;
    }
    const d = deps.drivers(args);
    const removed = lockOf(d).whileDeleting({ network: conf.name, containerID: args.containerID, ifName: args.ifName }, () =>
      annotate("failed to remove port mappings", () => teardownEverywhere(Object.values(portmapFeatures(d)), target, chooseBackend(conf.backend, d))),
    );
    const ports = udpPorts([...removed.flat(), ...conf.mappings]);
    for (const family of [4, 6] as const) flushUdpConntrack(family, ports, args.stderr);
    releaseRouteLocalnet(attachmentKey(conf, args.containerID));
  }

  function check(args: CmdArgs): void {
    const conf = loadPortmapConfig(args);
    const prev = requirePrevResult(args, "Required prevResult missing");
    if (conf.mappings.length === 0) return;
    const d = deps.drivers(args);
    const f = portmapFeatures(d)[chooseBackend(conf.backend, d)];
    const ips = containerIPs(prev, args.ifName);
    const problems: string[] = [];
    for (const container of [ips.v4, ips.v6]) {
      if (container === undefined) continue;
      problems.push(...f.check({ conf, containerID: args.containerID, container }));
    }
    if (problems.length) throw new InternalError(`port mappings of ${args.containerID} are not in place: ${problems.join("; ")}`);
  }

  function gc(args: CmdArgs): void {
    const conf = loadPortmapConfig(args);
    const keep = validAttachmentsOf(args.config);
    if (keep === undefined) return; // absent or malformed: collect nothing
    annotate("failed to garbage-collect port mappings", () => collectEverywhere(Object.values(portmapFeatures(deps.drivers(args))), conf.name, keep));
  }

  return { name: "portmap", versions: ALL_VERSIONS, add, del, check, gc, status: () => undefined };
}

export const portmapPlugin: PluginSpec = makePortmapPlugin(systemFirewallPluginDeps);
