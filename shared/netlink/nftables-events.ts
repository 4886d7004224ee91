/**
 * nf_tables change notifications, what `nft monitor` reads: a NETLINK_NETFILTER socket that has
 * joined the NFNLGRP_NFTABLES multicast group receives one message per object a committed batch
 * created or deleted — `nft`'s and iptables-nft's changes alike, since iptables-nft's tables are
 * nf_tables tables — followed by NFT_MSG_NEWGEN. A deleted table, chain or rule arrives as
 * NFT_MSG_DELTABLE / DELCHAIN / DELRULE naming its family and table (and chain); `nft flush
 * ruleset` deletes every table (their chains first), `iptables -F` deletes rules.
 *
 * {@link NftEventSocket} only opens the socket: a blocking socket with a receive timeout
 * (SO_RCVTIMEO), so that a reader blocked on it (in a thread of its own, never the caller's:
 * see operator/reload) returns EAGAIN at least that often and can notice it should stop. When the
 * kernel had to drop notifications because the reader was too slow, the read fails with ENOBUFS.
 * {@link parseNftChanges} decodes what was read.
 */
import { AF_NETLINK, SOCK_CLOEXEC, SOCK_RAW, SOL_SOCKET, SO_RCVTIMEO } from "../sys/constants.ts";
import { OwnedFd } from "../sys/fd.ts";
import { bind, setsockoptInt, setsockoptTimeval, socket } from "../sys/libc.ts";
import { netlinkAddress } from "../sys/sockaddr.ts";
import { attrMap, parseMessages, readString } from "./codec.ts";
import { NETLINK_ADD_MEMBERSHIP, SOL_NETLINK } from "./constants/netlink.ts";
import { NETLINK_NETFILTER, NFGENMSG_SIZE, NFNLGRP_NFTABLES, NFNL_SUBSYS_NFTABLES } from "./constants/nfnetlink.ts";
import {
  NFT_MSG_DELCHAIN,
  NFT_MSG_DELRULE,
  NFT_MSG_DELTABLE,
  NFT_MSG_DESTROYCHAIN,
  NFT_MSG_DESTROYRULE,
  NFT_MSG_DESTROYTABLE,
  NFTA_CHAIN_NAME,
  NFTA_CHAIN_TABLE,
  NFTA_RULE_CHAIN,
  NFTA_RULE_TABLE,
  NFTA_TABLE_NAME,
} from "./constants/nf-tables.ts";
import { nftFamilyOf } from "./nftables.ts";
import type { NftFamilyName } from "./constants/nf-tables.ts";

/** A table, chain or rule that a committed batch deleted. */
export interface NftDeletion {
  kind: "table" | "chain" | "rule";
  /** undefined for a family this module does not name. */
  family: NftFamilyName | undefined;
  table: string;
  /** For a chain, and for a rule: the chain it was in. */
  chain?: string;
}

const DELETIONS: Readonly<Record<number, { kind: NftDeletion["kind"]; table: number; chain?: number }>> = {
  [NFT_MSG_DELTABLE]: { kind: "table", table: NFTA_TABLE_NAME },
  [NFT_MSG_DESTROYTABLE]: { kind: "table", table: NFTA_TABLE_NAME },
  [NFT_MSG_DELCHAIN]: { kind: "chain", table: NFTA_CHAIN_TABLE, chain: NFTA_CHAIN_NAME },
  [NFT_MSG_DESTROYCHAIN]: { kind: "chain", table: NFTA_CHAIN_TABLE, chain: NFTA_CHAIN_NAME },
  [NFT_MSG_DELRULE]: { kind: "rule", table: NFTA_RULE_TABLE, chain: NFTA_RULE_CHAIN },
  [NFT_MSG_DESTROYRULE]: { kind: "rule", table: NFTA_RULE_TABLE, chain: NFTA_RULE_CHAIN },
};

/** The deletions in one datagram of notifications (other notifications are skipped). */
export function parseNftChanges(datagram: Uint8Array): NftDeletion[] {
  const out: NftDeletion[] = [];
  for (const m of parseMessages(datagram)) {
    if (m.type >> 8 !== NFNL_SUBSYS_NFTABLES || m.payload.byteLength < NFGENMSG_SIZE) continue;
    const del = DELETIONS[m.type & 0xff];
    if (del === undefined) continue;
    const a = attrMap(m.payload, NFGENMSG_SIZE);
    const table = a.get(del.table);
    if (table === undefined) continue;
    const d: NftDeletion = { kind: del.kind, family: nftFamilyOf(m.payload[0]!), table: readString(table) };
    const chain = del.chain === undefined ? undefined : a.get(del.chain);
    if (chain !== undefined) d.chain = readString(chain);
    out.push(d);
  }
  return out;
}

/** A NETLINK_NETFILTER socket in the calling thread's netns that receives nf_tables notifications (see module doc). */
export class NftEventSocket {
  readonly #file: OwnedFd;

  private constructor(file: OwnedFd) {
    this.#file = file;
  }

  /** Opens it; a blocking read returns EAGAIN after `timeoutMs` without a notification. */
  static open(timeoutMs = 1000): NftEventSocket {
    const file = new OwnedFd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER));
    try {
      bind(file.fd, netlinkAddress());
      setsockoptInt(file.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, NFNLGRP_NFTABLES);
      setsockoptTimeval(file.fd, SOL_SOCKET, SO_RCVTIMEO, timeoutMs);
    } catch (err) {
      file.close();
      throw err;
    }
    return new NftEventSocket(file);
  }

  get fd(): number {
    return this.#file.fd;
  }

  close(): void {
    this.#file.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
