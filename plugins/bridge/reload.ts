/**
 * What `cni-plugins reload` puts back for a bridge attachment (shared/firewall/reapply.ts): the
 * spoof-check rules (`macspoofchk`) for the host veth and container MAC its result names, and the
 * masquerade rules (`ipMasq`, with IPAM) for its addresses — each with ADD's own setup.
 */
import { InternalError } from "../../shared/cni/errors.ts";
import type { Result } from "../../shared/cni/types.ts";
import { ipMasqPart } from "../../shared/firewall/ipmasq.ts";
import { masqBackendOf } from "../../shared/firewall/ipmasq-steps.ts";
import type { AnyFirewallPart, FirewallPartsOf } from "../../shared/firewall/reapply.ts";
import { loadBridgeConfig } from "./config.ts";
import { checkSpoofCheck, setupSpoofCheck, type SpoofCheckSetup } from "./spoofcheck.ts";

/** The host veth and container MAC ADD gave spoof-check, as its result records them ([bridge, host veth, container, …]). */
function spoofCheckOf(result: Result, containerID: string, ifName: string): SpoofCheckSetup {
  const ifaces = result.interfaces ?? [];
  const container = ifaces.find((i) => i.name === ifName && (i.sandbox ?? "") !== "");
  const host = ifaces.slice(1).find((i) => (i.sandbox ?? "") === "");
  if (container?.mac === undefined || host === undefined) throw new InternalError("spoof-check: the cached result does not name the host veth and the container's MAC");
  return { hostVeth: host.name, containerMac: container.mac, containerID, ifName };
}

export const bridgeFirewallParts: FirewallPartsOf = (args, result, d) => {
  const conf = loadBridgeConfig(args);
  const parts: AnyFirewallPart[] = [];
  if (conf.macspoofchk) {
    const s = spoofCheckOf(result, args.containerID, args.ifName);
    parts.push({ what: "spoof-check (nftables)", sync: true, check: () => checkSpoofCheck(s, d.nftables), setup: () => setupSpoofCheck(s, d.nftables) });
  }
  if (conf.ipMasq && conf.ipamType !== "") {
    const t = { network: conf.name, containerID: args.containerID, ifName: args.ifName, ips: (result.ips ?? []).map((i) => i.address) };
    const masq = ipMasqPart(t, masqBackendOf(conf), d);
    if (masq !== undefined) parts.push(masq);
  }
  return parts;
};
