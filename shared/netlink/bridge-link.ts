/**
 * Changing bridge (IFLA_BR_*) options on an existing bridge, as
 * `ip link set dev BR type bridge vlan_filtering 0|1 | vlan_default_pvid N` does it:
 * RTM_NEWLINK with the ifindex and IFLA_LINKINFO { IFLA_INFO_KIND "bridge", IFLA_INFO_DATA {...} }.
 * Port flags (hairpin, isolated) are on Handle (link-set.ts). Builders are pure and byte-checked
 * against iproute2.
 */

import { buildMessage } from "./codec.ts";
import { IFLA_BR_VLAN_DEFAULT_PVID, IFLA_BR_VLAN_FILTERING, IFLA_INFO_DATA, IFLA_INFO_KIND, IFLA_LINKINFO } from "./constants/if-link.ts";
import { NLM_F_ACK, NLM_F_REQUEST } from "./constants/netlink.ts";
import { RTM_NEWLINK } from "./constants/rtnetlink.ts";
import type { Handle } from "./handle.ts";
import { writeIfinfomsg } from "./link.ts";

/** Bridge options that can be changed on a live bridge. */
export interface BridgeChange {
  vlanFiltering?: boolean;
  /** 0 disables the default PVID for new ports. */
  vlanDefaultPvid?: number;
}

/** `ip link set dev BR type bridge [vlan_filtering 0|1] [vlan_default_pvid N]`. */
export function buildBridgeChangeRequest(index: number, change: BridgeChange): Uint8Array {
  if (change.vlanDefaultPvid !== undefined && (!Number.isInteger(change.vlanDefaultPvid) || change.vlanDefaultPvid < 0 || change.vlanDefaultPvid > 4094)) {
    throw new RangeError(`invalid vlan_default_pvid ${change.vlanDefaultPvid}`);
  }
  return buildMessage(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, (w) => {
    writeIfinfomsg(w, { index });
    w.nest(IFLA_LINKINFO, () => {
      w.attrText(IFLA_INFO_KIND, "bridge");
      w.nest(IFLA_INFO_DATA, () => {
        if (change.vlanFiltering !== undefined) w.attrU8(IFLA_BR_VLAN_FILTERING, change.vlanFiltering ? 1 : 0);
        if (change.vlanDefaultPvid !== undefined) w.attrU16(IFLA_BR_VLAN_DEFAULT_PVID, change.vlanDefaultPvid);
      });
    });
  });
}

/** Equivalent to `ip link set dev BR type bridge vlan_filtering 0|1 ...`. */
export function bridgeChange(handle: Handle, index: number, change: BridgeChange): void {
  handle.socket.request(buildBridgeChangeRequest(index, change), `index=${index}`);
}

/** Equivalent to `ip link set dev BR type bridge vlan_filtering 0|1`. */
export function bridgeSetVlanFiltering(handle: Handle, index: number, on: boolean): void {
  bridgeChange(handle, index, { vlanFiltering: on });
}
