import { describe, expect, test } from "bun:test";
import { KUBE_CHAINS, kubeProxyTables, RULES_PER_CHAIN, sepChainName } from "./kube-table.ts";

describe("kube-proxy-sized tables", () => {
  test("2,000 distinct KUBE-SEP chains of 10 rules, each rule with a comment and a MARK target", () => {
    const text = kubeProxyTables();
    const lines = text.split("\n");
    const sepRules = lines.filter((l) => l.startsWith("-A KUBE-SEP-"));
    expect(KUBE_CHAINS * RULES_PER_CHAIN).toBe(20_000);
    expect(sepRules.length).toBe(20_000);
    for (const r of sepRules) expect(r).toMatch(/ -m comment --comment "[^"]+" -j MARK --set-xmark 0x4000\/0x4000$/);
    const chains = lines.filter((l) => l.startsWith(":KUBE-SEP-"));
    expect(new Set(chains).size).toBe(KUBE_CHAINS);
    expect(new Set(sepRules.map((r) => r.split(" ")[1])).size).toBe(KUBE_CHAINS);
  });

  test("restore syntax: each table committed, chains declared before use, kube-proxy's hint chain in mangle", () => {
    const text = kubeProxyTables(3, 2);
    expect(text.match(/^\*(\w+)$/gm)).toEqual(["*mangle", "*nat"]);
    expect(text.match(/^COMMIT$/gm)?.length).toBe(2);
    expect(text).toContain(":KUBE-IPTABLES-HINT - [0:0]");
    const declared = new Set([...text.matchAll(/^:(\S+) /gm)].map((m) => m[1]));
    for (const m of text.matchAll(/^-A (\S+) .*?(?:-j (\S+))?$/gm)) {
      expect(declared.has(m[1])).toBe(true);
      if (m[2]?.startsWith("KUBE-")) expect(declared.has(m[2])).toBe(true);
    }
  });

  test("chain names look like kube-proxy's (KUBE-SEP- and 16 base32 characters)", () => {
    for (let i = 0; i < 50; i++) expect(sepChainName(i)).toMatch(/^KUBE-SEP-[A-Z2-7]{16}$/);
  });
});
