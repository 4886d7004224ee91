import { describe, expect, test } from "bun:test";
import { cachingDrivers } from "./caching-drivers.ts";
import type { IptablesDriver } from "./iptables/driver.ts";
import { FakeIptables } from "./iptables/fake.ts";
import { FakeNft } from "./nftables/fake.ts";
import { NftTransaction } from "./nftables/transaction.ts";

const NAT = `*nat
:CNI-abc - [0:0]
-A POSTROUTING -s 10.0.0.2/32 -m comment --comment "x" -j CNI-abc
-A CNI-abc ! -d 224.0.0.0/4 -j MASQUERADE
COMMIT
`;

describe("caching drivers", () => {
  test("iptables: one save per table and family until a write or forget; chains as listChain answers them", () => {
    const ipt = new FakeIptables();
    ipt.load(4, NAT);
    const d = cachingDrivers({ iptables: ipt, nftables: new FakeNft() });
    expect(d.iptables.listChain(4, "nat", "CNI-abc")).toEqual([["!", "-d", "224.0.0.0/4", "-j", "MASQUERADE"]]);
    expect(d.iptables.listChain(4, "nat", "POSTROUTING")).toEqual([["-s", "10.0.0.2/32", "-m", "comment", "--comment", "x", "-j", "CNI-abc"]]);
    expect(d.iptables.listChain(4, "nat", "PREROUTING")).toEqual([]);
    expect(d.iptables.listChain(4, "nat", "CNI-missing")).toBeUndefined();
    expect(d.iptables.listChain(4, "filter", "FORWARD")).toEqual([]);
    expect(d.iptables.listChain(4, "filter", "CNI-FORWARD")).toBeUndefined();
    expect(ipt.reads).toEqual(["4 nat (save)", "4 filter (save)"]);
    d.iptables.restore(4, "*nat\n-F CNI-abc\nCOMMIT\n");
    expect(d.iptables.listChain(4, "nat", "CNI-abc")).toEqual([]);
    expect(ipt.reads.filter((r) => r === "4 nat (save)").length).toBe(2);
    d.forget();
    d.iptables.listChain(4, "nat", "CNI-abc");
    expect(ipt.reads.filter((r) => r === "4 nat (save)").length).toBe(3);
  });

  test("iptables without saveTable (a driver that cannot): chain by chain", () => {
    const ipt = new FakeIptables();
    ipt.load(4, NAT);
    const base: IptablesDriver = { available: () => true, listChain: (f, t, c) => ipt.listChain(f, t, c), restore: (f, text) => ipt.restore(f, text) };
    const d = cachingDrivers({ iptables: base, nftables: new FakeNft() });
    expect(d.iptables.listChain(4, "nat", "CNI-abc")).toHaveLength(1);
    expect(ipt.reads).toEqual(["4 nat CNI-abc"]);
  });

  test("nftables: one listing per table until a write to it or forget", () => {
    const nft = new FakeNft();
    nft.run(new NftTransaction("inet", "t").addTable().addChain({ name: "c" }).addRule({ chain: "c", rule: "accept", comment: "x" }));
    let listings = 0;
    const list = nft.listTable.bind(nft);
    nft.listTable = (f, t) => {
      listings++;
      return list(f, t);
    };
    const d = cachingDrivers({ iptables: new FakeIptables(), nftables: nft });
    expect(d.nftables.listTable("inet", "t")!.rules.map((r) => r.comment)).toEqual(["x"]);
    expect(d.nftables.listTable("inet", "missing")).toBeUndefined();
    d.nftables.listTable("inet", "t");
    d.nftables.listTable("inet", "missing");
    expect(listings).toBe(2);
    d.nftables.run(new NftTransaction("inet", "t").addRule({ chain: "c", rule: "drop", comment: "y" }));
    expect(d.nftables.listTable("inet", "t")!.rules.map((r) => r.comment)).toEqual(["x", "y"]);
    d.forget();
    d.nftables.listTable("inet", "missing");
    expect(listings).toBe(4);
  });
});
