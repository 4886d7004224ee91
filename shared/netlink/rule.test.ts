/**
 * Rules: request bytes against what iproute2 sent for the same commands (captured with
 * `strace -e trace=sendmsg -e write=3`, iproute2 6.x; nlmsg_seq/pid ignored), decoding, and
 * (root only) add/list/delete in a throwaway netns checked with `ip -j rule`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { QEMU_USER_LACKS } from "../../test/harness/aarch64-emulation.ts";
import { skipWhenEmulated } from "../../test/harness/arch.ts";
import { createScratchNetns, runIn, skipUnlessRoot, type ScratchNetns } from "../netns/testing.ts";
import { fromHex, toHex } from "./codec.ts";
import { isNotFound } from "./errors.ts";
import { Handle } from "./handle.ts";
import { buildRuleAddRequest, buildRuleDelRequest, buildRuleDumpRequest, parseRule, ruleSpecOf } from "./rule.ts";

const IPROUTE2: Record<string, { command: string; hex: string; ours: () => Uint8Array }> = {
  "rule-add-v4": {
    command: "ip rule add from 10.1.2.3/32 lookup 100",
    hex: "24000000200005062052026b00000000020020006400000100000000080002000a010203",
    ours: () => buildRuleAddRequest({ src: { address: "10.1.2.3", prefixLen: 32 }, table: 100 }),
  },
  "rule-add-v6": {
    command: "ip -6 rule add from fd00::3/128 lookup 101",
    hex: "30000000200005062052026b000000000a008000650000010000000014000200fd000000000000000000000000000003",
    ours: () => buildRuleAddRequest({ src: { address: "fd00::3", prefixLen: 128 }, table: 101 }),
  },
  "rule-add-v4-bigtable": {
    command: "ip rule add from 10.1.2.4/32 lookup 1000",
    hex: "2c000000200005062052026b00000000020020000000000100000000080002000a01020408000f00e8030000",
    ours: () => buildRuleAddRequest({ src: { address: "10.1.2.4", prefixLen: 32 }, table: 1000 }),
  },
  "rule-del-v4": {
    command: "ip rule del from 10.1.2.3/32 lookup 100 pref 32765",
    hex: "2c000000210005002052026b00000000020020006400000000000000080002000a01020308000600fd7f0000",
    ours: () => buildRuleDelRequest({ src: { address: "10.1.2.3", prefixLen: 32 }, table: 100, priority: 32765 }),
  },
  "rule-list-v4": {
    command: "ip rule list",
    hex: "1c000000220001032052026b00000000020000000000000000000000",
    ours: () => buildRuleDumpRequest(4),
  },
};

function withoutSeqPid(b: Uint8Array): string {
  const c = b.slice();
  c.fill(0, 8, 16);
  return toHex(c);
}

describe("rule requests match iproute2", () => {
  for (const [name, c] of Object.entries(IPROUTE2)) {
    test(`${name}: ${c.command}`, () => {
      expect(withoutSeqPid(c.ours())).toBe(withoutSeqPid(fromHex(c.hex)));
    });
  }
  test("a prefix length beyond the family is refused before sending", () => {
    expect(() => buildRuleAddRequest({ src: { address: "10.0.0.1", prefixLen: 33 }, table: 100 })).toThrow(RangeError);
  });
  test("parseRule decodes the request payload shape (header table, FRA_TABLE override, FRA_SRC)", () => {
    const small = parseRule(fromHex(IPROUTE2["rule-add-v4"]!.hex).subarray(16));
    expect(small).toEqual({ family: 4, table: 100, tos: 0, action: 1, flags: 0, src: { address: "10.1.2.3", prefixLen: 32 } });
    const big = parseRule(fromHex(IPROUTE2["rule-add-v4-bigtable"]!.hex).subarray(16));
    expect(big?.table).toBe(1000);
    const v6 = parseRule(fromHex(IPROUTE2["rule-add-v6"]!.hex).subarray(16));
    expect(v6?.src).toEqual({ address: "fd00::3", prefixLen: 128 });
  });
});

const SKIP =
  skipUnlessRoot("netlink rules") ||
  skipWhenEmulated("netlink rules", QEMU_USER_LACKS.rules);

describe.skipIf(SKIP)("rules against the kernel", () => {
  let N: ScratchNetns;
  let h: Handle;
  beforeAll(() => {
    N = createScratchNetns();
    h = Handle.open(N.ns);
  });
  afterAll(() => {
    h?.close();
    N?.[Symbol.dispose]();
  });

  test("add, list (both families) and delete exactly the listed rule", () => {
    h.ruleAdd({ src: { address: "10.9.0.5", prefixLen: 32 }, table: 100 });
    h.ruleAdd({ src: { address: "fd00::5", prefixLen: 128 }, table: 300 });
    const ip4 = JSON.parse(runIn(N, ["ip", "-j", "rule", "list"])) as { src?: string; table: string; priority: number }[];
    expect(ip4.find((r) => r.src === "10.9.0.5")?.table).toBe("100");
    const ip6 = JSON.parse(runIn(N, ["ip", "-j", "-6", "rule", "list"])) as { src?: string; table: string }[];
    expect(ip6.find((r) => r.src === "fd00::5")?.table).toBe("300");

    const all = h.ruleList();
    const mine4 = all.find((r) => r.src?.address === "10.9.0.5");
    const mine6 = all.find((r) => r.src?.address === "fd00::5");
    expect(mine4).toMatchObject({ family: 4, table: 100, action: 1, src: { prefixLen: 32 } });
    expect(mine6).toMatchObject({ family: 6, table: 300 });
    expect(mine4?.priority).toBe(ip4.find((r) => r.src === "10.9.0.5")?.priority);
    expect(h.ruleList(6).every((r) => r.family === 6)).toBe(true);

    h.ruleDel(ruleSpecOf(mine4!));
    h.ruleDel(ruleSpecOf(mine6!));
    expect(h.ruleList().some((r) => r.src !== undefined)).toBe(false);
  });

  test("deleting a rule that does not exist is a not-found error", () => {
    let err: unknown;
    try {
      h.ruleDel({ src: { address: "10.9.9.9", prefixLen: 32 }, table: 100 });
    } catch (e) {
      err = e;
    }
    expect(isNotFound(err)).toBe(true);
  });
});
