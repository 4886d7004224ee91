/**
 * Bridge VLAN entries on a port (`bridge vlan add|del|show`): RTM_SETLINK / RTM_DELLINK for
 * AF_BRIDGE carrying IFLA_AF_SPEC { IFLA_BRIDGE_FLAGS, IFLA_BRIDGE_VLAN_INFO }, and the
 * RTM_GETLINK AF_BRIDGE dump with IFLA_EXT_MASK = RTEXT_FILTER_BRVLAN for listing. Builders are
 * pure and byte-checked against iproute2 (test/fixtures/netlink/bridge-iproute2-requests.json).
 *
 * These need a kernel with CONFIG_BRIDGE_VLAN_FILTERING; without it the kernel answers
 * EOPNOTSUPP to adds (deletes of absent entries succeed, listings are empty).
 * Callers use the Handle methods.
 */

import { AF_BRIDGE } from "../sys/constants.ts";
import { buildMessage, parseAttrs, readI32, readU16 } from "./codec.ts";
import {
  BRIDGE_FLAGS_MASTER,
  BRIDGE_FLAGS_SELF,
  BRIDGE_VLAN_INFO_PVID,
  BRIDGE_VLAN_INFO_RANGE_BEGIN,
  BRIDGE_VLAN_INFO_RANGE_END,
  BRIDGE_VLAN_INFO_SIZE,
  BRIDGE_VLAN_INFO_UNTAGGED,
  IFLA_BRIDGE_FLAGS,
  IFLA_BRIDGE_VLAN_INFO,
} from "./constants/if-bridge.ts";
import { IFLA_AF_SPEC, IFLA_EXT_MASK } from "./constants/if-link.ts";
import { NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST } from "./constants/netlink.ts";
import { IFINFOMSG_SIZE, RTEXT_FILTER_BRVLAN, RTM_DELLINK, RTM_GETLINK, RTM_NEWLINK, RTM_SETLINK } from "./constants/rtnetlink.ts";
import type { NetlinkSocket } from "./socket.ts";
import { writeIfinfomsg } from "./link.ts";

/** One VLAN entry: `bridge vlan add dev X vid VID [pvid] [untagged] [master|self]`. */
export interface BridgeVlanSpec {
  vid: number;
  /** Ingress untagged frames get this VID (PVID). */
  pvid?: boolean;
  /** Egress frames of this VID leave untagged. */
  untagged?: boolean;
  /** `master` (default: configure the port's entry on its bridge) or `self` (the device itself). */
  target?: "master" | "self";
}

/** A VLAN entry as the kernel lists it. */
export interface BridgeVlanEntry {
  vid: number;
  /** BRIDGE_VLAN_INFO_* flags. */
  flags: number;
  pvid: boolean;
  untagged: boolean;
}

function checkVid(vid: number): void {
  if (!Number.isInteger(vid) || vid < 1 || vid > 4094) throw new RangeError(`invalid bridge VLAN id ${vid} (must be 1..4094)`);
}

function buildVlanRequest(type: number, index: number, spec: BridgeVlanSpec): Uint8Array {
  checkVid(spec.vid);
  let flags = 0;
  if (spec.pvid === true) flags |= BRIDGE_VLAN_INFO_PVID;
  if (spec.untagged === true) flags |= BRIDGE_VLAN_INFO_UNTAGGED;
  const target = spec.target ?? "master";
  return buildMessage(type, NLM_F_REQUEST | NLM_F_ACK, (w) => {
    writeIfinfomsg(w, { family: AF_BRIDGE, index });
    w.nest(IFLA_AF_SPEC, () => {
      w.attrU16(IFLA_BRIDGE_FLAGS, target === "master" ? BRIDGE_FLAGS_MASTER : BRIDGE_FLAGS_SELF);
      const info = new Uint8Array(BRIDGE_VLAN_INFO_SIZE);
      const v = new DataView(info.buffer);
      const le = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;
      v.setUint16(0, flags, le);
      v.setUint16(2, spec.vid, le);
      w.attr(IFLA_BRIDGE_VLAN_INFO, info);
    });
  });
}

/** `bridge vlan add dev X vid VID [pvid] [untagged] master` (RTM_SETLINK, AF_BRIDGE). */
export function buildBridgeVlanAddRequest(index: number, spec: BridgeVlanSpec): Uint8Array {
  return buildVlanRequest(RTM_SETLINK, index, spec);
}

/** `bridge vlan del dev X vid VID master` (RTM_DELLINK, AF_BRIDGE). */
export function buildBridgeVlanDelRequest(index: number, spec: BridgeVlanSpec): Uint8Array {
  return buildVlanRequest(RTM_DELLINK, index, spec);
}

/** `bridge vlan show`: RTM_GETLINK dump for AF_BRIDGE with IFLA_EXT_MASK = RTEXT_FILTER_BRVLAN. */
export function buildBridgeVlanDumpRequest(): Uint8Array {
  return buildMessage(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, (w) => {
    writeIfinfomsg(w, { family: AF_BRIDGE });
    w.attrU32(IFLA_EXT_MASK, RTEXT_FILTER_BRVLAN);
  });
}

/**
 * Decodes the VLAN entries of one AF_BRIDGE RTM_NEWLINK payload: the ifindex and its
 * IFLA_AF_SPEC/IFLA_BRIDGE_VLAN_INFO list (ranges expanded into single VIDs).
 */
export function parseBridgeVlanLink(payload: Uint8Array): { index: number; vlans: BridgeVlanEntry[] } {
  const index = readI32(payload, 4);
  const vlans: BridgeVlanEntry[] = [];
  let rangeStart: { vid: number; flags: number } | undefined;
  for (const a of parseAttrs(payload, IFINFOMSG_SIZE)) {
    if (a.type !== IFLA_AF_SPEC) continue;
    for (const b of parseAttrs(a.data)) {
      if (b.type !== IFLA_BRIDGE_VLAN_INFO || b.data.byteLength < BRIDGE_VLAN_INFO_SIZE) continue;
      const flags = readU16(b.data, 0);
      const vid = readU16(b.data, 2);
      if ((flags & BRIDGE_VLAN_INFO_RANGE_BEGIN) !== 0) {
        rangeStart = { vid, flags };
        continue;
      }
      const first = (flags & BRIDGE_VLAN_INFO_RANGE_END) !== 0 && rangeStart !== undefined ? rangeStart.vid : vid;
      const entryFlags = flags & ~(BRIDGE_VLAN_INFO_RANGE_BEGIN | BRIDGE_VLAN_INFO_RANGE_END);
      for (let v = first; v <= vid; v++) {
        vlans.push({
          vid: v,
          flags: entryFlags,
          pvid: (entryFlags & BRIDGE_VLAN_INFO_PVID) !== 0,
          untagged: (entryFlags & BRIDGE_VLAN_INFO_UNTAGGED) !== 0,
        });
      }
      rangeStart = undefined;
    }
  }
  return { index, vlans };
}

/** Equivalent to `bridge vlan add dev X vid VID [pvid] [untagged] master`. */
export function bridgeVlanAdd(sock: NetlinkSocket, index: number, spec: BridgeVlanSpec): void {
  sock.request(buildBridgeVlanAddRequest(index, spec), `index=${index} vid=${spec.vid}`);
}

/** Equivalent to `bridge vlan del dev X vid VID master`. */
export function bridgeVlanDel(sock: NetlinkSocket, index: number, spec: BridgeVlanSpec): void {
  sock.request(buildBridgeVlanDelRequest(index, spec), `index=${index} vid=${spec.vid}`);
}

/** Equivalent to `bridge vlan show`: ifindex → its VLAN entries (ports without entries are omitted). */
export function bridgeVlanList(sock: NetlinkSocket): Map<number, BridgeVlanEntry[]> {
  const out = new Map<number, BridgeVlanEntry[]>();
  for (const m of sock.request(buildBridgeVlanDumpRequest(), "bridge vlan dump")) {
    if (m.type !== RTM_NEWLINK) continue;
    const { index, vlans } = parseBridgeVlanLink(m.payload);
    if (vlans.length > 0) out.set(index, [...(out.get(index) ?? []), ...vlans]);
  }
  return out;
}
