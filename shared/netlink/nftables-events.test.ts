import { describe, expect, test } from "bun:test";
import { buildMessage } from "./codec.ts";
import { NFPROTO_BRIDGE, NFPROTO_INET, NFPROTO_IPV4, NFT_MSG_DELCHAIN, NFT_MSG_DELRULE, NFT_MSG_DELTABLE, NFT_MSG_DESTROYTABLE, NFT_MSG_NEWGEN, NFT_MSG_NEWRULE } from "./constants/nf-tables.ts";
import { parseNftChanges } from "./nftables-events.ts";

/** A notification as the kernel sends it: nfgenmsg (family, version 0, res_id), then attributes. */
function event(cmd: number, family: number, attrs: [number, string][]): Uint8Array {
  return buildMessage((10 << 8) | cmd, 0, (w) => {
    w.u8(family).u8(0).u8(0).u8(0);
    for (const [type, value] of attrs) w.attrString(type, value);
  });
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

describe("nf_tables notifications", () => {
  test("deleted tables, chains and rules are decoded; additions and generation markers are not", () => {
    const datagram = concat(
      event(NFT_MSG_DELRULE, NFPROTO_IPV4, [[1, "nat"], [2, "POSTROUTING"]]),
      event(NFT_MSG_NEWRULE, NFPROTO_IPV4, [[1, "nat"], [2, "POSTROUTING"]]),
      event(NFT_MSG_DELCHAIN, NFPROTO_BRIDGE, [[1, "nat"], [3, "PREROUTING"]]),
      event(NFT_MSG_DELTABLE, NFPROTO_INET, [[1, "cni_plugins_masquerade"]]),
      event(NFT_MSG_DESTROYTABLE, NFPROTO_INET, [[1, "cni_plugins_firewall"]]),
      event(NFT_MSG_DELTABLE, 99, [[1, "odd"]]),
      buildMessage((10 << 8) | NFT_MSG_NEWGEN, 0, (w) => w.u8(0).u8(0).u8(0).u8(0)),
    );
    expect(parseNftChanges(datagram)).toEqual([
      { kind: "rule", family: "ip", table: "nat", chain: "POSTROUTING" },
      { kind: "chain", family: "bridge", table: "nat", chain: "PREROUTING" },
      { kind: "table", family: "inet", table: "cni_plugins_masquerade" },
      { kind: "table", family: "inet", table: "cni_plugins_firewall" },
      { kind: "table", family: undefined, table: "odd" },
    ]);
  });

  test("messages of other subsystems and a deletion without its table are skipped", () => {
    const conntrack = buildMessage((1 << 8) | NFT_MSG_DELTABLE, 0, (w) => w.u8(2).u8(0).u8(0).u8(0).attrString(1, "x"));
    const noTable = event(NFT_MSG_DELRULE, NFPROTO_IPV4, [[2, "POSTROUTING"]]);
    expect(parseNftChanges(concat(conntrack, noTable))).toEqual([]);
  });
});
