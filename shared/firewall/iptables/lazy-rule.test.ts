import { describe, expect, test } from "bun:test";
import { IptablesPlanError, IptablesTransaction, type IptRule } from "./chain.ts";
import { LazyRule, type ChainListing } from "./lazy-rule.ts";
import { chainNeedle, needleOf } from "./rule.ts";
import type { IptablesDriver } from "./driver.ts";
import { tokenize } from "./save-format.ts";
import { transactIptables } from "./transact.ts";

/** A chain of `n` pods' rules (each rule's bytes: its text plus its addresses' bytes, as the kernel keeps them), counting decodes. */
function bigChain(n: number, extra: IptRule[] = [], undecodable: (r: IptRule) => boolean = () => false): { rules: LazyRule[]; decodes: () => number } {
  let decodes = 0;
  const lazy = (r: IptRule): LazyRule => {
    const addrs = r.flatMap((t) => (/^\d+\.\d+\.\d+\.\d+\/32$/.test(t) ? t.slice(0, -3).split(".").map(Number) : []));
    const bytes = new Uint8Array([...new TextEncoder().encode(r.join(" ")), ...addrs]);
    return new LazyRule(bytes, () => {
      decodes++;
      return undecodable(r) ? undefined : r;
    });
  };
  const rules: LazyRule[] = [];
  for (let i = 0; i < n; i++) {
    rules.push(lazy(["-d", `10.77.${i >> 8}.${i & 255}/32`, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"]));
    rules.push(lazy(["-s", `10.77.${i >> 8}.${i & 255}/32`, "-m", "comment", "--comment", `name: "net" id: "pod${i}"`, "-j", `CNI-POD${i}`]));
  }
  for (const r of extra) rules.push(lazy(r));
  return { rules, decodes: () => decodes };
}

function transaction(chains: Record<string, ChainListing>, exact: Record<string, IptRule[]> = {}): { tx: IptablesTransaction; exactReads: string[] } {
  const exactReads: string[] = [];
  const tx = new IptablesTransaction((_table, chain, wantExact) => {
    if (wantExact === true) {
      exactReads.push(chain);
      return exact[chain];
    }
    return chains[chain];
  });
  return { tx, exactReads };
}

describe("needleOf: what a rule's kernel form certainly contains", () => {
  const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
  test("its comment first, then the user chain it jumps to, then a whole address", () => {
    expect(text(needleOf(["-s", "10.0.0.3/32", "-m", "comment", "--comment", "id: x", "-j", "CNI-abc"]))).toBe("id: x");
    expect(text(needleOf(["-s", "10.0.0.3/32", "-j", "CNI-abc"]))).toBe("CNI-abc");
    expect(needleOf(["-d", "10.0.0.3/32", "-j", "ACCEPT"])).toEqual(new Uint8Array([10, 0, 0, 3]));
    expect(needleOf(["-d", "10.0.0.3", "-j", "ACCEPT"])).toEqual(new Uint8Array([10, 0, 0, 3]));
    expect(needleOf(["-s", "fd00::5/128", "-j", "ACCEPT"])?.byteLength).toBe(16);
  });
  test("none for a rule without one: every rule must be decoded then", () => {
    expect(needleOf(["-s", "10.0.0.0/16", "-j", "ACCEPT"])).toBeUndefined();
    expect(needleOf(["-j", "MASQUERADE"])).toBeUndefined();
    expect(needleOf(["-p", "tcp", "-j", "DNAT"])).toBeUndefined();
  });
});

describe("planning against a chain read lazily", () => {
  test("finding one pod's rules among 500 pods' decodes only the rules that mention them", () => {
    const chain = bigChain(500);
    const { tx } = transaction({ "CNI-FORWARD": chain.rules });
    const p = tx.table("filter");
    p.ensureRule("CNI-FORWARD", ["-s", "10.77.1.7/32", "-m", "comment", "--comment", 'name: "net" id: "pod263"', "-j", "CNI-POD263"], "last");
    p.ensureRule("CNI-FORWARD", ["-d", "10.77.1.7/32", "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"], "last");
    expect(tx.empty).toBe(true);
    expect(chain.decodes()).toBeLessThanOrEqual(3);
    p.ensureRule("CNI-FORWARD", ["-d", "10.78.0.1/32", "-j", "ACCEPT"], "last");
    expect(tx.render()).toBe("*filter\n-A CNI-FORWARD -d 10.78.0.1/32 -j ACCEPT\nCOMMIT\n");
    expect(chain.decodes()).toBeLessThanOrEqual(3);
  });

  test("a rule without a needle is looked for among all rules, decoded", () => {
    const chain = bigChain(50, [["-s", "10.77.0.0/16", "-j", "ACCEPT"]]);
    const { tx } = transaction({ "CNI-FORWARD": chain.rules });
    tx.table("filter").ensureRule("CNI-FORWARD", ["-s", "10.77.0.0/16", "-j", "ACCEPT"], "last");
    expect(tx.empty).toBe(true);
    expect(chain.decodes()).toBe(101);
  });

  test("removing a chain deletes the jumps to it, decoding only the rules that name it, at their positions", () => {
    const post = bigChain(500);
    const { tx } = transaction({ POSTROUTING: post.rules, "CNI-POD42": [["-j", "MASQUERADE"]] });
    tx.table("nat").deleteChain("CNI-POD42", ["POSTROUTING"]);
    expect(tx.render()).toBe(
      `*nat\n-D POSTROUTING -s 10.77.0.42/32 -m comment --comment "name: \\"net\\" id: \\"pod42\\"" -j CNI-POD42\n-F CNI-POD42\n-X CNI-POD42\nCOMMIT\n`,
    );
    // CNI-POD42 is also in CNI-POD420..429: those are decoded and kept.
    expect(post.decodes()).toBe(11);
  });

  test("a rule that may match but cannot be decoded has the chain read again exactly", () => {
    const dnat = bigChain(100, [], (r) => r.includes("CNI-POD7"));
    const mine = tokenize(`-s 10.77.0.7/32 -m comment --comment "name: \\"net\\" id: \\"pod7\\"" -j CNI-POD7`).slice(0);
    const { tx, exactReads } = transaction({ DNAT: dnat.rules }, { DNAT: [mine] });
    const p = tx.table("nat");
    p.ensureRule("DNAT", mine, "last");
    expect(exactReads).toEqual(["DNAT"]);
    expect(tx.empty).toBe(true);
  });

  test("but not once the plan has changed that chain: the plan stops instead of planning on a stale copy", () => {
    const dnat = bigChain(10, [], (r) => r.includes("CNI-POD3"));
    const { tx } = transaction({ DNAT: dnat.rules }, { DNAT: [] });
    const p = tx.table("nat");
    p.ensureRule("DNAT", ["-d", "10.99.0.1/32", "-j", "ACCEPT"], "last");
    expect(() => p.ensureRule("DNAT", ["-j", "CNI-POD3"], "last")).toThrow(IptablesPlanError);
  });

  test("where reads cost no tool run, an optimistic plan looks for a rule with a needle instead of asserting it with -C", () => {
    const masqJump = ["-m", "comment", "--comment", "CNI portfwd requiring masquerade", "-j", "CNI-HOSTPORT-MASQ"];
    const post = bigChain(200, [masqJump]);
    const reads: string[] = [];
    const reader = (_t: string, chain: string) => {
      reads.push(chain);
      return chain === "POSTROUTING" ? post.rules : undefined;
    };
    const cheap = new IptablesTransaction(reader, true, true);
    cheap.table("nat").ensureRule("POSTROUTING", masqJump, "first", true);
    expect(cheap.render()).toBe("");
    expect(reads).toEqual(["POSTROUTING"]);
    expect(post.decodes()).toBe(1);
    // A rule without a needle is looked for among all the rules of a small chain, and asserted in
    // a chain of more than 16 rules or one that cannot be read, as it is where reads run a tool;
    // so is a rule whose look-alikes cannot be decoded (no tool is run to read them).
    const masq = ["-m", "mark", "--mark", "0x2000/0x2000", "-j", "MASQUERADE"];
    const small = bigChain(7, [masq]); // 15 rules
    const big = bigChain(8, [masq]); // 17 rules
    const byName = (_t: string, chain: string) => (chain === "SMALL" ? small.rules : chain === "BIG" ? big.rules : undefined);
    const noNeedle = new IptablesTransaction(byName, true, true);
    noNeedle.table("nat").ensureRule("SMALL", masq, "last", true);
    expect(noNeedle.render()).toBe("");
    expect(small.decodes()).toBe(15);
    noNeedle.table("nat").ensureRule("BIG", masq, "last", true);
    noNeedle.table("nat").ensureRule("PREROUTING", ["-j", "MASQUERADE"], "last", true);
    expect(noNeedle.render()).toBe("*nat\n-C BIG -m mark --mark 0x2000/0x2000 -j MASQUERADE\n-C PREROUTING -j MASQUERADE\nCOMMIT\n");
    expect(big.decodes()).toBe(0);
    const odd = bigChain(3, [["-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"]], (r) => r.includes("addrtype"));
    let exactReads = 0;
    const oddTx = new IptablesTransaction((_t, _c, exact) => (exact === true ? (exactReads++, []) : odd.rules), true, true);
    oddTx.table("nat").ensureRule("OUTPUT", ["-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"], "last", true);
    expect(oddTx.render()).toBe("*nat\n-C OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT\nCOMMIT\n");
    expect(exactReads).toBe(0);
    const costly = new IptablesTransaction(reader, true, false);
    costly.table("nat").ensureRule("POSTROUTING", masqJump, "first", true);
    expect(costly.render()).toBe(`*nat\n-C POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ\nCOMMIT\n`);
    expect(reads).toEqual(["POSTROUTING"]);
  });

  test("a transaction whose plan stops so is planned again with every chain read whole", () => {
    const dnat = bigChain(10, [], (r) => r.includes("CNI-POD3"));
    const exact = dnat.rules.map((r) => [...(r.decode() ?? ["-s", "10.77.0.3/32", "-m", "comment", "--comment", 'name: "net" id: "pod3"', "-j", "CNI-POD3"])]);
    const restored: string[] = [];
    const driver: IptablesDriver = {
      available: () => true,
      listChain: (_f, _t, chain) => (chain === "DNAT" ? exact : undefined),
      listChainLazily: (_f, _t, chain) => (chain === "DNAT" ? bigChain(10, [], (r) => r.includes("CNI-POD3")).rules : undefined),
      readsInKernel: () => true,
      restore: (_f, text) => void restored.push(text),
    };
    transactIptables(driver, 4, (tx) => {
      const p = tx.table("nat");
      p.ensureRule("DNAT", ["-d", "10.99.0.1/32", "-j", "ACCEPT"], "last");
      p.deleteRule("DNAT", ["-s", "10.77.0.3/32", "-m", "comment", "--comment", 'name: "net" id: "pod3"', "-j", "CNI-POD3"]);
    });
    expect(restored).toEqual([`*nat\n-A DNAT -d 10.99.0.1/32 -j ACCEPT\n-D DNAT -s 10.77.0.3/32 -m comment --comment "name: \\"net\\" id: \\"pod3\\"" -j CNI-POD3\nCOMMIT\n`]);
  });

  test("a jump read elsewhere proves a chain exists; an undecodable one is no proof and runs no tool", () => {
    const post = bigChain(20, [["-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-ODD"]], (r) => r.includes("addrtype"));
    const reads: string[] = [];
    const tx = new IptablesTransaction((_t, chain, exact) => {
      reads.push(exact === true ? `exact ${chain}` : chain);
      return chain === "POSTROUTING" ? post.rules : undefined;
    });
    const p = tx.table("nat");
    p.rulesMentioning("POSTROUTING", chainNeedle("CNI-POD3"));
    expect(p.hasChain("CNI-POD3")).toBe(true);
    expect(p.hasChain("CNI-ODD")).toBe(false);
    expect(reads).toEqual(["POSTROUTING", "CNI-ODD"]);
  });

  test("chainNeedle is the chain name's bytes", () => {
    expect(new TextDecoder().decode(chainNeedle("CNI-DN-abc"))).toBe("CNI-DN-abc");
  });
});
