import { describe, expect, test } from "bun:test";
import {
  formatChainName,
  formatChainNameWithPrefix,
  formatComment,
  formatHashWithPrefix,
  hashPrefix,
  masqInstanceComment,
  masqInstanceHash,
  parseComment,
} from "./naming.ts";

describe("chain names (upstream pkg/utils tests)", () => {
  test("short and long names", () => {
    expect(formatChainName("test", "1234")).toBe("CNI-2bbe0c48b91a7d1b8a6753a8");
    expect(formatChainName("testalongnamethatdoesnotmakesense", "1234")).toBe("CNI-374f33fe84ab0ed84dcdebe3");
    expect(formatChainName("testalongnamethatdoesnotmakesense", "1235")).not.toBe("CNI-374f33fe84ab0ed84dcdebe3");
    expect(formatChainName("testbr", "ctr1")).toBe("CNI-9841daee412d46fd9f4b3874");
  });
  test("with a prefix", () => {
    expect(formatChainNameWithPrefix("PREFIX-", "test", "1234")).toBe("CNI-PREFIX-2bbe0c48b91a7d1b8");
    expect(formatChainNameWithPrefix("PREFIX-", "testalongnamethatdoesnotmakesense", "1234")).toBe("CNI-PREFIX-374f33fe84ab0ed84");
    expect(() => formatChainNameWithPrefix("PREFIX-".repeat(4), "test", "1234")).toThrow("invalid length");
  });
  test("hash with prefix", () => {
    expect(formatHashWithPrefix(10, "AAA", "some string")).toHaveLength(10);
    expect(formatHashWithPrefix(10, "AAA", "some string").startsWith("AAA")).toBe(true);
    expect(() => formatHashWithPrefix(3, "AAA", "x")).toThrow("invalid length");
    expect(() => formatHashWithPrefix(0, "", "x")).toThrow("invalid length");
    expect(() => formatHashWithPrefix(129, "", "x")).toThrow("invalid length");
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) seen.add(formatHashWithPrefix(8, "", `string ${i}`));
    expect(seen.size).toBe(1000);
    expect(hashPrefix("", 8)).toBe("cf83e135");
  });
});

describe("comments", () => {
  test("iptables comment uses Go %q", () => {
    expect(formatComment("testbr", "ctr1")).toBe('name: "testbr" id: "ctr1"');
    expect(formatComment('a"b\\c', "x\ty\u0001\u00a0é")).toBe('name: "a\\"b\\\\c" id: "x\\ty\\x01\\u00a0é"');
  });
  test("parseComment reads back what formatComment wrote, and nothing else", () => {
    for (const [name, id] of [["testbr", "ctr1"], ['a"b\\c', "x\ty\u0001\u00a0é"], ["n", "😀\u200b\U0010ffff"], ["", ""]] as const) {
      expect(parseComment(formatComment(name, id))).toEqual({ name, id });
    }
    expect(parseComment('dnat name: "n" id: "c"')).toBeUndefined();
    expect(parseComment('name: "n" id: "c" extra')).toBeUndefined();
    expect(parseComment('name: "a"b" id: "c"')).toBeUndefined();
  });
  test("nftables instance comment (upstream ipmasq test values)", () => {
    expect(masqInstanceHash("unit-test", "eth0", "one")).toBe("6fd94d501e58f0aa-287fc69eff0574a2");
    expect(masqInstanceComment("alternate", "net1", "three")).toBe("82783ef24bdc7036-acb19d111858e348, net: alternate, if: net1, id: three");
    const long = masqInstanceComment("n".repeat(200), "eth0", "c");
    expect(long).toHaveLength(128);
    expect(masqInstanceComment('q"uote', "eth0", "c")).toContain("net: quote,");
  });
});
