/**
 * What `cni-plugins reload` puts back for a portmap attachment (shared/firewall/reapply.ts): per
 * container address (the first IPv4 and IPv6 of the cached result, as ADD chose them), the
 * forwarding rules, the shared hostPort chains and jumps and, with `snat`, the masquerade and
 * route_localnet guard rules — with ADD's own setup in the backend ADD used, followed, as at ADD,
 * by the flush of the UDP conntrack entries of the forwarded ports (flows that went past the
 * missing DNAT would keep bypassing it).
 */
import { annotate } from "../../shared/error/annotate.ts";
import { chooseBackend } from "../../shared/firewall/backend.ts";
import type { FirewallPart, FirewallPartsOf } from "../../shared/firewall/reapply.ts";
import { loadPortmapConfig, mappingsForFamily } from "./config.ts";
import { containerIPs, requirePrevResult } from "./container.ts";
import { flushUdpConntrack } from "./conntrack.ts";
import { portmapFeatures, udpPorts } from "./portmap.ts";

export const portmapFirewallParts: FirewallPartsOf = (args, _result, d) => {
  const conf = loadPortmapConfig(args);
  const prev = requirePrevResult(args, "must be called as chained plugin");
  if (conf.mappings.length === 0) return [];
  const backend = chooseBackend(conf.backend, d);
  const f = portmapFeatures(d)[backend];
  const ips = containerIPs(prev, args.ifName);
  const parts: FirewallPart[] = [];
  for (const container of [ips.v4, ips.v6]) {
    if (container === undefined) continue;
    const family = container.ip.family;
    const t = { conf, containerID: args.containerID, container, guard: conf.snat };
    parts.push({
      what: `hostPorts IPv${family} (${backend})`,
      sync: true,
      check: () => f.check(t),
      setup: () => {
        annotate(`unable to set up ${backend} rules for port mappings`, () => f.setup(t));
        flushUdpConntrack(family, udpPorts(mappingsForFamily(conf.mappings, family)), args.stderr);
      },
    });
  }
  return parts;
};
