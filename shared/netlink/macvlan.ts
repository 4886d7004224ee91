/**
 * macvlan creation with every option the macvlan plugin needs, including the broadcast queue length
 * (IFLA_MACVLAN_BC_QUEUE_LEN, kernel ≥ 5.11) that the basic {@link Handle.linkAddMacvlan} lacks.
 * Attribute order follows iproute2: [MTU] [ADDRESS] [NET_NS_FD] LINK IFNAME LINKINFO{KIND,
 * DATA{[BC_QUEUE_LEN] MODE}} (golden bytes in macvlan.test.ts).
 */
import { buildMessage } from "./codec.ts";
import {
  IFLA_ADDRESS,
  IFLA_IFNAME,
  IFLA_INFO_DATA,
  IFLA_INFO_KIND,
  IFLA_LINK,
  IFLA_LINKINFO,
  IFLA_MACVLAN_BC_QUEUE_LEN,
  IFLA_MACVLAN_MODE,
  IFLA_MTU,
  IFLA_NET_NS_FD,
  MACVLAN_MODE_BRIDGE,
  MACVLAN_MODE_PASSTHRU,
  MACVLAN_MODE_PRIVATE,
  MACVLAN_MODE_SOURCE,
  MACVLAN_MODE_VEPA,
} from "./constants/if-link.ts";
import { NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST } from "./constants/netlink.ts";
import { RTM_NEWLINK } from "./constants/rtnetlink.ts";
import { writeIfinfomsg } from "./link.ts";
import { macToBytes } from "./_addr-bytes.ts";
import type { Handle } from "./handle.ts";
import type { MacvlanMode } from "./link-add.ts";

export interface MacvlanCreateOptions {
  name: string;
  parentIndex: number;
  mode: MacvlanMode;
  mtu?: number;
  mac?: string;
  /** Broadcast/multicast queue length (`bcqueuelen N`). */
  bcQueueLen?: number;
  /** Create the link directly in the netns behind this fd. */
  netnsFd?: number;
}

/** MACVLAN_MODE_* by name. */
export const MACVLAN_MODE_BY_NAME: Readonly<Record<MacvlanMode, number>> = {
  private: MACVLAN_MODE_PRIVATE,
  vepa: MACVLAN_MODE_VEPA,
  bridge: MACVLAN_MODE_BRIDGE,
  passthru: MACVLAN_MODE_PASSTHRU,
  source: MACVLAN_MODE_SOURCE,
};

/** `ip link add link PARENT name N [mtu M] [address A] [netns FD] type macvlan mode MODE [bcqueuelen Q]` */
export function buildMacvlanCreateRequest(o: MacvlanCreateOptions): Uint8Array {
  const mode = MACVLAN_MODE_BY_NAME[o.mode];
  return buildMessage(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, (w) => {
    writeIfinfomsg(w);
    if (o.mtu !== undefined) w.attrU32(IFLA_MTU, o.mtu);
    if (o.mac !== undefined) w.attr(IFLA_ADDRESS, macToBytes(o.mac));
    if (o.netnsFd !== undefined) w.attrU32(IFLA_NET_NS_FD, o.netnsFd);
    w.attrU32(IFLA_LINK, o.parentIndex);
    w.attrString(IFLA_IFNAME, o.name);
    w.nest(IFLA_LINKINFO, () => {
      w.attrText(IFLA_INFO_KIND, "macvlan");
      w.nest(IFLA_INFO_DATA, () => {
        if (o.bcQueueLen !== undefined) w.attrU32(IFLA_MACVLAN_BC_QUEUE_LEN, o.bcQueueLen);
        w.attrU32(IFLA_MACVLAN_MODE, mode);
      });
    });
  });
}

/** Equivalent to `ip link add link PARENT name N [netns FD] type macvlan mode MODE [bcqueuelen Q]`. */
export function macvlanCreate(nl: Handle, o: MacvlanCreateOptions): void {
  nl.socket.request(buildMacvlanCreateRequest(o), `name=${JSON.stringify(o.name)}`);
}
