/**
 * bridge GC (spec 1.1.0): the IPAM plugin's GC (upstream's bridge does only this), then, beyond
 * upstream, this network's masquerade rules (shared/firewall/ipmasq.ts) and spoof-check rules
 * (spoofcheck.ts) of attachments not in `cni.dev/valid-attachments` — each only when the config
 * enables it, as DEL. Every step runs; failures are reported together (shared/undo/teardown.ts).
 * Without a valid-attachments list (absent or malformed) only IPAM is asked: nothing is collected.
 */
import { delegateToIpam } from "../../shared/cni/ipam-delegation.ts";
import { validAttachmentsOf } from "../../shared/cni/netconf.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import { systemFirewallDrivers } from "../../shared/firewall/backend.ts";
import { gcIPMasq } from "../../shared/firewall/ipmasq.ts";
import { Handle } from "../../shared/netlink/index.ts";
import { teardown, type TeardownStep } from "../../shared/undo/teardown.ts";
import type { BridgeConf } from "./config.ts";
import { gcSpoofCheck } from "./spoofcheck.ts";

/** A host veth whose spoof-check rules this network may collect: a port of `bridge`, or gone. */
function portOfBridgeOrGone(bridge: string): (hostVeth: string) => boolean {
  using nl = Handle.open();
  const bridgeIndex = nl.linkFind(bridge)?.index;
  const masters = new Map(nl.linkList().map((l) => [l.name, l.masterIndex]));
  return (veth) => !masters.has(veth) || (bridgeIndex !== undefined && masters.get(veth) === bridgeIndex);
}

/** GC for `conf` with the runtime's `args` (see module doc). */
export async function collectGarbage(conf: BridgeConf, args: CmdArgs): Promise<void> {
  const keep = validAttachmentsOf(args.config);
  const steps: TeardownStep[] = [
    {
      name: "IPAM",
      run: async () => {
        await delegateToIpam(conf.ipamType, args, "GC");
      },
    },
  ];
  const d = systemFirewallDrivers(args.env, args.scope.lockWaiter);
  if (keep !== undefined && conf.ipMasq) steps.push({ name: "masquerade rules", run: () => gcIPMasq(conf.name, keep, d) });
  if (keep !== undefined && conf.macspoofchk) {
    steps.push({ name: "spoof-check rules", run: () => gcSpoofCheck(keep, portOfBridgeOrGone(conf.bridge), d.nftables) });
  }
  await teardown(steps);
}
