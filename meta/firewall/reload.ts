/**
 * What `cni-plugins reload` puts back for a firewall attachment (shared/firewall/reapply.ts): the
 * per-address rules (iptables or nftables) or the firewalld zone membership of the result's
 * addresses, and the ingress policy's isolation rules — with ADD's own setup, in the backend ADD
 * used: the one the config names, else the one ADD recorded for the attachment (records.ts: a
 * firewalld that is down or restarting must not turn an attachment's zone membership into iptables
 * rules), else the one ADD's choice would make now.
 */
import { prevResultFrom } from "../../shared/cni/result/prevresult.ts";
import { annotate } from "../../shared/error/annotate.ts";
import type { AnyFirewallPart, FirewallPartsOf } from "../../shared/firewall/reapply.ts";
import { loadFirewallConfig, validateAdminChain } from "./config.ts";
import { systemBusAddress } from "../../shared/dbus/system-bus.ts";
import { backendName, firewallFeatures, target, type FirewallDeps } from "./firewall.ts";
import { addIsolationIptables, checkIsolationIptables } from "./iptables-backend.ts";
import { recordOf } from "./records.ts";

export function firewallPartsWith(deps: FirewallDeps): FirewallPartsOf {
  return async (args, result, d) => {
    const conf = loadFirewallConfig(args);
    const requested = conf.backend;
    validateAdminChain(conf.adminChain);
    const t = target(conf, args, prevResultFrom(args) ?? result, true);
    const recorded = requested === undefined ? recordOf(deps.stateDir, conf.name, args.containerID, args.ifName)?.backend : undefined;
    const name = recorded ?? (await backendName(requested, args, deps, d));
    if (name !== "firewalld") {
      const f = firewallFeatures(d)[name];
      return [{ what: `firewall (${name})`, sync: true, check: () => f.check(t), setup: () => f.setup(t) }];
    }
    const fwd = deps.firewalld(systemBusAddress(args.env));
    const parts: AnyFirewallPart[] = [];
    if (t.addrs.length > 0) {
      parts.push({
        what: `firewall (firewalld zone ${conf.zone})`,
        sync: false,
        check: () => annotate("firewalld", () => fwd.check(t)),
        setup: () => fwd.setup(t),
        undo: () => fwd.teardown(t, true),
      });
    }
    if (t.policy !== "open") {
      parts.push({ what: "ingress policy (iptables)", sync: true, check: () => checkIsolationIptables(d.iptables, t), setup: () => addIsolationIptables(d.iptables, t) });
    }
    return parts;
  };
}
