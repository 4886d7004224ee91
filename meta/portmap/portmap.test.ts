import { describe, expect, test } from "bun:test";
import { FakeIptables } from "../../shared/firewall/iptables/fake.ts";
import { FakeNft } from "../../shared/firewall/nftables/fake.ts";
import { NftTransaction } from "../../shared/firewall/nftables/transaction.ts";
import { parseCIDR } from "../../shared/ip/cidr.ts";
import { validateMapping, type PortmapConfig } from "./config.ts";
import { containerIPs } from "./container.ts";
import type { ForeignPort } from "./config.ts";
import { duplicateMappings, shadowedPorts } from "./conflicts.ts";
import { iptablesPortmap } from "./iptables-backend.ts";
import type { CIDR } from "../../shared/ip/cidr.ts";
import { dnatChainName, dnatEntryRules, parseDnatRule, trimComment } from "./iptables-rules.ts";
import { buildForwardTx, nftablesPortmap } from "./nftables-backend.ts";

function conf(over: Partial<PortmapConfig> = {}): PortmapConfig {
  return {
    name: "ptpnet", cniVersion: "1.0.0", backend: undefined, snat: true, masqAll: false, markMasqBit: 13,
    externalSetMarkChain: undefined, conditionsV4: undefined, conditionsV6: undefined,
    mappings: [
      validateMapping({ hostPort: 8080, containerPort: 80, protocol: "tcp" }),
      validateMapping({ hostPort: 9090, containerPort: 90, protocol: "tcp", hostIP: "2001:db8::1" }),
    ],
    ...over,
  };
}
const v4 = parseCIDR("10.77.0.2/24")!;
const forwardPortsIptables = (ipt: FakeIptables, c: PortmapConfig, containerID: string, container: CIDR): void =>
  iptablesPortmap(ipt).setup({ conf: c, containerID, container, guard: true });
const checkPortsIptables = (ipt: FakeIptables, c: PortmapConfig, containerID: string, container: CIDR): string[] =>
  iptablesPortmap(ipt).check({ conf: c, containerID, container });
const unforwardPortsIptables = (ipt: FakeIptables, network: string, containerID: string) => iptablesPortmap(ipt).teardown({ network, containerID }, true);

describe("portmap iptables rules", () => {
  test("matches the upstream 1.1.1 listing (chain name, entry rule incl. other-family ports, DN rules)", () => {
    const ipt = new FakeIptables();
    forwardPortsIptables(ipt, conf(), "ctr1", v4);
    const dump = ipt.dump(4);
    expect(dnatChainName("ptpnet", "ctr1")).toBe("CNI-DN-341c64caf8d4656260708");
    expect(dump).toContain('-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \\"ptpnet\\" id: \\"ctr1\\"" -m multiport --dports 8080,9090 -j CNI-DN-341c64caf8d4656260708');
    expect(dump).toContain("-A CNI-DN-341c64caf8d4656260708 -s 10.77.0.0/24 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK\n-A CNI-DN-341c64caf8d4656260708 -s 127.0.0.1/32 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK\n-A CNI-DN-341c64caf8d4656260708 -p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.77.0.2:80\n");
    expect(dump).not.toContain("--dport 9090");
    expect(dump).toContain("-A POSTROUTING -m comment --comment \"CNI portfwd requiring masquerade\" -j CNI-HOSTPORT-MASQ");
    expect(dump).toContain("-A CNI-HOSTPORT-LOCALNET ! -s 127.0.0.0/8 -d 127.0.0.0/8");
    expect(checkPortsIptables(ipt, conf(), "ctr1", v4)).toEqual([]);
    // Re-ADD is a no-op (one restore in all).
    const n = ipt.transactions.length;
    forwardPortsIptables(ipt, conf(), "ctr1", v4);
    expect(ipt.transactions.length).toBe(n);
    // A changed mapping list rewrites the chain; CHECK with the old list then fails.
    forwardPortsIptables(ipt, conf({ mappings: [validateMapping({ hostPort: 8081, containerPort: 80, protocol: "udp" })] }), "ctr1", v4);
    expect(checkPortsIptables(ipt, conf(), "ctr1", v4).length).toBeGreaterThan(0);
    expect(unforwardPortsIptables(ipt, "ptpnet", "ctr1")).toEqual([{ protocol: "udp", hostPort: 8081, hostIP: "" }]);
    expect(ipt.dump(4)).not.toContain("CNI-DN-");
  });

  test("mark bit, external mark chain, masqAll, conditions, IPv6", () => {
    const ipt = new FakeIptables();
    forwardPortsIptables(ipt, conf({ markMasqBit: 5, conditionsV6: ["!", "-d", "2001:db8::9"], masqAll: true }), "c6", parseCIDR("2001:db8::2/64")!);
    const d6 = ipt.dump(6);
    expect(d6).toContain("-j MARK --set-xmark 0x20/0x20");
    expect(d6).toContain(`! -d 2001:db8::9/128 -p tcp -m comment`);
    expect(d6).toContain("-d 2001:db8::1/128 -p tcp -m tcp --dport 9090 -j DNAT --to-destination [2001:db8::2]:90");
    expect(d6).not.toContain("-s 127.0.0.1");
    expect(d6).toContain("-A CNI-DN-");
    const ext = new FakeIptables();
    ext.load(4, "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-MARK-MASQ - [0:0]\nCOMMIT\n");
    forwardPortsIptables(ext, conf({ externalSetMarkChain: "KUBE-MARK-MASQ" }), "c", v4);
    expect(ext.dump(4)).toContain("-j KUBE-MARK-MASQ");
    expect(ext.dump(4)).not.toContain("CNI-HOSTPORT-SETMARK");
  });

  test("hot path on a kube-proxy-sized nat table: ADD reads CNI-HOSTPORT-DNAT only, DEL with the mappings reads nothing", () => {
    const ipt = new FakeIptables();
    ipt.loadKubeProxyNat(4, 200, 10);
    forwardPortsIptables(ipt, conf(), "first", v4); // the node's first: shared chains created (read once)
    ipt.reads.length = 0;
    ipt.transactions.length = 0;
    const c2 = conf({ mappings: [validateMapping({ hostPort: 8081, containerPort: 80, protocol: "tcp" })] });
    forwardPortsIptables(ipt, c2, "second", parseCIDR("10.77.0.3/24")!);
    expect(ipt.reads).toEqual(["4 nat CNI-HOSTPORT-DNAT"]);
    expect(ipt.transactions).toHaveLength(1);
    expect(checkPortsIptables(ipt, c2, "second", parseCIDR("10.77.0.3/24")!)).toEqual([]);
    // A port someone else forwards makes that container's chain worth reading (conflict check).
    ipt.reads.length = 0;
    const seen: ForeignPort[] = [];
    const c3 = conf({ mappings: [validateMapping({ hostPort: 8081, containerPort: 80, protocol: "tcp", hostIP: "10.1.1.1" })] });
    iptablesPortmap(ipt).setup({ conf: c3, containerID: "third", container: parseCIDR("10.77.0.4/24")!, foreign: (f) => void seen.push(...f) });
    expect(ipt.reads).toEqual(["4 nat CNI-HOSTPORT-DNAT", `4 nat ${dnatChainName("ptpnet", "second")}`]);
    expect(seen).toEqual([{ protocol: "tcp", hostPort: 8081, hostIP: "", owner: 'container "second" of network "ptpnet"' }]);
    // DEL with the mappings and families: one restore, nothing read; the ports come from the config.
    ipt.reads.length = 0;
    ipt.transactions.length = 0;
    expect(iptablesPortmap(ipt).teardown({ network: "ptpnet", containerID: "second", conf: c2, families: [4] }, true)).toEqual([{ protocol: "tcp", hostPort: 8081, hostIP: "" }]);
    expect(ipt.reads).toEqual([]);
    expect(ipt.transactions).toHaveLength(1);
    expect(ipt.dump(4)).not.toContain(dnatChainName("ptpnet", "second"));
    expect(ipt.dump(4)).toContain(dnatChainName("ptpnet", "first"));
    expect(ipt.dump(4).match(/^-A KUBE-SEP-/gm)).toHaveLength(2000);
    // Again: the optimistic restore fails, the own chain is read and found gone.
    ipt.reads.length = 0;
    expect(iptablesPortmap(ipt).teardown({ network: "ptpnet", containerID: "second", conf: c2, families: [4] }, true)).toEqual([]);
    expect(ipt.reads).toEqual([`4 nat ${dnatChainName("ptpnet", "second")}`]);
    expect(ipt.reads.every((r) => !r.includes("KUBE"))).toBe(true);
  });

  test("GC removes only this network's chains of containers not kept", () => {
    const ipt = new FakeIptables();
    for (const id of ["a", "b"]) forwardPortsIptables(ipt, conf(), id, v4);
    forwardPortsIptables(ipt, conf({ name: "other" }), "z", v4);
    iptablesPortmap(ipt).gc("ptpnet", [{ containerID: "a", ifName: "eth0" }]);
    const d = ipt.dump(4);
    expect(d).toContain(dnatChainName("ptpnet", "a"));
    expect(d).not.toContain(dnatChainName("ptpnet", "b"));
    expect(d).toContain(dnatChainName("other", "z"));
  });

  test("comment trimming, DNAT rule parsing, long port lists split by 15", () => {
    expect(trimComment("x".repeat(300))).toBe(`${"x".repeat(253)}...`);
    expect(parseDnatRule(["-d", "1.2.3.4/32", "-p", "udp", "-m", "udp", "--dport", "53", "-j", "DNAT", "--to-destination", "10.0.0.2:53"])).toEqual({ protocol: "udp", hostPort: 53, hostIP: "1.2.3.4" });
    const many = conf({ mappings: Array.from({ length: 20 }, (_, i) => validateMapping({ hostPort: 1000 + i, containerPort: 80, protocol: "tcp" })) });
    expect(dnatEntryRules(many, "c", 4).length).toBe(2);
  });
});

describe("portmap nftables transaction", () => {
  test("table, fib-gated entries, mappings and masquerade with the container ID as comment", () => {
    const tx = buildForwardTx(conf(), "ctr1", v4, [], true);
    const text = tx.render();
    expect(text).toContain('add table ip cni_hostport { comment "CNI portmap plugin" ; }');
    expect(text).toContain("add chain ip cni_hostport prerouting { type nat hook prerouting priority -100 ; }");
    expect(text).toContain("add rule ip cni_hostport prerouting fib daddr type local jump hostports_all");
    expect(text).toContain("add rule ip cni_hostport output fib daddr type local jump hostports_all");
    expect(text).toContain('insert rule ip cni_hostport hostports tcp dport 8080 dnat to 10.77.0.2:80 comment "ctr1"');
    expect(text).toContain('add rule ip cni_hostport masquerading ip saddr 127.0.0.1 ip daddr 10.77.0.2 masquerade comment "ctr1"');
    expect(text).not.toContain("9090");
    const fake = new FakeNft();
    fake.run(tx);
    expect(fake.dump()).toContain("hostports_all");
  });

  test("the newest container's dnat rules come first, in their own order", () => {
    const fake = new FakeNft();
    const two = conf({ mappings: [validateMapping({ hostPort: 8080, containerPort: 80, protocol: "tcp" }), validateMapping({ hostPort: 8443, containerPort: 443, protocol: "tcp" })] });
    nftablesPortmap(fake).setup({ conf: two, containerID: "old", container: v4 });
    nftablesPortmap(fake).setup({ conf: two, containerID: "new", container: parseCIDR("10.77.0.3/24")! });
    const hostports = fake.dump().split("\n").filter((l) => l.includes(" hostports ") && l.includes("dnat"));
    expect(hostports).toEqual([
      'add rule ip cni_hostport hostports tcp dport 8080 dnat to 10.77.0.3:80 comment "new"',
      'add rule ip cni_hostport hostports tcp dport 8443 dnat to 10.77.0.3:443 comment "new"',
      'add rule ip cni_hostport hostports tcp dport 8080 dnat to 10.77.0.2:80 comment "old"',
      'add rule ip cni_hostport hostports tcp dport 8443 dnat to 10.77.0.2:443 comment "old"',
    ]);
  });

  test("GC removes the rules of containers in no valid attachment; valid and foreign rules stay byte-identical", () => {
    const fake = new FakeNft();
    const v6 = parseCIDR("fd00::2/64")!;
    for (const [id, ip] of [["keep", v4], ["stale", parseCIDR("10.77.0.3/24")!], ["stale", v6], ["keep", parseCIDR("fd00::3/64")!]] as const) {
      nftablesPortmap(fake).setup({ conf: conf(), containerID: id, container: ip, guard: true });
    }
    fake.run(new NftTransaction("ip", "cni_hostport").addRule({ chain: "hostports", rule: "tcp dport 1 counter", comment: "foreign" }));
    const before = fake.dump();
    const nothingConfigured = () => new Map<string, string>(); // hermetic: no namespace of this host counts
    nftablesPortmap(fake, nothingConfigured).gc("ptpnet", [{ containerID: "keep", ifName: "eth0" }]);
    const after = fake.dump();
    expect(after).toBe(before.split("\n").filter((l) => !l.includes('comment "stale"')).join("\n"));
    expect(before.split("\n").filter((l) => l.includes('comment "stale"')).length).toBe(6);
    const n = fake.transactions.length;
    nftablesPortmap(fake, nothingConfigured).gc("ptpnet", [{ containerID: "keep", ifName: "eth0" }]);
    expect(fake.transactions.length).toBe(n);
  });

  test("GC keeps the rules of a container not listed here whose address some namespace of the node has (alive, in another network)", () => {
    const fake = new FakeNft();
    nftablesPortmap(fake).setup({ conf: conf(), containerID: "other-net", container: parseCIDR("10.77.0.4/24")!, guard: true });
    nftablesPortmap(fake).setup({ conf: conf(), containerID: "dead", container: parseCIDR("10.77.0.5/24")!, guard: true });
    nftablesPortmap(fake).setup({ conf: conf(), containerID: "other-net6", container: parseCIDR("fd00::4/64")!, guard: true });
    const before = fake.dump();
    const configured = new Map([["10.77.0.4", "/proc/77/ns/net"], ["fd00::4", "/proc/78/ns/net"]]);
    nftablesPortmap(fake, () => configured).gc("ptpnet", []);
    expect(fake.dump()).toBe(before.split("\n").filter((l) => !l.includes('comment "dead"')).join("\n"));
    expect(before.includes('comment "dead"')).toBe(true);
  });
});

describe("portmap config", () => {
  test("validation", () => {
    expect(() => validateMapping({ hostPort: 0, containerPort: 1, protocol: "tcp" })).toThrow("Invalid host port number: 0");
    expect(() => validateMapping({ hostPort: 65536, containerPort: 1, protocol: "tcp" })).toThrow("Invalid host port number: 65536");
    expect(() => validateMapping({ hostPort: 1, containerPort: 1, protocol: "icmp" })).toThrow('Invalid protocol "icmp"');
    expect(() => validateMapping({ hostPort: 1, containerPort: 1, protocol: "tcp", hostIP: "1.2.3" })).toThrow('Invalid host IP "1.2.3"');
    expect(validateMapping({ hostPort: 1, containerPort: 1, protocol: "UDP" }).protocol).toBe("udp");
  });

  test("container IP selection skips host-side interfaces", () => {
    const ips = containerIPs(
      {
        interfaces: [{ name: "br0" }, { name: "eth0", sandbox: "/ns" }],
        ips: [{ address: "10.0.0.1/24", interface: 0 }, { address: "10.0.0.2/24", interface: 1 }, { address: "fd00::2/64" }],
      },
      "eth0",
    );
    expect(ips.v4?.ip.value).toBe(parseCIDR("10.0.0.2/24")!.ip.value);
    expect(ips.v6).toBeDefined();
  });

  test("clashes: same port/proto on overlapping host IPs; duplicates within one request", () => {
    const mine = [validateMapping({ hostPort: 80, containerPort: 80, protocol: "tcp", hostIP: "10.1.1.1" })];
    expect(shadowedPorts(mine, [{ protocol: "tcp", hostPort: 80, hostIP: "", owner: 'container "x"' }])).toEqual(['host port 80/tcp on 10.1.1.1 was forwarded to container "x"']);
    expect(shadowedPorts(mine, [{ protocol: "tcp", hostPort: 80, hostIP: "10.1.1.2", owner: "x" }])).toEqual([]);
    expect(shadowedPorts(mine, [{ protocol: "udp", hostPort: 80, hostIP: "", owner: "x" }])).toEqual([]);
    expect(duplicateMappings(mine, 4)).toEqual([]);
    const twice = [...mine, validateMapping({ hostPort: 80, containerPort: 81, protocol: "tcp" })];
    expect(duplicateMappings(twice, 4)).toEqual(["host port 80/tcp is mapped twice in portMappings (IPv4)"]);
  });
});

describe("portmap checks for cni-plugins reload", () => {
  // (the nftables check reads rules as `nft -j` prints them: test/integration/reload.test.ts)
  test("with the guard asked for, a missing localnet guard is named; CHECK's own call does not ask", () => {
    const ipt = new FakeIptables();
    const f = iptablesPortmap(ipt);
    f.setup({ conf: conf(), containerID: "c1", container: v4, guard: true });
    expect(f.check({ conf: conf(), containerID: "c1", container: v4, guard: true })).toEqual([]);
    ipt.restore(4, "*filter\n-F CNI-HOSTPORT-LOCALNET\nCOMMIT\n");
    expect(f.check({ conf: conf(), containerID: "c1", container: v4, guard: true })).toEqual(["IPv4 CNI-HOSTPORT-LOCALNET lacks its guard rule"]);
    expect(f.check({ conf: conf(), containerID: "c1", container: v4 })).toEqual([]);
  });
});
