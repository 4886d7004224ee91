import { describe, expect, test } from "bun:test";
import { FakeNft } from "./fake.ts";
import { normalizeRule, tableStateFromJson } from "./state.ts";
import { NftTransaction } from "./transaction.ts";

describe("NftTransaction.render", () => {
  test("golden text for every kind of operation", () => {
    const tx = new NftTransaction("bridge", "nat")
      .addTable()
      .addTable({ comment: "c" })
      .addChain({ name: "PREROUTING", type: "filter", hook: "prerouting", priority: -300, policy: "accept" })
      .addChain({ name: "cni-br-iface-ctr-eth0", comment: "x" })
      .createChain({ name: "c2" })
      .flushChain("cni-br-iface-ctr-eth0")
      .addRule({ chain: "PREROUTING", rule: 'iifname "veth1" jump cni-br-iface-ctr-eth0', comment: "macspoofchk-ctr-eth0" })
      .insertRule({ chain: "c2", rule: "drop" })
      .deleteRule("PREROUTING", 7)
      .addSet({ name: "s", type: "ipv4_addr", flags: ["interval"], comment: "set" })
      .addMap({ name: "m", type: "ipv4_addr", valueType: "verdict" })
      .addElement({ set: "s", key: "10.0.0.0/8", comment: "e" })
      .addElement({ set: "m", key: "10.1.1.1", value: "goto c2" })
      .deleteElement({ set: "s", key: "10.0.0.0/8" })
      .flushSet("s")
      .deleteMap("m")
      .deleteChain("c2")
      .flushTable()
      .deleteTable();
    expect(tx.render()).toBe(`add table bridge nat
add table bridge nat { comment "c" ; }
add chain bridge nat PREROUTING { type filter hook prerouting priority -300 ; policy accept ; }
add chain bridge nat cni-br-iface-ctr-eth0 { comment "x" ; }
create chain bridge nat c2
flush chain bridge nat cni-br-iface-ctr-eth0
add rule bridge nat PREROUTING iifname "veth1" jump cni-br-iface-ctr-eth0 comment "macspoofchk-ctr-eth0"
insert rule bridge nat c2 drop
delete rule bridge nat PREROUTING handle 7
add set bridge nat s { type ipv4_addr ; flags interval ; comment "set" ; }
add map bridge nat m { type ipv4_addr : verdict ; }
add element bridge nat s { 10.0.0.0/8 comment "e" }
add element bridge nat m { 10.1.1.1 : goto c2 }
delete element bridge nat s { 10.0.0.0/8 }
flush set bridge nat s
delete map bridge nat m
delete chain bridge nat c2
flush table bridge nat
delete table bridge nat
`);
  });
  test("rejects what nft cannot express", () => {
    const tx = new NftTransaction("inet", "t");
    expect(() => tx.addRule({ chain: "c", rule: "accept", comment: 'a"b' })).toThrow("quotes");
    expect(() => tx.addChain({ name: "c", type: "nat" })).toThrow("type, hook and priority");
    expect(() => tx.deleteRule("c", 0)).toThrow("handle");
    expect(() => new NftTransaction("inet", "bad name")).toThrow("invalid nft table name");
  });
});

describe("FakeNft", () => {
  test("applies atomically and fails like nft", () => {
    const nft = new FakeNft();
    nft.run(new NftTransaction("inet", "t").addTable().addChain({ name: "a" }).addRule({ chain: "a", rule: "accept", comment: "x" }));
    const before = nft.dump();
    expect(() => nft.run(new NftTransaction("inet", "t").flushChain("a").addRule({ chain: "nope", rule: "drop" }))).toThrow("No such file");
    expect(nft.dump()).toBe(before);
    expect(() => nft.run(new NftTransaction("inet", "t").deleteChain("a"))).toThrow("not empty");
    nft.run(new NftTransaction("inet", "t").addChain({ name: "b" }).addRule({ chain: "b", rule: "jump a" }));
    expect(() => nft.run(new NftTransaction("inet", "t").flushChain("a").deleteChain("a"))).toThrow("referenced");
    expect(() => nft.run(new NftTransaction("inet", "t").deleteRule("a", 99))).toThrow("No such file");
    expect(() => nft.run(new NftTransaction("inet", "other").addChain({ name: "x" }))).toThrow("table");
    const state = nft.listTable("inet", "t")!;
    expect(state.rules.map((r) => [r.chain, r.handle, r.rule, r.comment])).toEqual([
      ["a", 1, "accept", "x"],
      ["b", 2, "jump a", undefined],
    ]);
    expect(nft.listTable("inet", "missing")).toBeUndefined();
  });
  test("dump is canonical: chains, sets, maps by name, then rules, then elements", () => {
    const nft = new FakeNft();
    nft.run(
      new NftTransaction("ip", "z")
        .addTable()
        .addChain({ name: "zz" })
        .addChain({ name: "aa", type: "nat", hook: "prerouting", priority: -100 })
        .addMap({ name: "m", type: "ipv4_addr", valueType: "verdict" })
        .addSet({ name: "s", type: "ipv4_addr" })
        .addRule({ chain: "zz", rule: "drop" })
        .addRule({ chain: "aa", rule: "jump zz" })
        .addElement({ set: "s", key: "1.2.3.4" }),
    );
    expect(nft.dump()).toBe(`add table ip z
add chain ip z aa { type nat hook prerouting priority -100 ; }
add chain ip z zz
add set ip z s { type ipv4_addr ; }
add map ip z m { type ipv4_addr : verdict ; }
add rule ip z aa jump zz
add rule ip z zz drop
add element ip z s { 1.2.3.4 }
`);
  });
});

describe("nft -j listing", () => {
  // Captured from nft 1.0.6 on this host.
  const json = JSON.parse(`{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"table": {"family": "inet", "name": "cni_plugins_masquerade", "handle": 1}}, {"set": {"family": "inet", "name": "s1", "table": "cni_plugins_masquerade", "type": "ipv4_addr", "handle": 8, "comment": "c", "flags": ["interval"], "elem": [{"prefix": {"addr": "10.0.0.0", "len": 8}}]}}, {"map": {"family": "inet", "name": "m1", "table": "cni_plugins_masquerade", "type": "ipv4_addr", "handle": 9, "map": "verdict", "elem": [["10.1.1.1", {"goto": {"target": "masq_checks"}}]]}}, {"chain": {"family": "inet", "table": "cni_plugins_masquerade", "name": "masq_checks", "handle": 1}}, {"chain": {"family": "inet", "table": "cni_plugins_masquerade", "name": "postrouting", "handle": 2, "type": "nat", "hook": "postrouting", "prio": 100, "policy": "accept"}}, {"rule": {"family": "inet", "table": "cni_plugins_masquerade", "chain": "masq_checks", "handle": 6, "comment": "abc, net: x", "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": "10.0.0.2"}}, {"match": {"op": "!=", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": {"prefix": {"addr": "10.0.0.0", "len": 24}}}}, {"masquerade": null}]}}, {"rule": {"family": "inet", "table": "cni_plugins_masquerade", "chain": "masq_checks", "handle": 7, "comment": "abd, net: x", "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip6", "field": "saddr"}}, "right": "fd00::2"}}, {"match": {"op": "!=", "left": {"payload": {"protocol": "ip6", "field": "daddr"}}, "right": {"prefix": {"addr": "fd00::", "len": 64}}}}, {"masquerade": null}]}}, {"rule": {"family": "inet", "table": "cni_plugins_masquerade", "chain": "postrouting", "handle": 3, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": {"prefix": {"addr": "224.0.0.0", "len": 4}}}}, {"return": null}]}}, {"rule": {"family": "inet", "table": "cni_plugins_masquerade", "chain": "postrouting", "handle": 5, "expr": [{"goto": {"target": "masq_checks"}}]}}, {"rule": {"family": "bridge", "table": "nat", "chain": "PREROUTING", "handle": 3, "comment": "x", "expr": [{"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "veth1"}}, {"jump": {"target": "masq2"}}]}}]}`);
  test("normalises chains, rules (rendered back to nft syntax), sets and maps", () => {
    const s = tableStateFromJson("inet", "cni_plugins_masquerade", json.nftables);
    expect(s.chains).toEqual([
      { name: "masq_checks", handle: 1 },
      { name: "postrouting", handle: 2, type: "nat", hook: "postrouting", priority: 100, policy: "accept" },
    ]);
    expect(s.rules.map((r) => [r.chain, r.handle, r.rule, r.comment])).toEqual([
      ["masq_checks", 6, "ip saddr == 10.0.0.2 ip daddr != 10.0.0.0/24 masquerade", "abc, net: x"],
      ["masq_checks", 7, "ip6 saddr == fd00::2 ip6 daddr != fd00::/64 masquerade", "abd, net: x"],
      ["postrouting", 3, "ip daddr == 224.0.0.0/4 return", undefined],
      ["postrouting", 5, "goto masq_checks", undefined],
    ]);
    expect(s.sets).toEqual([
      { name: "s1", kind: "set", type: "ipv4_addr", flags: ["interval"], comment: "c", elements: ["10.0.0.0/8"] },
      { name: "m1", kind: "map", type: "ipv4_addr", flags: [], elements: ["10.1.1.1 : goto masq_checks"] },
    ]);
    const b = tableStateFromJson("bridge", "nat", json.nftables);
    expect(b.rules[0]!.rule).toBe('iifname == "veth1" jump masq2');
    expect(normalizeRule("ip daddr == 224.0.0.0/4  return")).toBe(s.rules[2]!.rule);
  });
});
