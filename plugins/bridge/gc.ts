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
import type { FirewallDrivers } from "../../shared/firewall/backend.ts";
import { collectMasquerade, MASQUERADE_STEP } from "../../shared/firewall/ipmasq-steps.ts";
import { Handle } from "../../shared/netlink/handle.ts";
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

/** GC for `conf` with the runtime's `args`, the rules read and removed through `d` (see module doc). */
export async function collectGarbage(conf: BridgeConf, args: CmdArgs, d: FirewallDrivers): Promise<void> {
  const keep = validAttachmentsOf(args.config);
  const steps: TeardownStep[] = [
    {
      name: "IPAM",
      run: async () => {
        await delegateToIpam(conf.ipamType, args, "GC");
      },
    },
  ];
  if (keep !== undefined && conf.ipMasq) steps.push({ name: MASQUERADE_STEP, run: () => collectMasquerade(conf, keep, d) });
  if (keep !== undefined && conf.macspoofchk) {
    steps.push({ name: "spoof-check rules", run: () => gcSpoofCheck(keep, portOfBridgeOrGone(conf.bridge), d.nftables) });
  }
  await teardown(steps);
}
