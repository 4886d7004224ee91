/**
 * The gateway interface of a VLAN bridge network (upstream ensureVlanInterface): with `vlan` set,
 * the gateway addresses go on `<bridge>.<vlan>`, one end of a veth pair in the host netns whose
 * other end is a bridge port with that VLAN as PVID/untagged. Created once, shared by all
 * containers of the network.
 */
import { InternalError, messageOf } from "../../shared/cni/errors.ts";
import { isNotFound } from "../../shared/netlink/errors.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import type { NetNS } from "../../shared/netns/netns.ts";
import { setupVeth } from "../../shared/iface/veth.ts";
import type { BridgeConf } from "./config.ts";
import { attachPort } from "./port.ts";

/** Finds or creates `<bridge>.<vlan>` and returns it (up). */
export function ensureVlanGateway(nl: Handle, hostNs: NetNS, br: Link, conf: Pick<BridgeConf, "vlan" | "preserveDefaultVlan">): Link {
  const name = `${br.name}.${conf.vlan}`;
  try {
    return nl.linkByName(name);
  } catch (err) {
    if (!isNotFound(err)) throw new InternalError(`failed to create vlan interface: failed to find interface ${JSON.stringify(name)}: ${messageOf(err)}`, { cause: err });
  }
  let pair;
  try {
    pair = setupVeth({ containerNl: nl, hostNl: nl, hostNs, ifName: name, ...(br.mtu > 0 ? { mtu: br.mtu } : {}) });
  } catch (err) {
    throw new InternalError(`failed to create vlan interface: faild to create vlan gateway ${JSON.stringify(name)}: ${messageOf(err)}`, { cause: err });
  }
  try {
    attachPort(nl, pair.host, br, { hairpin: false, isolated: false, vlan: conf.vlan, trunk: [], preserveDefaultVlan: conf.preserveDefaultVlan });
    nl.linkSetUp(pair.container.index);
  } catch (err) {
    try {
      nl.linkDel(pair.container.index);
    } catch {
      // already gone
    }
    throw new InternalError(`failed to create vlan interface: ${messageOf(err)}`, { cause: err });
  }
  return nl.linkByIndex(pair.container.index);
}
