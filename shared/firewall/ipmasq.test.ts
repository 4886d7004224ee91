import { describe, expect, test } from "bun:test";
import { CNI_ERROR_CODES, InvalidConfigError } from "../cni/errors.ts";
import { FakeIptables } from "./iptables/fake.ts";
import { FakeNft } from "./nftables/fake.ts";
import { chooseBackend, type FirewallDrivers } from "./backend.ts";
import { checkIPMasq, gcIPMasq, parseMasqBackend, setupIPMasq, teardownIPMasq } from "./ipmasq.ts";
import { formatChainName } from "./naming.ts";

function fakes(): FirewallDrivers & { iptables: FakeIptables; nftables: FakeNft } {
  return { iptables: new FakeIptables(), nftables: new FakeNft() };
}

const trim = (s: string): string => s.trim();
const HEAD = `add table inet cni_plugins_masquerade { comment "Masquerading for plugins from github.com/containernetworking/plugins" ; }
add chain inet cni_plugins_masquerade masq_checks { comment "Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet" ; }
add chain inet cni_plugins_masquerade postrouting { type nat hook postrouting priority 100 ; }`;
const TAIL = `add rule inet cni_plugins_masquerade postrouting ip daddr == 224.0.0.0/4  return
add rule inet cni_plugins_masquerade postrouting ip6 daddr == ff00::/8  return
add rule inet cni_plugins_masquerade postrouting goto masq_checks`;
const rule = (ip: string, net: string, comment: string): string =>
  `add rule inet cni_plugins_masquerade masq_checks ip saddr == ${ip} ip daddr != ${net} masquerade comment "${comment}"`;

describe("backend choice", () => {
  test("parseMasqBackend", () => {
    expect(parseMasqBackend(undefined)).toBeUndefined();
    expect(parseMasqBackend("")).toBeUndefined();
    expect(parseMasqBackend("iptables")).toBe("iptables");
    expect(parseMasqBackend("nftables")).toBe("nftables");
    let err: unknown;
    try {
      parseMasqBackend("ebtables");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect((err as InvalidConfigError).message).toBe('unknown ipmasq backend "ebtables"');
    expect((err as InvalidConfigError).code).toBe(CNI_ERROR_CODES.InvalidNetworkConfig);
  });
  test("default: iptables unless only nftables is usable", () => {
    const d = fakes();
    expect(chooseBackend(undefined, d)).toBe("iptables");
    d.iptables.installed = false;
    expect(chooseBackend(undefined, d)).toBe("nftables");
    d.nftables.installed = false;
    expect(chooseBackend(undefined, d)).toBe("iptables");
    expect(chooseBackend("nftables", fakes())).toBe("nftables");
  });
});

describe("nftables ipmasq (upstream ipmasq_nftables_linux_test.go scenario)", () => {
  const containers = [
    { network: "unit-test", ifName: "eth0", containerID: "one", ips: ["192.168.1.1/24"] },
    { network: "unit-test", ifName: "eth0", containerID: "two", ips: ["192.168.1.2/24"] },
    { network: "unit-test", ifName: "eth0", containerID: "three", ips: ["192.168.99.5/24"] },
    { network: "alternate", ifName: "net1", containerID: "three", ips: ["10.0.0.5/24"] },
  ];
  test("setup, reuse of an address, teardown, GC", () => {
    const d = fakes();
    for (const c of containers) setupIPMasq(c, "nftables", d);
    expect(trim(d.nftables.dump())).toBe(
      [
        HEAD,
        rule("192.168.1.1", "192.168.1.0/24", "6fd94d501e58f0aa-287fc69eff0574a2, net: unit-test, if: eth0, id: one"),
        rule("192.168.1.2", "192.168.1.0/24", "6fd94d501e58f0aa-d750b2c8f0f25d5f, net: unit-test, if: eth0, id: two"),
        rule("192.168.99.5", "192.168.99.0/24", "6fd94d501e58f0aa-a4d4adb82b669cfe, net: unit-test, if: eth0, id: three"),
        rule("10.0.0.5", "10.0.0.0/24", "82783ef24bdc7036-acb19d111858e348, net: alternate, if: net1, id: three"),
        TAIL,
      ].join("\n"),
    );
    // Each setup is one transaction.
    expect(d.nftables.transactions).toHaveLength(4);
    expect(d.iptables.transactions).toHaveLength(0);

    setupIPMasq({ network: "unit-test", ifName: "eth0", containerID: "four", ips: ["192.168.1.1/24"] }, "nftables", d);
    teardownIPMasq({ network: "unit-test", ifName: "eth0", containerID: "one", ips: ["192.168.1.1/24"] }, d);
    const afterTeardown = [
      HEAD,
      rule("192.168.1.2", "192.168.1.0/24", "6fd94d501e58f0aa-d750b2c8f0f25d5f, net: unit-test, if: eth0, id: two"),
      rule("192.168.99.5", "192.168.99.0/24", "6fd94d501e58f0aa-a4d4adb82b669cfe, net: unit-test, if: eth0, id: three"),
      rule("10.0.0.5", "10.0.0.0/24", "82783ef24bdc7036-acb19d111858e348, net: alternate, if: net1, id: three"),
      rule("192.168.1.1", "192.168.1.0/24", "6fd94d501e58f0aa-e766de567ef6c543, net: unit-test, if: eth0, id: four"),
      TAIL,
    ].join("\n");
    expect(trim(d.nftables.dump())).toBe(afterTeardown);

    gcIPMasq("unit-test", [
      { ifName: "eth0", containerID: "two" },
      { ifName: "eth0", containerID: "three" },
      { ifName: "eth0", containerID: "one" },
    ], d);
    gcIPMasq("alternate", [{ ifName: "net1", containerID: "three" }], d);
    expect(trim(d.nftables.dump())).toBe(
      [
        HEAD,
        rule("192.168.1.2", "192.168.1.0/24", "6fd94d501e58f0aa-d750b2c8f0f25d5f, net: unit-test, if: eth0, id: two"),
        rule("192.168.99.5", "192.168.99.0/24", "6fd94d501e58f0aa-a4d4adb82b669cfe, net: unit-test, if: eth0, id: three"),
        rule("10.0.0.5", "10.0.0.0/24", "82783ef24bdc7036-acb19d111858e348, net: alternate, if: net1, id: three"),
        TAIL,
      ].join("\n"),
    );
    gcIPMasq("unit-test", [], d);
    gcIPMasq("alternate", [], d);
    expect(trim(d.nftables.dump())).toBe([HEAD, TAIL].join("\n"));
  });
  test("repeat setup replaces the instance's rules; dual stack; teardown without ips; check", () => {
    const d = fakes();
    const t = { network: "n", ifName: "eth0", containerID: "c", ips: ["10.1.2.3/24", "fd00::3/64"] };
    setupIPMasq(t, "nftables", d);
    setupIPMasq(t, "nftables", d);
    const dump = d.nftables.dump();
    expect(dump).toContain("masq_checks ip saddr == 10.1.2.3 ip daddr != 10.1.2.0/24 masquerade comment");
    expect(dump).toContain("masq_checks ip6 saddr == fd00::3 ip6 daddr != fd00::/64 masquerade comment");
    expect(dump.match(/saddr ==/g)).toHaveLength(2);
    checkIPMasq(t, "nftables", d);
    expect(() => checkIPMasq({ ...t, ips: ["10.1.2.4/24"] }, "nftables", d)).toThrow("lacks rule: ip saddr == 10.1.2.4");
    expect(() => checkIPMasq({ ...t, containerID: "other" }, "nftables", d)).toThrow("incomplete");
    teardownIPMasq({ network: "n", ifName: "eth0", containerID: "c" }, d);
    expect(d.nftables.dump()).not.toContain("saddr");
    teardownIPMasq({ network: "n", ifName: "eth0", containerID: "c" }, d);
    expect(() => checkIPMasq(t, "nftables", new FakeNft() as never)).toThrow();
  });
});

describe("iptables ipmasq", () => {
  const C = '"name: \\"testbr\\" id: \\"ctr1\\""';
  const CHAIN = "CNI-9841daee412d46fd9f4b3874";
  const NAT_HEAD = "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n";
  test("setup: upstream's exact rules, one transaction per family, idempotent", () => {
    const d = fakes();
    const t = { network: "testbr", ifName: "eth0", containerID: "ctr1", ips: ["10.99.0.2/24", "fd00::2/64"] };
    setupIPMasq(t, undefined, d);
    expect(d.iptables.dump(4)).toBe(
      `${NAT_HEAD}:${CHAIN} - [0:0]
-A POSTROUTING -s 10.99.0.2/32 -m comment --comment ${C} -j ${CHAIN}
-A ${CHAIN} -d 10.99.0.0/24 -m comment --comment ${C} -j ACCEPT
-A ${CHAIN} ! -d 224.0.0.0/4 -m comment --comment ${C} -j MASQUERADE
COMMIT
`,
    );
    expect(d.iptables.dump(6)).toBe(
      `${NAT_HEAD}:${CHAIN} - [0:0]
-A POSTROUTING -s fd00::2/128 -m comment --comment ${C} -j ${CHAIN}
-A ${CHAIN} -d fd00::/64 -m comment --comment ${C} -j ACCEPT
-A ${CHAIN} ! -d ff00::/8 -m comment --comment ${C} -j MASQUERADE
COMMIT
`,
    );
    expect(d.iptables.transactions.map((x) => x.family)).toEqual([4, 6]);
    expect(d.nftables.transactions).toHaveLength(0);
    setupIPMasq(t, "iptables", d);
    expect(d.iptables.transactions).toHaveLength(2);
    checkIPMasq(t, undefined, d);
    expect(() => checkIPMasq({ ...t, ips: ["10.99.0.3/24"] }, undefined, d)).toThrow("POSTROUTING lacks rule: -s 10.99.0.3/32");
  });
  test("teardown without ips removes Go's rules (including the old -s ip/prefix form) in both families and nft", () => {
    const d = fakes();
    d.iptables.load(4, `${NAT_HEAD}:${CHAIN} - [0:0]
-A POSTROUTING -s 10.99.0.2/32 -m comment --comment ${C} -j ${CHAIN}
-A POSTROUTING -s 10.99.0.0/24 -m comment --comment ${C} -j ${CHAIN}
-A POSTROUTING -s 10.50.0.2/32 -j ACCEPT
-A ${CHAIN} -d 10.99.0.0/24 -m comment --comment ${C} -j ACCEPT
-A ${CHAIN} ! -d 224.0.0.0/4 -m comment --comment ${C} -j MASQUERADE
COMMIT
`);
    setupIPMasq({ network: "testbr", ifName: "eth0", containerID: "ctr1", ips: ["fd00::2/64"] }, "iptables", d);
    setupIPMasq({ network: "testbr", ifName: "eth0", containerID: "ctr1", ips: ["10.99.0.2/24"] }, "nftables", d);
    teardownIPMasq({ network: "testbr", ifName: "eth0", containerID: "ctr1" }, d);
    expect(d.iptables.dump(4)).toBe(`${NAT_HEAD}-A POSTROUTING -s 10.50.0.2/32 -j ACCEPT\nCOMMIT\n`);
    expect(d.iptables.dump(6)).toBe(`${NAT_HEAD}COMMIT\n`);
    expect(d.nftables.dump()).not.toContain("saddr");
    const n = d.iptables.transactions.length;
    teardownIPMasq({ network: "testbr", ifName: "eth0", containerID: "ctr1" }, d);
    expect(d.iptables.transactions.length).toBe(n);
  });
  test("two containers on one network keep separate chains", () => {
    const d = fakes();
    setupIPMasq({ network: "n", ifName: "eth0", containerID: "a", ips: ["10.0.0.2/24"] }, "iptables", d);
    setupIPMasq({ network: "n", ifName: "eth0", containerID: "b", ips: ["10.0.0.3/24"] }, "iptables", d);
    teardownIPMasq({ network: "n", ifName: "eth0", containerID: "a" }, d);
    const dump = d.iptables.dump(4);
    expect(dump).not.toContain("10.0.0.2/32");
    expect(dump).toContain("-s 10.0.0.3/32");
    checkIPMasq({ network: "n", ifName: "eth0", containerID: "b", ips: ["10.0.0.3/24"] }, "iptables", d);
  });
  test("a transaction that fails once (concurrent change) is recomputed and retried", () => {
    const d = fakes();
    d.iptables.failNextRestore = "iptables-restore: line 3 failed";
    setupIPMasq({ network: "n", ifName: "eth0", containerID: "a", ips: ["10.0.0.2/24"] }, "iptables", d);
    expect(d.iptables.transactions).toHaveLength(2);
    expect(d.iptables.dump(4)).toContain("-s 10.0.0.2/32");
  });
  test("hot path on a kube-proxy-sized nat table: only the own chain is read; one restore; DEL reads nothing", () => {
    const d = fakes();
    d.iptables.loadKubeProxyNat(4, 200, 10);
    const t = { network: "n", ifName: "eth0", containerID: "hot", ips: ["10.0.0.2/24"] };
    const own = formatChainName("n", "hot");
    setupIPMasq(t, undefined, d);
    expect(d.iptables.reads).toEqual([`4 nat ${own}`]);
    expect(d.iptables.transactions).toHaveLength(1);
    // DEL knowing the addresses: the restore itself checks what it removes.
    d.iptables.reads.length = 0;
    teardownIPMasq(t, d);
    expect(d.iptables.reads).toEqual([]);
    expect(d.iptables.transactions).toHaveLength(2);
    expect(d.iptables.dump(4)).not.toContain(own);
    expect(d.iptables.dump(4).match(/^-A KUBE-SEP-/gm)).toHaveLength(2000);
    // Idempotent DEL: one failed attempt, then the own chain is read (per family) and nothing is written.
    d.iptables.reads.length = 0;
    teardownIPMasq(t, d);
    expect(d.iptables.reads).toEqual([`4 nat ${own}`]);
    expect(d.iptables.transactions).toHaveLength(3);
    teardownIPMasq({ network: "n", ifName: "eth0", containerID: "hot" }, d);
    expect(d.iptables.reads.slice(1)).toEqual([`4 nat ${own}`, `6 nat ${own}`]);
    expect(d.iptables.transactions).toHaveLength(3);
    // With nftables configured, the iptables side starts from reads (its rules are unlikely there).
    setupIPMasq(t, undefined, d);
    d.iptables.reads.length = 0;
    teardownIPMasq({ ...t, backend: "nftables" }, d);
    expect(d.iptables.reads).toEqual([`4 nat ${own}`, "4 nat POSTROUTING"]);
    expect(d.iptables.dump(4)).not.toContain(own);
    expect(d.iptables.reads.every((r) => !r.includes("KUBE"))).toBe(true);
  });
  test("GC: this network's chains of containers in no valid attachment go with their jumps; the rest stays byte-identical", () => {
    const d = fakes();
    const put = (network: string, containerID: string, ip: string, ifName = "eth0"): void =>
      setupIPMasq({ network, ifName, containerID, ips: [ip] }, "iptables", d);
    put("gcnet", "keep", "10.1.0.2/24");
    put("gcnet", "keep-other-if", "10.1.0.3/24", "net1");
    put("gcnet", "stale", "10.1.0.4/24");
    put("gcnet", "stale6", "fd00:1::4/64");
    put("othernet", "stale", "10.2.0.4/24");
    d.iptables.load(4, d.iptables.dump(4).replace("COMMIT", "-A POSTROUTING -s 10.9.0.0/16 -m comment --comment \"name: \\\"gcnet\\\" id: \\\"forged\\\"\" -j MASQUERADE\nCOMMIT"));
    const before4 = d.iptables.dump(4);
    const kept = (dump: string): string => dump.split("\n").filter((l) => !l.includes(formatChainName("gcnet", "stale")) && !l.includes(formatChainName("gcnet", "stale6"))).join("\n");
    gcIPMasq("gcnet", [{ containerID: "keep", ifName: "eth0" }, { containerID: "keep-other-if", ifName: "eth0" }], d);
    expect(d.iptables.dump(4)).toBe(kept(before4));
    expect(d.iptables.dump(4)).toContain(formatChainName("othernet", "stale"));
    expect(d.iptables.dump(4)).toContain("id: \\\"forged\\\"");
    expect(d.iptables.dump(6)).not.toContain(formatChainName("gcnet", "stale6"));
    expect(d.iptables.dump(4)).not.toContain(formatChainName("gcnet", "stale"));
    // A second GC finds nothing to do and writes nothing.
    const n = d.iptables.transactions.length;
    gcIPMasq("gcnet", [{ containerID: "keep", ifName: "eth0" }, { containerID: "keep-other-if", ifName: "eth0" }], d);
    expect(d.iptables.transactions.length).toBe(n);
    checkIPMasq({ network: "gcnet", ifName: "eth0", containerID: "keep", ips: ["10.1.0.2/24"] }, "iptables", d);
  });
  test("missing tools are ignored on teardown; other failures are reported", () => {
    const d = fakes();
    d.iptables.installed = false;
    d.nftables.installed = false;
    teardownIPMasq({ network: "n", ifName: "eth0", containerID: "a" }, d);
    const e = fakes();
    setupIPMasq({ network: "n", ifName: "eth0", containerID: "a", ips: ["10.0.0.2/24"] }, "nftables", e);
    e.nftables.failNextRun = "Operation not permitted";
    expect(() => teardownIPMasq({ network: "n", ifName: "eth0", containerID: "a" }, e)).toThrow("Operation not permitted");
    expect(() => setupIPMasq({ network: "n", ifName: "eth0", containerID: "a", ips: ["bogus"] }, "iptables", e)).toThrow("invalid address");
  });
});
