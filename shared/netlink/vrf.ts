/**
 * VRF devices: creating one (`ip link add NAME type vrf table T`) and reading the routing table of
 * existing ones (IFLA_LINKINFO → IFLA_INFO_DATA → IFLA_VRF_TABLE, which the generic `Link` record
 * does not decode). Builders are pure and byte-checked against iproute2; operations take a Handle.
 */
import { attrMap, buildMessage, readI32, readString, readU32 } from "./codec.ts";
import { IFLA_IFNAME, IFLA_INFO_DATA, IFLA_INFO_KIND, IFLA_LINKINFO } from "./constants/if-link.ts";
import { IFLA_VRF_TABLE } from "./constants/if-link-vrf.ts";
import { NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST } from "./constants/netlink.ts";
import { IFINFOMSG_SIZE, RTM_GETLINK, RTM_NEWLINK } from "./constants/rtnetlink.ts";
import type { Handle } from "./handle.ts";
import { writeIfinfomsg } from "./link.ts";

/** A VRF device and its routing table. */
export interface VrfLink {
  index: number;
  name: string;
  table: number;
}

/** `ip link add NAME type vrf table T`. */
export function buildVrfAddRequest(name: string, table: number): Uint8Array {
  if (!Number.isInteger(table) || table < 1 || table > 0xffffffff) throw new RangeError(`invalid VRF table ${table}`);
  return buildMessage(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, (w) => {
    writeIfinfomsg(w);
    w.attrString(IFLA_IFNAME, name);
    w.nest(IFLA_LINKINFO, () => {
      w.attrText(IFLA_INFO_KIND, "vrf");
      w.nest(IFLA_INFO_DATA, () => {
        w.attrU32(IFLA_VRF_TABLE, table);
      });
    });
  });
}

/** Equivalent to `ip link add NAME type vrf table T` (the device starts down). */
export function vrfAdd(handle: Handle, name: string, table: number): void {
  handle.socket.request(buildVrfAddRequest(name, table), `name=${JSON.stringify(name)}`);
}

/** The VRF fields of one RTM_NEWLINK payload, or undefined when it is not a VRF. */
export function parseVrfLink(payload: Uint8Array): VrfLink | undefined {
  const a = attrMap(payload, IFINFOMSG_SIZE);
  const info = a.get(IFLA_LINKINFO);
  if (info === undefined) return undefined;
  const i = attrMap(info);
  const kind = i.get(IFLA_INFO_KIND);
  if (kind === undefined || readString(kind) !== "vrf") return undefined;
  const data = i.get(IFLA_INFO_DATA);
  const table = data === undefined ? undefined : attrMap(data).get(IFLA_VRF_TABLE);
  const name = a.get(IFLA_IFNAME);
  return {
    index: readI32(payload, 4),
    name: name === undefined ? "" : readString(name),
    table: table === undefined ? 0 : readU32(table),
  };
}

/** Every VRF in the handle's namespace (`ip -d link show type vrf`). */
export function vrfList(handle: Handle): VrfLink[] {
  const dump = buildMessage(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, (w) => writeIfinfomsg(w));
  const out: VrfLink[] = [];
  for (const m of handle.socket.request(dump, "dump")) {
    if (m.type !== RTM_NEWLINK) continue;
    const v = parseVrfLink(m.payload);
    if (v !== undefined) out.push(v);
  }
  return out;
}
