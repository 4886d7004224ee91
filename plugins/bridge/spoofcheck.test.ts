import { describe, expect, test } from "bun:test";
import type { NftDriver } from "../../shared/firewall/nftables/driver.ts";
import type { NftTableState } from "../../shared/firewall/nftables/state.ts";
import { FakeNft } from "../../shared/firewall/nftables/fake.ts";
import { NftTransaction } from "../../shared/firewall/nftables/transaction.ts";
import { checkSpoofCheck, gcSpoofCheck, setupSpoofCheck, SPOOFCHECK_TABLE, spoofCheckNames, teardownSpoofCheck } from "./spoofcheck.ts";

/** Records rendered transactions; serves a fixed table listing. */
function recorder(table: NftTableState | undefined): NftDriver & { scripts: string[] } {
  const scripts: string[] = [];
  return {
    scripts,
    available: () => true,
    run: (tx: NftTransaction) => {
      scripts.push(tx.render());
    },
    listTable: () => table,
    listChain: (_f, _t, chain) => (table?.chains.some((c) => c.name === chain) ? table.rules.filter((r) => r.chain === chain) : undefined),
  };
}

const target = { containerID: "ctr1", ifName: "eth0" };

describe("spoofcheck", () => {
  test("names follow upstream pkg/link/spoofcheck.go", () => {
    expect(spoofCheckNames(target)).toEqual({
      ifaceChain: "cni-br-iface-ctr1-eth0",
      macChain: "cni-br-iface-ctr1-eth0-mac",
      comment: "macspoofchk-ctr1-eth0",
    });
  });

  test("setup is one transaction with upstream's objects", () => {
    const d = recorder(undefined);
    setupSpoofCheck({ ...target, hostVeth: "veth0011aabb", containerMac: "0a:58:0a:01:02:03" }, d);
    expect(d.scripts).toEqual([
      [
        "add table bridge nat",
        "add chain bridge nat PREROUTING { type filter hook prerouting priority -300 ; policy accept ; }",
        "add chain bridge nat cni-br-iface-ctr1-eth0",
        "add chain bridge nat cni-br-iface-ctr1-eth0-mac",
        "flush chain bridge nat cni-br-iface-ctr1-eth0",
        "flush chain bridge nat cni-br-iface-ctr1-eth0-mac",
        'add rule bridge nat PREROUTING iifname "veth0011aabb" jump cni-br-iface-ctr1-eth0 comment "macspoofchk-ctr1-eth0"',
        'add rule bridge nat cni-br-iface-ctr1-eth0 jump cni-br-iface-ctr1-eth0-mac comment "macspoofchk-ctr1-eth0"',
        'add rule bridge nat cni-br-iface-ctr1-eth0-mac ether saddr 0a:58:0a:01:02:03 return comment "macspoofchk-ctr1-eth0"',
        'add rule bridge nat cni-br-iface-ctr1-eth0-mac drop comment "macspoofchk-ctr1-eth0"',
        "",
      ].join("\n"),
    ]);
  });

  const live: NftTableState = {
    family: "bridge",
    name: "nat",
    chains: [{ name: "PREROUTING" }, { name: "cni-br-iface-ctr1-eth0" }, { name: "cni-br-iface-ctr1-eth0-mac" }, { name: "cni-br-iface-other-eth0" }],
    rules: [
      { chain: "PREROUTING", handle: 4, rule: 'iifname "veth1" jump cni-br-iface-ctr1-eth0', comment: "macspoofchk-ctr1-eth0" },
      { chain: "PREROUTING", handle: 5, rule: 'iifname "veth2" jump cni-br-iface-other-eth0', comment: "macspoofchk-other-eth0" },
    ],
    sets: [],
    raw: [],
  };

  test("a repeated setup replaces the attachment's PREROUTING jump", () => {
    const d = recorder(live);
    setupSpoofCheck({ ...target, hostVeth: "veth1", containerMac: "0a:58:0a:01:02:03" }, d);
    expect(d.scripts[0]!.split("\n")[0]).toBe("delete rule bridge nat PREROUTING handle 4");
    expect(d.scripts[0]).not.toContain("handle 5");
  });

  test("teardown deletes only this attachment's rules and chains", () => {
    const d = recorder(live);
    teardownSpoofCheck(target, d);
    expect(d.scripts).toEqual([
      [
        "delete rule bridge nat PREROUTING handle 4",
        "flush chain bridge nat cni-br-iface-ctr1-eth0",
        "delete chain bridge nat cni-br-iface-ctr1-eth0",
        "flush chain bridge nat cni-br-iface-ctr1-eth0-mac",
        "delete chain bridge nat cni-br-iface-ctr1-eth0-mac",
        "",
      ].join("\n"),
    ]);
  });

  test("teardown without the table does nothing", () => {
    const d = recorder(undefined);
    teardownSpoofCheck(target, d);
    expect(d.scripts).toEqual([]);
  });
});

describe("spoofcheck GC", () => {
  test("collects the stale attachments on the owned veths; valid, foreign and non-CNI objects stay byte-identical", () => {
    const nft = new FakeNft();
    const put = (containerID: string, ifName: string, hostVeth: string): void =>
      setupSpoofCheck({ containerID, ifName, hostVeth, containerMac: "0a:58:0a:01:02:03" }, nft);
    put("keep", "eth0", "vethkeep");
    put("stale", "eth0", "vethstale");
    put("stale", "net1", "vethgone");
    put("otherbr", "eth0", "vethother");
    put("keep", "net1", "vethkeep2");
    const foreign = new NftTransaction("bridge", SPOOFCHECK_TABLE).addChain({ name: "mine" }).addRule({ chain: "mine", rule: "drop", comment: "macspoofchk-x-eth0" });
    nft.run(foreign);
    const before = nft.dump();
    const ports = new Map([["vethkeep", "br0"], ["vethstale", "br0"], ["vethother", "br1"], ["vethkeep2", "br1"]]);
    const owned = (veth: string): boolean => (ports.get(veth) ?? "br0") === "br0";
    gcSpoofCheck([{ containerID: "keep", ifName: "eth0" }], owned, nft);
    const gone = ["stale-eth0", "stale-net1"];
    const expected = before.split("\n").filter((l) => !gone.some((id) => l.includes(`cni-br-iface-${id}`) || l.includes(`macspoofchk-${id}`))).join("\n");
    expect(nft.dump()).toBe(expected);
    expect(nft.dump()).toContain("cni-br-iface-otherbr-eth0");
    expect(nft.dump()).toContain("cni-br-iface-keep-net1");
    expect(nft.dump()).toContain('chain bridge nat mine');
    const n = nft.transactions.length;
    gcSpoofCheck([{ containerID: "keep", ifName: "eth0" }], owned, nft);
    expect(nft.transactions.length).toBe(n);
    gcSpoofCheck([], () => true, new FakeNft());
  });
});

describe("spoofcheck check (cni-plugins reload)", () => {
  const s = { ...target, hostVeth: "veth0011aabb", containerMac: "0a:58:0a:01:02:03" };
  test("nothing missing after setup; each missing rule and the table are named", () => {
    const nft = new FakeNft();
    expect(checkSpoofCheck(s, nft)).toEqual(["nftables table bridge nat not found"]);
    setupSpoofCheck(s, nft);
    expect(checkSpoofCheck(s, nft)).toEqual([]);
    const drop = nft.listTable("bridge", SPOOFCHECK_TABLE)!.rules.find((r) => r.chain === "cni-br-iface-ctr1-eth0-mac" && r.rule.trim() === "drop")!;
    nft.run(new NftTransaction("bridge", SPOOFCHECK_TABLE).deleteRule("cni-br-iface-ctr1-eth0-mac", drop.handle));
    expect(checkSpoofCheck(s, nft)).toEqual(['nftables chain bridge nat cni-br-iface-ctr1-eth0-mac lacks rule: drop comment "macspoofchk-ctr1-eth0"']);
    setupSpoofCheck(s, nft);
    expect(checkSpoofCheck(s, nft)).toEqual([]);
    expect(checkSpoofCheck({ ...s, containerMac: "0a:58:0a:01:02:04" }, nft)).toEqual([
      'nftables chain bridge nat cni-br-iface-ctr1-eth0-mac lacks rule: ether saddr 0a:58:0a:01:02:04 return comment "macspoofchk-ctr1-eth0"',
    ]);
  });
});
