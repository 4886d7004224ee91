/**
 * What `cni-plugins reload` puts back for a ptp attachment (shared/firewall/reapply.ts): the
 * masquerade rules (`ipMasq`) for the addresses of its result, with ADD's own setup.
 */
import { ipMasqPart } from "../../shared/firewall/ipmasq.ts";
import { masqBackendOf } from "../../shared/firewall/ipmasq-steps.ts";
import type { FirewallPartsOf } from "../../shared/firewall/reapply.ts";
import { loadPtpConfig } from "./config.ts";

export const ptpFirewallParts: FirewallPartsOf = (args, result, d) => {
  const conf = loadPtpConfig(args);
  if (!conf.ipMasq) return [];
  const t = { network: conf.name, containerID: args.containerID, ifName: args.ifName, ips: (result.ips ?? []).map((i) => i.address) };
  const masq = ipMasqPart(t, masqBackendOf(conf), d);
  return masq === undefined ? [] : [masq];
};
