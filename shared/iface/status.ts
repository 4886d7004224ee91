/**
 * STATUS of an interface plugin (SPEC "STATUS": "is the plugin ready to service ADD requests?"):
 * code 51 when a host link the plugin's ADD needs cannot be used — the configured master of a
 * macvlan, ipvlan or vlan is missing, the configured bridge name belongs to a link that is not a
 * bridge — and then the IPAM plugin's STATUS, as upstream, whose error passes unchanged. 51, not
 * 50 (SPEC.md "STATUS" on the spec's main branch): the network's existing containers hang off that
 * link too — the kernel deletes a macvlan, ipvlan or vlan with its master, and a bridge's ports
 * with the bridge — so they may have lost connectivity as well. Each plugin's page in docs/plugins
 * says what its STATUS checks and which code each check gives.
 */
import { PluginUnavailableLimitedError } from "../cni/errors.ts";
import { delegateToIpam } from "../cni/ipam-delegation.ts";
import type { CmdArgs } from "../cni/types.ts";
import { messageOf } from "../error/annotate.ts";
import { Handle } from "../netlink/handle.ts";
import { lookupMaster } from "./container-link.ts";

/** What an interface plugin's STATUS looks at. */
export interface InterfaceStatus {
  /** `ipam.type`; "" = no IPAM STATUS. */
  ipamType: string;
  /** Throws when a host link ADD needs cannot be used (looked up through the host's handle). */
  hostLinks?: ((hostNl: Handle) => void) | undefined;
}

/** STATUS: {@link InterfaceStatus.hostLinks} (its failure becomes code 51, same message), then IPAM STATUS. */
export async function interfaceStatus(args: CmdArgs, spec: InterfaceStatus): Promise<void> {
  if (spec.hostLinks !== undefined) {
    using nl = Handle.open();
    try {
      spec.hostLinks(nl);
    } catch (err) {
      throw new PluginUnavailableLimitedError(messageOf(err), { cause: err });
    }
  }
  await delegateToIpam(spec.ipamType, args, "STATUS");
}

/**
 * The host-link check of macvlan, ipvlan and vlan: a configured master in the host netns must exist
 * (`failed to lookup master "x": …`, what ADD would fail with). Nothing to look at when no master is
 * configured (ADD picks the default-route or chained interface) or the master lives in the
 * container's netns (`linkInContainer`: STATUS has no container).
 */
export function masterStatus(conf: { master: string; linkInContainer: boolean }): ((hostNl: Handle) => void) | undefined {
  if (conf.master === "" || conf.linkInContainer) return undefined;
  return (hostNl) => void lookupMaster(hostNl, conf.master);
}
