/**
 * Conntrack entries over NETLINK_NETFILTER (ctnetlink): list one family's table and delete entries
 * by their original tuple — what `conntrack -L -f ipv4` and `conntrack -D -f ipv4 -p udp
 * --orig-port-dst 53` do, without the `conntrack` binary.
 *
 * Messages are `struct nlmsghdr` with type `NFNL_SUBSYS_CTNETLINK << 8 | IPCTNL_MSG_CT_*`, then a
 * 4-byte `struct nfgenmsg` (family, NFNETLINK_V0, res_id 0), then CTA_* attributes. Addresses and
 * ports inside tuples are in network byte order; nests carry NLA_F_NESTED as the kernel sends them.
 *
 * The socket must be opened in the netns whose table is meant: `openNetlinkSocket(NETLINK_NETFILTER)`
 * (kernel-transport.ts) opens it in the calling thread's.
 */
import { AF_INET, AF_INET6 } from "../sys/constants.ts";
import { attrMap, buildMessage, readBe32, type NlWriter } from "./codec.ts";
import { NLA_F_NESTED, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST } from "./constants/netlink.ts";
import { NFGENMSG_SIZE, NFNETLINK_V0, NFNL_SUBSYS_CTNETLINK } from "./constants/nfnetlink.ts";
import {
  CTA_ID,
  CTA_IP_V4_DST,
  CTA_IP_V4_SRC,
  CTA_IP_V6_DST,
  CTA_IP_V6_SRC,
  CTA_PROTO_DST_PORT,
  CTA_PROTO_NUM,
  CTA_PROTO_SRC_PORT,
  CTA_TUPLE_IP,
  CTA_TUPLE_ORIG,
  CTA_TUPLE_PROTO,
  CTA_ZONE,
  IPCTNL_MSG_CT_DELETE,
  IPCTNL_MSG_CT_GET,
} from "./constants/nfnetlink-conntrack.ts";
import { isNotFound } from "./errors.ts";
import type { NetlinkSocket } from "./socket.ts";

export type ConntrackFamily = 4 | 6;

/** One conntrack entry, as far as its original direction goes. */
export interface ConntrackFlow {
  family: ConntrackFamily;
  /** IP protocol number (IPPROTO_UDP …). */
  proto: number;
  /** Original-direction addresses, network-order bytes (4 or 16). */
  src: Uint8Array;
  dst: Uint8Array;
  /** Original-direction ports (0 for protocols without ports). */
  srcPort: number;
  dstPort: number;
  /** CTA_ID, when the kernel sent it (makes a delete hit exactly this entry). */
  id?: number;
  /** CTA_ZONE, when the kernel sent it. */
  zone?: number;
}

const afOf = (f: ConntrackFamily): number => (f === 6 ? AF_INET6 : AF_INET);
const msgType = (cmd: number): number => (NFNL_SUBSYS_CTNETLINK << 8) | cmd;

function writeNfgenmsg(w: NlWriter, family: ConntrackFamily): void {
  w.u8(afOf(family)).u8(NFNETLINK_V0).u16(0);
}

function be16(v: number): Uint8Array {
  return Uint8Array.of((v >> 8) & 0xff, v & 0xff);
}

function be32(v: number): Uint8Array {
  return Uint8Array.of((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff);
}

function readBe16(b: Uint8Array): number {
  return ((b[0] ?? 0) << 8) | (b[1] ?? 0);
}

/** `conntrack -L -f ipv4|ipv6` request (IPCTNL_MSG_CT_GET, NLM_F_DUMP). */
export function buildConntrackDumpRequest(family: ConntrackFamily): Uint8Array {
  return buildMessage(msgType(IPCTNL_MSG_CT_GET), NLM_F_REQUEST | NLM_F_DUMP, (w) => writeNfgenmsg(w, family));
}

/**
 * `conntrack -D` of one entry (IPCTNL_MSG_CT_DELETE): its original tuple, plus CTA_ID and CTA_ZONE
 * when known.
 */
export function buildConntrackDeleteRequest(flow: ConntrackFlow): Uint8Array {
  return buildMessage(msgType(IPCTNL_MSG_CT_DELETE), NLM_F_REQUEST | NLM_F_ACK, (w) => {
    writeNfgenmsg(w, flow.family);
    w.nest(
      CTA_TUPLE_ORIG,
      () => {
        w.nest(
          CTA_TUPLE_IP,
          () => {
            w.attr(flow.family === 6 ? CTA_IP_V6_SRC : CTA_IP_V4_SRC, flow.src);
            w.attr(flow.family === 6 ? CTA_IP_V6_DST : CTA_IP_V4_DST, flow.dst);
          },
          NLA_F_NESTED,
        );
        w.nest(
          CTA_TUPLE_PROTO,
          () => {
            w.attrU8(CTA_PROTO_NUM, flow.proto);
            if (flow.srcPort !== 0 || flow.dstPort !== 0) {
              w.attr(CTA_PROTO_SRC_PORT, be16(flow.srcPort));
              w.attr(CTA_PROTO_DST_PORT, be16(flow.dstPort));
            }
          },
          NLA_F_NESTED,
        );
      },
      NLA_F_NESTED,
    );
    if (flow.zone !== undefined) w.attr(CTA_ZONE, be16(flow.zone));
    if (flow.id !== undefined) w.attr(CTA_ID, be32(flow.id));
  });
}

/** Decodes one IPCTNL_MSG_CT_NEW payload of a dump; undefined when it has no usable original tuple. */
export function parseConntrackFlow(payload: Uint8Array): ConntrackFlow | undefined {
  if (payload.byteLength < NFGENMSG_SIZE) return undefined;
  const af = payload[0];
  const family: ConntrackFamily | undefined = af === AF_INET ? 4 : af === AF_INET6 ? 6 : undefined;
  if (family === undefined) return undefined;
  const top = attrMap(payload, NFGENMSG_SIZE);
  const orig = top.get(CTA_TUPLE_ORIG);
  if (orig === undefined) return undefined;
  const tuple = attrMap(orig);
  const ipAttrs = tuple.get(CTA_TUPLE_IP);
  const protoAttrs = tuple.get(CTA_TUPLE_PROTO);
  if (ipAttrs === undefined || protoAttrs === undefined) return undefined;
  const ip = attrMap(ipAttrs);
  const src = ip.get(family === 6 ? CTA_IP_V6_SRC : CTA_IP_V4_SRC);
  const dst = ip.get(family === 6 ? CTA_IP_V6_DST : CTA_IP_V4_DST);
  const proto = attrMap(protoAttrs);
  const num = proto.get(CTA_PROTO_NUM);
  if (src === undefined || dst === undefined || num === undefined) return undefined;
  const sport = proto.get(CTA_PROTO_SRC_PORT);
  const dport = proto.get(CTA_PROTO_DST_PORT);
  const flow: ConntrackFlow = {
    family,
    proto: num[0] ?? 0,
    src: src.slice(),
    dst: dst.slice(),
    srcPort: sport ? readBe16(sport) : 0,
    dstPort: dport ? readBe16(dport) : 0,
  };
  const id = top.get(CTA_ID);
  if (id !== undefined && id.byteLength >= 4) flow.id = readBe32(id);
  const zone = top.get(CTA_ZONE);
  if (zone !== undefined && zone.byteLength >= 2) flow.zone = readBe16(zone);
  return flow;
}

/** `conntrack -L -f ipv4|ipv6`: every entry of one family. */
export function conntrackList(sock: NetlinkSocket, family: ConntrackFamily): ConntrackFlow[] {
  const out: ConntrackFlow[] = [];
  for (const m of sock.request(buildConntrackDumpRequest(family), `conntrack dump ipv${family}`)) {
    const f = parseConntrackFlow(m.payload);
    if (f !== undefined && f.family === family) out.push(f);
  }
  return out;
}

/** `conntrack -D` of one entry; false when it was already gone. */
export function conntrackDelete(sock: NetlinkSocket, flow: ConntrackFlow): boolean {
  try {
    sock.request(buildConntrackDeleteRequest(flow), `conntrack delete`);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/**
 * `conntrack -D -f ipv4|ipv6 -p <proto> --orig-port-dst <port>` (upstream
 * `utils.DeleteConntrackEntriesForDstPort`): deletes every entry of `family` whose original
 * protocol and destination port match. Returns how many were deleted.
 */
export function conntrackDeleteByDstPort(sock: NetlinkSocket, family: ConntrackFamily, proto: number, port: number): number {
  let n = 0;
  for (const f of conntrackList(sock, family)) {
    if (f.proto === proto && f.dstPort === port && conntrackDelete(sock, f)) n++;
  }
  return n;
}

