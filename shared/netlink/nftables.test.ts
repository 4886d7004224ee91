import { describe, expect, test } from "bun:test";
import { buildMessage, NlWriter, setSeqPid, toHex } from "./codec.ts";
import { NLM_F_MULTI, NLMSG_DONE, NLMSG_ERROR } from "./constants/netlink.ts";
import { NFNL_MSG_BATCH_BEGIN, NFNL_MSG_BATCH_END } from "./constants/nfnetlink.ts";
import { NFT_MSG_NEWRULE, NFTA_RULE_CHAIN, NFTA_RULE_EXPRESSIONS, NFTA_RULE_HANDLE, NFTA_RULE_TABLE, NFTA_RULE_USERDATA } from "./constants/nf-tables.ts";
import { NetlinkError } from "./errors.ts";
import {
  buildBatchDelimiter,
  buildDeleteRuleRequest,
  buildGetChainRequest,
  buildGetTableRequest,
  buildRuleDumpRequest,
  commentFromUserdata,
  isNftablesMissing,
  jumpTarget,
  nftDeleteRulesWhere,
  nftRuleList,
  nftRules,
  nftRulesDelete,
  parseExpressions,
  parseRuleRef,
} from "./nftables.ts";
import { NetlinkSocket } from "./socket.ts";
import { fakeKernel } from "./testing.ts";
import { SyscallError } from "../sys/errno.ts";

// Expected bytes: what nft 1.0.6 sends for `nft list chain inet t c`, `nft delete rule inet t c
// handle 2` (strace -e sendto,sendmsg -xx), with seq/pid 0 (nft dumps a whole table's rules, so the
// one-chain dump is checked field by field); ours add NLM_F_ACK to the DELRULE so
// that each deletion is answered.
describe("request builders (nft's bytes)", () => {
  test("GETTABLE inet t: REQUEST|ACK, nfgenmsg NFPROTO_INET, NFTA_TABLE_NAME", () => {
    expect(toHex(buildGetTableRequest("inet", "t"))).toBe("1c000000010a0500" + "0000000000000000" + "01000000" + "0600010074000000");
  });
  test("GETCHAIN inet t c: NFTA_CHAIN_TABLE then NFTA_CHAIN_NAME", () => {
    expect(toHex(buildGetChainRequest("inet", "t", "c"))).toBe("24000000040a0500" + "0000000000000000" + "01000000" + "0600010074000000" + "0600030063000000");
  });
  test("DELRULE inet t c handle 2: table, chain, big-endian u64 handle", () => {
    expect(toHex(buildDeleteRuleRequest("inet", "t", { chain: "c", handle: 2 }))).toBe(
      "30000000080a0500" + "0000000000000000" + "01000000" + "0600010074000000" + "0600020063000000" + "0c0003000000000000000002",
    );
  });
  test("batch delimiters carry res_id NFNL_SUBSYS_NFTABLES in network order", () => {
    expect(toHex(buildBatchDelimiter(NFNL_MSG_BATCH_BEGIN))).toBe("14000000100001000000000000000000" + "0000000a");
    expect(toHex(buildBatchDelimiter(NFNL_MSG_BATCH_END))).toBe("14000000110001000000000000000000" + "0000000a");
  });
  test("rule dump of one chain: GETRULE, REQUEST|DUMP, ip6 family, table and chain as filters", () => {
    expect(toHex(buildRuleDumpRequest("ip6", "nat", "POSTROUTING"))).toBe(
      "2c000000070a0103" + "0000000000000000" + "0a000000" + "080001006e617400" + "10000200504f5354524f5554494e4700",
    );
  });
});

/** An NFT_MSG_NEWRULE payload as the kernel dumps it (nfgenmsg, then attributes). */
function rulePayload(family: number, table: string, chain: string, handle: number, udata?: Uint8Array, exprs?: Uint8Array): (w: NlWriter) => void {
  return (w) => {
    w.u8(family).u8(0).u8(0).u8(0);
    w.attrString(NFTA_RULE_TABLE, table);
    w.attrString(NFTA_RULE_CHAIN, chain);
    const h = new Uint8Array(8);
    new DataView(h.buffer).setBigUint64(0, BigInt(handle), false);
    w.attr(NFTA_RULE_HANDLE, h);
    if (exprs !== undefined) w.attr(NFTA_RULE_EXPRESSIONS, exprs);
    if (udata !== undefined) w.attr(NFTA_RULE_USERDATA, udata);
  };
}
const tlv = (type: number, text: string) => Uint8Array.of(type, text.length + 1, ...new TextEncoder().encode(text), 0);

/** NFTA_RULE_EXPRESSIONS with a `payload` expression and an `immediate` verdict (code, chain). */
function expressions(code: number, chain?: string, dreg = 0): Uint8Array {
  const w = new NlWriter();
  w.nest(1, (l) => {
    l.attrString(1, "payload");
    l.nest(2, (d) => d.attr(1, Uint8Array.of(0, 0, 0, 1)), 0x8000);
  }, 0x8000);
  w.nest(1, (l) => {
    l.attrString(1, "immediate");
    l.nest(2, (d) => {
      d.attr(1, Uint8Array.of(0, 0, 0, dreg));
      d.nest(2, (v) => v.nest(2, (x) => {
        const c = new Uint8Array(4);
        new DataView(c.buffer).setInt32(0, code, false);
        x.attr(1, c);
        if (chain !== undefined) x.attrString(2, chain);
      }, 0x8000), 0x8000);
    }, 0x8000);
  }, 0x8000);
  return w.toBytes();
}

describe("rule decoding", () => {
  test("the chain of an immediate jump or goto verdict; none for accept or a data register", () => {
    expect(jumpTarget(parseExpressions(expressions(-3, "CNI-abc")))).toBe("CNI-abc");
    expect(jumpTarget(parseExpressions(expressions(-4, "CNI-DN-1")))).toBe("CNI-DN-1");
    expect(jumpTarget(parseExpressions(expressions(1)))).toBeUndefined(); // NF_ACCEPT
    expect(jumpTarget(parseExpressions(expressions(-3, "CNI-abc", 1)))).toBeUndefined();
  });
  test("comment TLV found among other user-data TLVs", () => {
    expect(commentFromUserdata(Uint8Array.of(...tlv(1, "policy"), ...tlv(0, "name: x id: y")))).toBe("name: x id: y");
    expect(commentFromUserdata(tlv(1, "no comment here"))).toBeUndefined();
    expect(commentFromUserdata(Uint8Array.of(0, 40, 65))).toBe("A"); // a truncated TLV is read as far as it goes
  });
  test("a dumped rule gives table, chain, handle and comment", () => {
    const m = buildMessage((10 << 8) | NFT_MSG_NEWRULE, 0, rulePayload(1, "cni_plugins_masquerade", "masq_checks", 2 ** 40 + 7, tlv(0, "abc")));
    expect(parseRuleRef(m.subarray(16))).toEqual({ table: "cni_plugins_masquerade", chain: "masq_checks", handle: 2 ** 40 + 7, comment: "abc" });
  });
  test("a rule without handle is skipped", () => {
    const m = buildMessage((10 << 8) | NFT_MSG_NEWRULE, 0, (w) => {
      w.u8(1).u8(0).u8(0).u8(0);
      w.attrString(NFTA_RULE_TABLE, "t");
      w.attrString(NFTA_RULE_CHAIN, "c");
    });
    expect(parseRuleRef(m.subarray(16))).toBeUndefined();
  });
});

// ---- the socket exchanges, against a fake kernel ----------------------------------------------

const PORT = 77;

function reply(type: number, flags: number, seq: number, fill: (w: NlWriter) => void): Uint8Array {
  const m = buildMessage(type, flags, fill);
  setSeqPid(m, seq, PORT);
  return m;
}
const ack = (seq: number, errno = 0) => reply(NLMSG_ERROR, 0x100, seq, (w) => w.i32(-errno).u32(16).u16(0).u16(0).u32(seq).u32(PORT));
const cat = (parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));

describe("nftRuleList", () => {
  test("keeps only the rules of the asked family, table and chain, in order", () => {
    const k = fakeKernel(PORT, ([req]) => [
      cat([
        reply((10 << 8) | NFT_MSG_NEWRULE, NLM_F_MULTI, req!.seq, rulePayload(1, "t", "c", 4, tlv(0, "x"))),
        reply((10 << 8) | NFT_MSG_NEWRULE, NLM_F_MULTI, req!.seq, rulePayload(1, "t", "other", 5)),
        reply((10 << 8) | NFT_MSG_NEWRULE, NLM_F_MULTI, req!.seq, rulePayload(2, "t", "c", 6)),
        reply((10 << 8) | NFT_MSG_NEWRULE, NLM_F_MULTI, req!.seq, rulePayload(1, "t", "c", 9)),
      ]),
      reply(NLMSG_DONE, NLM_F_MULTI, req!.seq, (w) => w.i32(0)),
    ]);
    expect(nftRuleList(NetlinkSocket.overTransport(k), "inet", "t", "c")).toEqual([
      { chain: "c", handle: 4, comment: "x" },
      { chain: "c", handle: 9 },
    ]);
  });
});

describe("nftRulesDelete", () => {
  const rules = [
    { chain: "c", handle: 3 },
    { chain: "c", handle: 4 },
    { chain: "c", handle: 5 },
  ];
  test("one batch BEGIN, a DELRULE per rule, END; all acknowledged", () => {
    const k = fakeKernel(PORT, (sent) => [cat(sent.slice(1, -1).map((m) => ack(m.seq)))]);
    expect(nftRulesDelete(NetlinkSocket.overTransport(k), "inet", "t", rules)).toBe(3);
    expect(k.sent.map((b) => b.map((m) => m.type))).toEqual([[NFNL_MSG_BATCH_BEGIN, 0x0a08, 0x0a08, 0x0a08, NFNL_MSG_BATCH_END]]);
  });
  test("a rule already gone aborts the batch; it is sent again without that rule", () => {
    const k = fakeKernel(PORT, (sent) => {
      const ops = sent.slice(1, -1);
      return [cat(ops.map((m, i) => ack(m.seq, ops.length === 3 && i === 1 ? 2 /* ENOENT */ : 0)))];
    });
    expect(nftRulesDelete(NetlinkSocket.overTransport(k), "inet", "t", rules)).toBe(2);
    expect(k.sent.map((b) => b.length)).toEqual([5, 4]);
  });
  test("every rule gone: nothing deleted, no error", () => {
    const k = fakeKernel(PORT, (sent) => [cat(sent.slice(1, -1).map((m) => ack(m.seq, 2)))]);
    expect(nftRulesDelete(NetlinkSocket.overTransport(k), "inet", "t", rules)).toBe(0);
  });
  test("another refusal throws, naming the rule", () => {
    const k = fakeKernel(PORT, (sent) => [cat(sent.slice(1, -1).map((m, i) => ack(m.seq, i === 2 ? 16 /* EBUSY */ : 0)))]);
    expect(() => nftRulesDelete(NetlinkSocket.overTransport(k), "inet", "t", rules)).toThrow("NFT_MSG_DELRULE inet t c handle 5: device or resource busy (EBUSY)");
  });
  test("a refused batch (error on BEGIN) throws, and counts as nf_tables missing when it is EOPNOTSUPP", () => {
    const k = fakeKernel(PORT, (sent) => [ack(sent[0]!.seq, 95)]);
    let err: unknown;
    try {
      nftRulesDelete(NetlinkSocket.overTransport(k), "inet", "t", rules);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NetlinkError);
    expect(isNftablesMissing(err)).toBe(true);
  });
  test("nothing to delete sends nothing", () => {
    const k = fakeKernel(PORT, () => []);
    expect(nftRulesDelete(NetlinkSocket.overTransport(k), "inet", "t", [])).toBe(0);
    expect(k.sent).toEqual([]);
  });
});

describe("nftDeleteRulesWhere", () => {
  /** The chain `ip filter c`: handles 4 (jump CNI-abc), 5 (accept), 6 (jump CNI-def), then the end of the dump. */
  const dump = (seq: number) => [
    cat([
      reply((10 << 8) | NFT_MSG_NEWRULE, NLM_F_MULTI, seq, rulePayload(2, "filter", "c", 4, undefined, expressions(-3, "CNI-abc"))),
      reply((10 << 8) | NFT_MSG_NEWRULE, NLM_F_MULTI, seq, rulePayload(2, "filter", "c", 5, undefined, expressions(1))),
      reply((10 << 8) | NFT_MSG_NEWRULE, NLM_F_MULTI, seq, rulePayload(2, "filter", "c", 6, undefined, expressions(-3, "CNI-def"))),
    ]),
    reply(NLMSG_DONE, NLM_F_MULTI, seq, (w) => w.i32(0)),
  ];
  /** Answers the dump, then acknowledges every operation of a batch. */
  const kernel = () => fakeKernel(PORT, (sent) => (sent.length === 1 ? dump(sent[0]!.seq) : [cat(sent.slice(1, -1).map((m) => ack(m.seq)))]));
  const handlesDeleted = (k: ReturnType<typeof kernel>) =>
    k.sent.slice(1).flatMap((b) => b.filter((m) => m.type === 0x0a08).map((m) => Number(new DataView(m.payload.buffer, m.payload.byteOffset + m.payload.byteLength - 8).getBigUint64(0))));

  test("the chain's rules come with their expressions, as the kernel dumped them", () => {
    const rules = nftRules(NetlinkSocket.overTransport(kernel()), "ip", "filter", "c");
    expect(rules.map((r) => [r.handle, r.jump, r.expressions.map((e) => e.name)])).toEqual([
      [4, "CNI-abc", ["payload", "immediate"]],
      [5, undefined, ["payload", "immediate"]],
      [6, "CNI-def", ["payload", "immediate"]],
    ]);
  });

  test("one dump of the chain, then ONE batch deleting exactly the rules taken", () => {
    const k = kernel();
    expect(nftDeleteRulesWhere(NetlinkSocket.overTransport(k), "ip", "filter", "c", (r) => r.jump !== undefined)).toBe(2);
    expect(k.sent.map((b) => b.map((m) => m.type))).toEqual([[0x0a07], [NFNL_MSG_BATCH_BEGIN, 0x0a08, 0x0a08, NFNL_MSG_BATCH_END]]);
    expect(handlesDeleted(k)).toEqual([4, 6]);
  });

  test("a rule it cannot tell about: nothing is deleted (no batch), undefined", () => {
    const k = kernel();
    expect(nftDeleteRulesWhere(NetlinkSocket.overTransport(k), "ip", "filter", "c", (r) => (r.handle === 5 ? undefined : true))).toBeUndefined();
    expect(k.sent).toHaveLength(1);
  });

  test("nothing taken, or an empty chain: no batch, 0", () => {
    const k = kernel();
    expect(nftDeleteRulesWhere(NetlinkSocket.overTransport(k), "ip", "filter", "c", () => false)).toBe(0);
    expect(k.sent).toHaveLength(1);
    const empty = fakeKernel(PORT, ([req]) => [reply(NLMSG_DONE, NLM_F_MULTI, req!.seq, (w) => w.i32(0))]);
    expect(nftDeleteRulesWhere(NetlinkSocket.overTransport(empty), "ip", "filter", "missing", () => true)).toBe(0);
    expect(empty.sent).toHaveLength(1);
  });
});

test("isNftablesMissing: EINVAL only when it answers a GET", () => {
  expect(isNftablesMissing(new NetlinkError((10 << 8) | 4, 22))).toBe(true);
  expect(isNftablesMissing(new NetlinkError((10 << 8) | 8, 22))).toBe(false);
  expect(isNftablesMissing(new SyscallError("socket", 93))).toBe(true);
  expect(isNftablesMissing(new NetlinkError((10 << 8) | 4, 2))).toBe(false);
});
