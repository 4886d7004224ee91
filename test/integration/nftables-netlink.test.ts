/**
 * shared/netlink/nftables.ts and the netlink paths of the nftables/iptables drivers against the
 * real kernel, in the throwaway netns run.ts made: what they list must be what `nft -a` lists, a
 * deletion batch must delete exactly the named rules (tolerating ones already gone), and a chain
 * iptables-nft does not have must read as missing.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { sandboxed } from "../harness/sandbox.ts";
import { NETLINK_NETFILTER } from "../../shared/netlink/constants/nfnetlink.ts";
import { openNetlinkSocket } from "../../shared/netlink/kernel-transport.ts";
import { nftChainExists, nftRuleList, nftTableExists } from "../../shared/netlink/nftables.ts";
import { applyNft, listNftChain, listNftTable } from "../../shared/firewall/nftables/system.ts";
import { NftTransaction } from "../../shared/firewall/nftables/transaction.ts";
import { parseChainListing } from "../../shared/firewall/iptables/driver.ts";
import { systemIptables } from "../../shared/firewall/iptables/system.ts";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "../harness/tempdir.ts";
import { addressRules } from "../../meta/firewall/iptables-rules.ts";
import { dnatChainName, dnatComment } from "../../meta/portmap/iptables-rules.ts";
import { masqChain } from "../../shared/firewall/ipmasq-iptables.ts";
import { LazyRule } from "../../shared/firewall/iptables/lazy-rule.ts";
import { needleOf } from "../../shared/firewall/iptables/rule.ts";
import { quoteToken } from "../../shared/firewall/iptables/save-format.ts";
import { parseCIDR } from "../../shared/ip/cidr.ts";

const ipt = (...args: string[]) => sh(["iptables-nft", "-w", "-t", "nat", ...args]);

function sh(argv: string[], input?: string): string {
  const p = Bun.spawnSync({ cmd: argv, stdin: input === undefined ? "ignore" : Buffer.from(input), stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`${argv.join(" ")} failed: ${p.stderr.toString()}`);
  return p.stdout.toString();
}

const TABLE = "cni_nl_test";
const KEEP_RULE = ["-s", "10.77.0.9/32", "-m", "comment", "--comment", "not ours", "-j", "ACCEPT"];
const JUMP_RULE = ["-s", "10.77.0.5/32", "-m", "comment", "--comment", 'name: "nl" id: "c5"', "-j", "CNI-NL-RM"];
/** handle and comment of each rule of one chain, as nft lists them. */
function nftListed(family: string, table: string, chain: string): { chain: string; handle: number; comment?: string }[] {
  const out = JSON.parse(sh(["nft", "-j", "-a", "list", "chain", family, table, chain])) as { nftables: any[] };
  return out.nftables.filter((o) => o.rule).map((o) => (o.rule.comment === undefined ? { chain, handle: o.rule.handle } : { chain, handle: o.rule.handle, comment: o.rule.comment }));
}

describe.skipIf(!sandboxed())("nf_tables over netlink (real kernel)", () => {
  afterAll(() => {
    Bun.spawnSync({ cmd: ["nft", "delete", "table", "inet", TABLE] });
    Bun.spawnSync({ cmd: ["nft", "delete", "table", "ip6", TABLE] });
    for (const rule of [KEEP_RULE, JUMP_RULE]) Bun.spawnSync({ cmd: ["iptables-nft", "-w", "-t", "nat", "-D", "POSTROUTING", ...rule] });
    for (const chain of ["CNI-NL-TEST", "CNI-NL-RM", "CNI-NL-OTHER"]) {
      Bun.spawnSync({ cmd: ["iptables-nft", "-w", "-t", "nat", "-F", chain] });
      Bun.spawnSync({ cmd: ["iptables-nft", "-w", "-t", "nat", "-X", chain] });
    }
    for (const tool of ["iptables-nft", "ip6tables-nft"]) {
      for (const op of ["-F", "-X"]) for (const chain of ["CNI-NL-FWD", "CNI-NL-ADM", "CNI-NL-LFWD", "CNI-NL-LADM"]) Bun.spawnSync({ cmd: [tool, "-w", "-t", "filter", op, chain] });
    }
    for (const op of ["-F", "-X"]) for (const chain of ["CNI-NL-NEEDLE", "CNI-NL-NEEDLE-TO"]) Bun.spawnSync({ cmd: ["iptables-nft", "-w", "-t", "nat", op, chain] });
  });

  test("every rule shape the plugins look for in shared chains holds its needle in the kernel's bytes, and is found by it", () => {
    // The plugins' own shapes (bridge ipMasq's jump, portmap's DNAT jump, firewall's address rules)
    // between other pods' rules: the lazy listing decodes only the rules holding the needle.
    const masq = masqChain("nl-net", "ctr-needle", 4, [parseCIDR("10.77.3.4/24")!]);
    const dnatJump = ["-p", "tcp", "-m", "comment", "--comment", dnatComment("nl-net", "ctr-needle"), "-m", "multiport", "--dports", "18080", "-j", "CNI-NL-NEEDLE-TO"];
    const shapes: string[][] = [
      [...masq.entryRules[0]!.rule.slice(0, -1), "CNI-NL-NEEDLE-TO"],
      dnatJump,
      ...addressRules("10.77.3.4/32").map((r) => [...r]),
    ];
    expect(dnatChainName("nl-net", "ctr-needle")).toMatch(/^CNI-DN-/);
    const others = Array.from({ length: 40 }, (_, i) => `-A CNI-NL-NEEDLE -s 10.77.9.${i}/32 -m comment --comment "other ${i}" -j CNI-NL-NEEDLE-TO`);
    const line = (r: string[]) => `-A CNI-NL-NEEDLE ${r.map(quoteToken).join(" ")}`;
    sh(["iptables-nft-restore", "--noflush", "-w"], `*nat\n:CNI-NL-NEEDLE - [0:0]\n:CNI-NL-NEEDLE-TO - [0:0]\n${[...others.slice(0, 20), ...shapes.map(line), ...others.slice(20)].join("\n")}\nCOMMIT\n`);
    const listing = systemIptables({ PATH: process.env.PATH }, "nft").listChainLazily(4, "nat", "CNI-NL-NEEDLE")!;
    expect(listing.length).toBe(40 + shapes.length);
    for (const shape of shapes) {
      const needle = needleOf(shape);
      expect(needle).toBeDefined();
      const holding = listing.filter((r) => r instanceof LazyRule && r.mentions(needle!));
      expect(holding.length).toBeGreaterThanOrEqual(1);
      // Other pods' rules never; this pod's other rules may (its address is in each of them).
      expect(holding.length).toBeLessThanOrEqual(3);
    }
    // A whole-address needle is in the kernel's comparison, not only in a comment's text.
    const fwd = listing.filter((r) => r instanceof LazyRule && r.mentions(needleOf(addressRules("10.77.3.4/32")[0]!)!));
    expect(fwd.map((r) => (r as LazyRule).decode())).toContainEqual([...addressRules("10.77.3.4/32")[0]!]);
  });

  test("a chain's rules: the handles and comments nft lists, in order, and nothing of other chains or families", () => {
    sh(
      ["nft", "-f", "-"],
      [
        `add table inet ${TABLE}`,
        `add chain inet ${TABLE} c`,
        `add chain inet ${TABLE} other`,
        `add rule inet ${TABLE} c ip saddr 10.0.0.1 counter comment "abcd0123-ef, net: n, if: eth0, id: c1"`,
        `add rule inet ${TABLE} c counter`,
        `add rule inet ${TABLE} other counter comment "elsewhere"`,
        `add rule inet ${TABLE} c ip6 saddr fd00::1 accept comment "x"`,
        `add table ip6 ${TABLE}`,
        `add chain ip6 ${TABLE} c`,
        `add rule ip6 ${TABLE} c counter comment "ip6 family"`,
      ].join("\n") + "\n",
    );
    const sock = openNetlinkSocket(NETLINK_NETFILTER);
    try {
      const listed = nftRuleList(sock, "inet", TABLE, "c");
      expect(listed.length).toBe(3);
      expect(listed).toEqual(nftListed("inet", TABLE, "c"));
      expect(listed[0]!.comment).toBe("abcd0123-ef, net: n, if: eth0, id: c1");
      expect(nftRuleList(sock, "ip6", TABLE, "c").map((r) => r.comment)).toEqual(["ip6 family"]);
      expect(nftRuleList(sock, "inet", TABLE, "missing")).toEqual([]);
      expect(nftRuleList(sock, "inet", "no_such_table", "c")).toEqual([]);
      expect([nftTableExists(sock, "inet", TABLE), nftTableExists(sock, "inet", "no_such_table"), nftTableExists(sock, "ip", TABLE)]).toEqual([true, false, false]);
      expect([nftChainExists(sock, "inet", TABLE, "other"), nftChainExists(sock, "inet", TABLE, "missing")]).toEqual([true, false]);
    } finally {
      sock.close();
    }
    expect(listNftChain("inet", TABLE, "missing")).toBeUndefined();
    expect(listNftChain("inet", "no_such_table", "c")).toBeUndefined();
    expect(listNftTable("inet", "no_such_table", process.env)).toBeUndefined();
    expect(listNftTable("inet", TABLE, process.env)?.rules.length).toBe(4);
  });

  test("a transaction of rule deletions goes by netlink: exactly those rules go, one already gone is no error", () => {
    const before = nftListed("inet", TABLE, "c");
    const [first, , third] = before;
    sh(["nft", "delete", "rule", "inet", TABLE, "c", "handle", String(third!.handle)]);
    applyNft(new NftTransaction("inet", TABLE).deleteRule("c", first!.handle).deleteRule("c", third!.handle), process.env);
    expect(nftListed("inet", TABLE, "c")).toEqual([before[1]!]);
    expect(nftListed("inet", TABLE, "other").map((r) => r.comment)).toEqual(["elsewhere"]);
    // Everything already gone, or the chain itself: still no error (DEL is idempotent).
    applyNft(new NftTransaction("inet", TABLE).deleteRule("c", first!.handle).deleteRule("missing", 99), process.env);
    // A mixed transaction still runs through nft.
    applyNft(new NftTransaction("inet", TABLE).deleteRule("c", before[1]!.handle).addRule({ chain: "c", rule: "counter", comment: "via nft" }), process.env);
    expect(nftListed("inet", TABLE, "c").map((r) => r.comment)).toEqual(["via nft"]);
  });

  test("iptables-nft chains: a missing chain reads as missing, an existing one is listed as iptables lists it", () => {
    sh(["iptables-nft", "-w", "-t", "nat", "-N", "CNI-NL-TEST"]);
    sh(["iptables-nft", "-w", "-t", "nat", "-A", "CNI-NL-TEST", "-d", "10.9.0.0/16", "-m", "comment", "--comment", "nl test", "-j", "ACCEPT"]);
    expect(listNftChain("ip", "nat", "CNI-NL-TEST")).toHaveLength(1);
    expect(listNftChain("ip", "nat", "CNI-NL-MISSING")).toBeUndefined();
    expect(listNftChain("ip6", "no_such_table", "CNI-NL-TEST")).toBeUndefined();
    const ipt = systemIptables(process.env, "nft");
    expect(ipt.listChain(4, "nat", "CNI-NL-TEST")).toEqual([["-d", "10.9.0.0/16", "-m", "comment", "--comment", "nl test", "-j", "ACCEPT"]]);
    expect(ipt.listChain(4, "nat", "CNI-NL-MISSING")).toBeUndefined();
    expect(ipt.listChain(4, "no_such_table_x", "CNI-NL-TEST")).toBeUndefined();
    // A built-in chain lists as iptables lists it (other files of the lane may have rules there).
    expect(ipt.listChain(4, "nat", "POSTROUTING")).toEqual(parseChainListing(sh(["iptables-nft", "-w", "-t", "nat", "-S", "POSTROUTING"]), "POSTROUTING"));
  });

  test("iptables-nft listChain reads the kernel (no iptables run) when it can read every rule, iptables -S otherwise; both list what iptables -S lists", () => {
    const dir = makeTempDir();
    const runs = join(dir, "runs");
    writeFileSync(join(dir, "iptables-nft"), `#!/bin/sh\necho "$*" >> ${runs}\nexec /usr/sbin/iptables-nft "$@"\n`, { mode: 0o755 });
    const ipt = systemIptables({ ...process.env, PATH: `${dir}:${process.env.PATH ?? ""}` }, "nft");
    const toolRuns = () => (existsSync(runs) ? readFileSync(runs, "utf8").split("\n").filter((l) => l !== "").length : 0);
    const listed = (table: string, chain: string) => parseChainListing(sh(["iptables-nft", "-w", "-t", table, "-S", chain]), chain);
    for (const op of [["-N", "CNI-NL-LFWD"], ["-N", "CNI-NL-LADM"]]) sh(["iptables-nft", "-w", "-t", "filter", ...op]);
    const fwd = [
      ["-m", "comment", "--comment", "CNI firewall plugin admin overrides", "-j", "CNI-NL-LADM"],
      ["-d", "10.88.0.5/32", "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"],
      ["-s", "10.88.0.5/32", "-j", "ACCEPT"],
    ];
    for (const r of fwd) sh(["iptables-nft", "-w", "-t", "filter", "-A", "CNI-NL-LFWD", ...r]);
    expect(ipt.listChain(4, "filter", "CNI-NL-LFWD")).toEqual(listed("filter", "CNI-NL-LFWD"));
    expect(ipt.listChain(4, "filter", "CNI-NL-LFWD")).toEqual(fwd);
    expect(ipt.listChain(4, "filter", "CNI-NL-LADM")).toEqual([]);
    expect(ipt.listChain(4, "filter", "CNI-NL-LABSENT")).toBeUndefined();
    expect(toolRuns()).toBe(0);
    // A rule of a shape nft-rules.ts does not read (-p): the whole chain is listed by iptables.
    sh(["iptables-nft", "-w", "-t", "filter", "-A", "CNI-NL-LADM", "-p", "tcp", "--dport", "80", "-j", "ACCEPT"]);
    const adm = ipt.listChain(4, "filter", "CNI-NL-LADM");
    expect(toolRuns()).toBe(1);
    expect(adm).toEqual([["-p", "tcp", "-m", "tcp", "--dport", "80", "-j", "ACCEPT"]]);
    expect(adm).toEqual(listed("filter", "CNI-NL-LADM"));
  });

  test("iptables-nft: removeChains takes the chain and exactly the jumps to it in one step; a jump from elsewhere refuses it and changes nothing", () => {
    ipt("-N", "CNI-NL-RM");
    ipt("-A", "CNI-NL-RM", "-d", "10.77.0.0/16", "-j", "ACCEPT");
    ipt("-A", "CNI-NL-RM", "!", "-d", "224.0.0.0/4", "-j", "MASQUERADE");
    ipt("-A", "POSTROUTING", ...KEEP_RULE);
    ipt("-A", "POSTROUTING", ...JUMP_RULE);
    ipt("-A", "POSTROUTING", "-s", "10.77.0.6/32", "-g", "CNI-NL-RM");
    const driver = systemIptables(process.env, "nft");
    // A jump from a chain that is not named as a referrer: the kernel refuses; nothing changed.
    ipt("-N", "CNI-NL-OTHER");
    ipt("-A", "CNI-NL-OTHER", "-j", "CNI-NL-RM");
    const before = ipt("-S");
    expect(driver.removeChains!(4, "nat", [{ chain: "CNI-NL-RM", referrers: ["POSTROUTING"] }])).toBe(false);
    expect(ipt("-S")).toBe(before);
    ipt("-F", "CNI-NL-OTHER");
    // Now it goes, with both of its POSTROUTING jumps (jump and goto); the other rule stays.
    expect(driver.removeChains!(4, "nat", [{ chain: "CNI-NL-RM", referrers: ["POSTROUTING"] }, { chain: "CNI-NL-GONE", referrers: ["POSTROUTING"] }])).toBe(true);
    const after = ipt("-S");
    expect(after).not.toContain("CNI-NL-RM");
    expect(after).toContain("--comment \"not ours\" -j ACCEPT");
    expect(driver.listChain(4, "nat", "CNI-NL-RM")).toBeUndefined();
    // Nothing left to remove: still done.
    expect(driver.removeChains!(4, "nat", [{ chain: "CNI-NL-RM", referrers: ["POSTROUTING"] }])).toBe(true);
    expect(systemIptables(process.env, "legacy").removeChains!(4, "nat", [{ chain: "CNI-NL-RM", referrers: ["POSTROUTING"] }])).toBe(false);
  });

  test("iptables-nft: deleteRules takes exactly the firewall plugin's address rules in one step; a rule it cannot read declines and changes nothing", () => {
    for (const [tool, family, mine, other] of [
      ["iptables-nft", 4, "10.77.1.5/32", "10.77.1.6/32"],
      ["ip6tables-nft", 6, "fd77::5/128", "fd77::6/128"],
    ] as const) {
      const f = (...args: string[]) => sh([tool, "-w", "-t", "filter", ...args]);
      f("-N", "CNI-NL-ADM");
      f("-N", "CNI-NL-FWD");
      f("-A", "CNI-NL-FWD", "-m", "comment", "--comment", "CNI firewall plugin admin overrides", "-j", "CNI-NL-ADM");
      for (const host of [mine, other, mine]) for (const r of addressRules(host)) f("-A", "CNI-NL-FWD", ...r);
      const driver = systemIptables(process.env, "nft");
      // The other address's rules, the admin jump and the chain stay; both copies of mine go.
      expect(driver.deleteRules!(family, "filter", "CNI-NL-FWD", addressRules(mine))).toBe(true);
      const left = f("-S", "CNI-NL-FWD");
      expect(left).not.toContain(mine);
      expect(left.split("\n").filter((l) => l.startsWith("-A"))).toEqual([
        '-A CNI-NL-FWD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-NL-ADM',
        `-A CNI-NL-FWD -d ${other} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
        `-A CNI-NL-FWD -s ${other} -j ACCEPT`,
      ]);
      // Nothing left of mine, or no such chain: done, nothing to do.
      expect(driver.deleteRules!(family, "filter", "CNI-NL-FWD", addressRules(mine))).toBe(true);
      expect(driver.deleteRules!(family, "filter", "CNI-NL-MISSING", addressRules(mine))).toBe(true);
      // A rule of a shape it does not read (-i) that cannot be one of them (it lacks their
      // address) is not read at all; one that holds their address: it cannot tell, declines, and
      // nothing changes.
      f("-A", "CNI-NL-FWD", "-i", "eth0", "-j", "ACCEPT");
      f("-A", "CNI-NL-FWD", ...addressRules(mine)[1]!);
      expect(driver.deleteRules!(family, "filter", "CNI-NL-FWD", addressRules(mine))).toBe(true);
      expect(f("-S", "CNI-NL-FWD")).not.toContain(mine);
      f("-A", "CNI-NL-FWD", "-d", other, "-i", "eth0", "-j", "ACCEPT");
      const before = f("-S", "CNI-NL-FWD");
      expect(driver.deleteRules!(family, "filter", "CNI-NL-FWD", addressRules(other))).toBe(false);
      expect(f("-S", "CNI-NL-FWD")).toBe(before);
      expect(systemIptables(process.env, "legacy").deleteRules!(family, "filter", "CNI-NL-FWD", addressRules(other))).toBe(false);
      for (const op of ["-F", "-X"]) for (const chain of ["CNI-NL-FWD", "CNI-NL-ADM"]) f(op, chain);
    }
  });
});
