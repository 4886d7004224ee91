import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CmdArgs, Command } from "../../shared/cni/types.ts";
import { FakeIptables } from "../../shared/firewall/iptables/fake.ts";
import { FakeNft } from "../../shared/firewall/nftables/fake.ts";
import type { FirewalldRules, FirewallTarget } from "./backend.ts";
import { makeFirewallPlugin, type FirewallDeps } from "./firewall.ts";
import { busSocketsMissing } from "../../shared/dbus/system-bus.ts";
import { instanceComment, NFT_PRIV, NFT_TABLE } from "./nftables-backend.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";
import { attachmentLock, deletionMarkTime, tryLockFirewall } from "../../shared/firewall/attachment-lock.ts";

const PREV = {
  cniVersion: "1.0.0",
  interfaces: [{ name: "cni-br0" }, { name: "veth1234" }, { name: "eth0", sandbox: "/var/run/netns/x" }],
  ips: [
    { address: "10.88.0.5/16", gateway: "10.88.0.1", interface: 2 },
    { address: "fd88::5/64", interface: 2 },
  ],
};

function cmd(command: Command, conf: Record<string, unknown>, env: Record<string, string> = {}, containerID = "ctr1"): CmdArgs {
  const config = { cniVersion: "1.0.0", name: "net1", type: "firewall", ...conf };
  return withDelegate({
    command,
    containerID,
    netns: "/var/run/netns/x",
    ifName: "eth0",
    args: "",
    path: "",
    stdinData: new TextEncoder().encode(JSON.stringify(config)),
    config,
    cniVersion: config.cniVersion as string,
    env,
    stderr: () => {},
    scope: PROCESS_SCOPE,
  });
}

const recordDirs: string[] = [];
/** A fresh directory for the attachment records (removed after the file). */
function recordDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "fw-records-"));
  recordDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of recordDirs) rmSync(dir, { recursive: true, force: true });
});

interface FakeFirewalld {
  calls: string[];
  running: boolean;
}

function setup(opts: { iptables?: boolean; nft?: boolean; firewalld?: boolean } = {}) {
  const ipt = new FakeIptables();
  ipt.installed = opts.iptables ?? true;
  const nft = new FakeNft();
  (nft as { installed?: boolean }).installed = opts.nft ?? true;
  const fwd: FakeFirewalld = { calls: [], running: opts.firewalld ?? false };
  const fwdBackend = (address: string): FirewalldRules => ({
    backend: "firewalld",
    available: () => true,
    setup: async (t: FirewallTarget) => void fwd.calls.push(...t.addrs.map((a) => `${address} add ${t.conf.zone} ${a.host}`)),
    check: async (t: FirewallTarget) => {
      fwd.calls.push(...t.addrs.map((a) => `check ${t.conf.zone} ${a.host}`));
      return [];
    },
    teardown: async (t: FirewallTarget) => void fwd.calls.push(...t.addrs.map((a) => `del ${t.conf.zone} ${a.host}`)),
    gc: async () => {},
  });
  /** Addresses "configured in some namespace of the node" for GC. */
  const configured = new Map<string, string>();
  const deps: FirewallDeps = {
    drivers: () => ({ iptables: ipt, nftables: nft }),
    firewalld: fwdBackend,
    firewalldRunning: async () => fwd.running,
    stateDir: recordDir(),
    nodeAddresses: () => configured,
  };
  return { ipt, nft, fwd, deps, configured, plugin: makeFirewallPlugin(deps) };
}

/** Chain declarations (sorted, as iptables-save prints user chains) then rules, in order. */
function filterLines(ipt: FakeIptables, family: 4 | 6): string[] {
  const lines = ipt.dump(family).split("\n");
  return [...lines.filter((l) => /^:(?!INPUT|FORWARD|OUTPUT)/.test(l)).sort(), ...lines.filter((l) => l.startsWith("-A"))];
}

describe("firewall plugin (fakes)", () => {
  test("iptables: upstream rules for v4 and v6, result passed through, idempotent", async () => {
    const { ipt, plugin } = setup();
    const conf = { backend: "iptables", prevResult: PREV };
    const res = await plugin.add(cmd("ADD", conf));
    expect(res).toEqual(expect.objectContaining({ ips: expect.any(Array), interfaces: expect.any(Array) }));
    expect(res.ips?.map((i) => i.address)).toEqual(["10.88.0.5/16", "fd88::5/64"]);
    const want4 = [
      ":CNI-ADMIN - [0:0]",
      ":CNI-FORWARD - [0:0]",
      '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
      '-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-ADMIN',
      "-A CNI-FORWARD -d 10.88.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
      "-A CNI-FORWARD -s 10.88.0.5/32 -j ACCEPT",
    ];
    expect(filterLines(ipt, 4)).toEqual(want4);
    expect(filterLines(ipt, 6)).toContain("-A CNI-FORWARD -s fd88::5/128 -j ACCEPT");
    // one restore per family
    expect(ipt.transactions.length).toBe(2);
    await plugin.add(cmd("ADD", conf));
    expect(filterLines(ipt, 4)).toEqual(want4);
    expect(ipt.transactions.length).toBe(2);
    await plugin.check!(cmd("CHECK", conf));
  });

  test("iptables: custom admin chain, CHECK finds a missing rule, DEL twice leaves the chains", async () => {
    const { ipt, plugin } = setup();
    const conf = { backend: "iptables", iptablesAdminChainName: "MY-ADMIN", prevResult: PREV };
    await plugin.add(cmd("ADD", conf));
    expect(filterLines(ipt, 4)).toContain('-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j MY-ADMIN');
    ipt.restore(4, "*filter\n-D CNI-FORWARD -s 10.88.0.5/32 -j ACCEPT\nCOMMIT\n");
    await expect(plugin.check!(cmd("CHECK", conf))).rejects.toThrow("expected rule [-s 10.88.0.5/32 -j ACCEPT] not found");
    await plugin.del(cmd("DEL", conf));
    await plugin.del(cmd("DEL", conf));
    expect(filterLines(ipt, 4)).toEqual([
      ":CNI-FORWARD - [0:0]",
      ":MY-ADMIN - [0:0]",
      '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
      '-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j MY-ADMIN',
    ]);
    await expect(plugin.check!(cmd("CHECK", conf))).rejects.toThrow("not found");
  });

  test("iptables: ingressPolicy isolated builds both isolation stages ahead of CNI-FORWARD", async () => {
    const { ipt, plugin } = setup();
    await plugin.add(cmd("ADD", { backend: "iptables", ingressPolicy: "isolated", prevResult: PREV }));
    const C = '"CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)"';
    expect(filterLines(ipt, 4)).toEqual([
      ":CNI-ADMIN - [0:0]",
      ":CNI-FORWARD - [0:0]",
      ":CNI-ISOLATION-STAGE-1 - [0:0]",
      ":CNI-ISOLATION-STAGE-2 - [0:0]",
      `-A FORWARD -m comment --comment ${C} -j CNI-ISOLATION-STAGE-1`,
      '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
      '-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-ADMIN',
      "-A CNI-FORWARD -d 10.88.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
      "-A CNI-FORWARD -s 10.88.0.5/32 -j ACCEPT",
      '-A CNI-ISOLATION-STAGE-1 -i cni-br0 -o cni-br0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: isolated)" -j DROP',
      '-A CNI-ISOLATION-STAGE-1 -i cni-br0 ! -o cni-br0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge)" -j CNI-ISOLATION-STAGE-2',
      `-A CNI-ISOLATION-STAGE-1 -m comment --comment ${C} -j RETURN`,
      `-A CNI-ISOLATION-STAGE-2 -o cni-br0 -m comment --comment ${C} -j DROP`,
      `-A CNI-ISOLATION-STAGE-2 -m comment --comment ${C} -j RETURN`,
    ]);
  });

  test("config errors: missing prevResult, unknown policy and backend; DEL stays lenient", async () => {
    const { plugin } = setup();
    await expect(plugin.add(cmd("ADD", { backend: "iptables" }))).rejects.toThrow("missing prevResult from earlier plugin");
    await expect(plugin.check!(cmd("CHECK", { backend: "iptables" }))).rejects.toThrow("missing prevResult from earlier plugin");
    await expect(plugin.add(cmd("ADD", { backend: "iptables", ingressPolicy: "bogus", prevResult: PREV }))).rejects.toThrow('unknown ingress policy: "bogus"');
    await expect(plugin.add(cmd("ADD", { backend: "bogus", prevResult: PREV }))).rejects.toThrow("unknown firewall backend");
    await plugin.del(cmd("DEL", { backend: "bogus", ingressPolicy: "bogus", prevResult: PREV }));
    await plugin.del(cmd("DEL", { backend: "iptables" }));
    await expect(plugin.add(cmd("ADD", { backend: "iptables", ingressPolicy: "same-bridge", prevResult: { cniVersion: "1.0.0", ips: PREV.ips.slice(0, 1).map((i) => ({ address: i.address })) } }))).rejects.toThrow(
      'interface needs to be set for ingress policy "same-bridge"',
    );
  });

  test("auto backend: firewalld when running (bus address from the invocation env), else iptables, else nftables", async () => {
    const a = setup({ firewalld: true });
    await a.plugin.add(cmd("ADD", { firewalldZone: "internal", prevResult: PREV }, { DBUS_SYSTEM_BUS_ADDRESS: "unix:path=/tmp/bus" }));
    expect(a.fwd.calls).toEqual(["unix:path=/tmp/bus add internal 10.88.0.5/32", "unix:path=/tmp/bus add internal fd88::5/128"]);
    expect(a.ipt.transactions.length).toBe(0);
    await a.plugin.del(cmd("DEL", { prevResult: PREV }));
    expect(a.fwd.calls.slice(2)).toEqual(["del trusted 10.88.0.5/32", "del trusted fd88::5/128"]);

    const b = setup();
    await b.plugin.add(cmd("ADD", { prevResult: PREV }));
    expect(b.ipt.transactions.length).toBe(2);
    expect(b.nft.listTable("inet", NFT_TABLE)).toBeUndefined();

    const c = setup({ iptables: false });
    await c.plugin.add(cmd("ADD", { prevResult: PREV }));
    expect(c.nft.listTable("inet", NFT_TABLE)).toBeDefined();
  });

  test("firewalld + same-bridge: zone sources plus iptables isolation (as upstream)", async () => {
    const { ipt, fwd, plugin } = setup({ firewalld: true });
    await plugin.add(cmd("ADD", { backend: "firewalld", ingressPolicy: "same-bridge", prevResult: PREV }));
    expect(fwd.calls.length).toBe(2);
    expect(filterLines(ipt, 4)).toContain('-A CNI-ISOLATION-STAGE-2 -o cni-br0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)" -j DROP');
    expect(filterLines(ipt, 4).some((l) => l.includes("CNI-FORWARD -s"))).toBe(false);
  });

  test("firewalld: the firewall lock is free while D-Bus answers; ADD clears the deletion mark first, DEL leaves it first", async () => {
    const lockDir = recordDir();
    const key = { network: "net1", containerID: "ctr1", ifName: "eth0" };
    const lockFree = (): boolean => {
      const held = tryLockFirewall(lockDir);
      held?.[Symbol.dispose]();
      return held !== undefined;
    };
    const seen: string[] = [];
    const answer = async (op: string): Promise<void> => {
      await Promise.resolve(); // the bus answers later
      seen.push(`${op}: lock ${lockFree() ? "free" : "held"}, mark ${deletionMarkTime(key, lockDir) === undefined ? "none" : "left"}`);
    };
    const fake = setup({ firewalld: true });
    const deps: FirewallDeps = {
      ...fake.deps,
      drivers: () => ({ iptables: fake.ipt, nftables: fake.nft, lock: attachmentLock(lockDir) }),
      firewalld: () => ({ backend: "firewalld", available: () => true, setup: () => answer("ADD"), check: async () => [], teardown: () => answer("DEL"), gc: async () => {} }),
    };
    attachmentLock(lockDir).whileDeleting(key, () => {});
    const plugin = makeFirewallPlugin(deps);
    await plugin.add(cmd("ADD", { backend: "firewalld", ingressPolicy: "same-bridge", prevResult: PREV }));
    await plugin.del(cmd("DEL", { backend: "firewalld", prevResult: PREV }));
    expect(seen).toEqual(["ADD: lock free, mark none", "DEL: lock free, mark left"]);
    expect(filterLines(fake.ipt, 4)).toContain('-A CNI-ISOLATION-STAGE-2 -o cni-br0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)" -j DROP');
  });

  test("nftables: rules tagged per attachment, CHECK, re-ADD replaces, DEL without prevResult, GC", async () => {
    const { nft, plugin } = setup();
    const conf = { backend: "nftables", ingressPolicy: "same-bridge", prevResult: PREV };
    await plugin.add(cmd("ADD", conf));
    await plugin.add(cmd("ADD", conf));
    const mine = () => nft.listTable("inet", NFT_TABLE)!.rules.filter((r) => r.chain === NFT_PRIV && r.comment === instanceComment("net1", "ctr1", "eth0"));
    expect(mine().map((r) => r.rule)).toEqual([
      "ip daddr 10.88.0.5 ct state established,related accept",
      "ip saddr 10.88.0.5 accept",
      "ip6 daddr fd88::5 ct state established,related accept",
      "ip6 saddr fd88::5 accept",
    ]);
    const dump = nft.dump();
    expect(dump).toContain('iifname "cni-br0" oifname != "cni-br0" jump isolation-stage-2');
    expect(dump).not.toContain('oifname "cni-br0" drop comment "isolated');
    await plugin.check!(cmd("CHECK", conf));
    await plugin.del(cmd("DEL", { backend: "nftables" }));
    expect(mine()).toEqual([]);
    await expect(plugin.check!(cmd("CHECK", conf))).rejects.toThrow("lacks the daddr rule for 10.88.0.5");
    await plugin.del(cmd("DEL", { backend: "nftables" }));

    await plugin.add(cmd("ADD", conf, {}, "keep"));
    await plugin.add(cmd("ADD", conf, {}, "stale"));
    await plugin.gc!(cmd("GC", { cniVersion: "1.1.0", backend: "nftables", "cni.dev/valid-attachments": [{ containerID: "keep", ifname: "eth0" }] }, {}, ""));
    const left = nft.listTable("inet", NFT_TABLE)!.rules.filter((r) => r.chain === NFT_PRIV && r.comment !== undefined && !r.comment.startsWith("admin"));
    expect(new Set(left.map((r) => r.comment))).toEqual(new Set([instanceComment("net1", "keep", "eth0")]));
  });

  test("hot path: ADD reads CNI-FORWARD and FORWARD only, DEL reads nothing; never a whole table", async () => {
    const { ipt, plugin } = setup();
    ipt.loadKubeProxyNat(4, 200, 10);
    const prev = (ip: string) => ({ cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: "/x" }], ips: [{ address: ip, interface: 0 }] });
    await plugin.add(cmd("ADD", { backend: "iptables", prevResult: prev("10.88.0.5/16") }, {}, "a"));
    ipt.reads.length = 0;
    ipt.transactions.length = 0;
    await plugin.add(cmd("ADD", { backend: "iptables", prevResult: prev("10.88.0.6/16") }, {}, "b"));
    expect(ipt.reads).toEqual(["4 filter CNI-FORWARD", "4 filter FORWARD"]);
    expect(ipt.transactions).toHaveLength(1);
    ipt.reads.length = 0;
    await plugin.del(cmd("DEL", { backend: "iptables", prevResult: prev("10.88.0.6/16") }, {}, "b"));
    expect(ipt.reads).toEqual([]);
    expect(ipt.transactions).toHaveLength(2);
    expect(filterLines(ipt, 4).filter((l) => l.includes("10.88.0."))).toEqual([
      "-A CNI-FORWARD -d 10.88.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
      "-A CNI-FORWARD -s 10.88.0.5/32 -j ACCEPT",
    ]);
    // A repeated DEL: its restore fails, CNI-FORWARD is read, nothing is left to write.
    await plugin.del(cmd("DEL", { backend: "iptables", prevResult: prev("10.88.0.6/16") }, {}, "b"));
    expect(ipt.reads).toEqual(["4 filter CNI-FORWARD"]);
    expect(ipt.transactions).toHaveLength(3);
  });

  test("hot path with iptables-nft: DEL deletes the address rules in the kernel, no restore and no listing; a repeated DEL too", async () => {
    const { ipt, plugin } = setup();
    ipt.ruleDeletes = "kernel";
    const prev = (ip: string) => ({ cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: "/x" }], ips: [{ address: ip, interface: 0 }] });
    await plugin.add(cmd("ADD", { backend: "iptables", prevResult: prev("10.88.0.5/16") }, {}, "a"));
    await plugin.add(cmd("ADD", { backend: "iptables", prevResult: prev("10.88.0.6/16") }, {}, "b"));
    ipt.reads.length = 0;
    ipt.transactions.length = 0;
    await plugin.del(cmd("DEL", { backend: "iptables", prevResult: prev("10.88.0.6/16") }, {}, "b"));
    await plugin.del(cmd("DEL", { backend: "iptables", prevResult: prev("10.88.0.6/16") }, {}, "b"));
    expect([ipt.reads, ipt.transactions]).toEqual([[], []]);
    expect(ipt.kernelDeletes).toEqual(["4 filter CNI-FORWARD: 2 deleted", "4 filter CNI-FORWARD: 0 deleted"]);
    expect(filterLines(ipt, 4).filter((l) => l.includes("10.88.0."))).toEqual([
      "-A CNI-FORWARD -d 10.88.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
      "-A CNI-FORWARD -s 10.88.0.5/32 -j ACCEPT",
    ]);
    // When the kernel way declines (a rule it cannot read), the restore removes them.
    ipt.ruleDeletes = "tool";
    await plugin.del(cmd("DEL", { backend: "iptables", prevResult: prev("10.88.0.5/16") }, {}, "a"));
    expect(ipt.transactions).toHaveLength(1);
    expect(filterLines(ipt, 4).filter((l) => l.includes("10.88.0."))).toEqual([]);
  });

  test("iptables GC: stale attachments' address rules go (from ADD's records), valid ones, reused addresses and other networks stay", async () => {
    const { ipt, deps, plugin } = setup();
    const prev = (...ips: string[]) => ({ cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: "/x" }], ips: ips.map((address) => ({ address, interface: 0 })) });
    const add = (cid: string, network: string, ...ips: string[]) => plugin.add(cmd("ADD", { name: network, backend: "iptables", prevResult: prev(...ips) }, {}, cid));
    await add("keep", "net1", "10.88.0.5/16", "fd88::5/64");
    await add("stale", "net1", "10.88.0.6/16", "fd88::6/64");
    await add("stale-reused", "net1", "10.88.0.7/16");
    await add("live-reuser", "net2", "10.88.0.7/16");
    await add("other", "net2", "10.88.0.8/16");
    const lines = () => [...filterLines(ipt, 4), ...filterLines(ipt, 6)];
    const before = lines();
    await plugin.gc!(cmd("GC", { cniVersion: "1.1.0", backend: "iptables", "cni.dev/valid-attachments": [{ containerID: "keep", ifname: "eth0" }] }, {}, ""));
    expect(lines()).toEqual(before.filter((l) => !l.includes("10.88.0.6/32") && !l.includes("fd88::6/128")));
    expect(before.filter((l) => l.includes("10.88.0.6/32") || l.includes("fd88::6/128"))).toHaveLength(4);
    // The stale attachments' records are gone, the others' stay: a second GC writes nothing.
    const n = ipt.transactions.length;
    await plugin.gc!(cmd("GC", { cniVersion: "1.1.0", backend: "iptables", "cni.dev/valid-attachments": [{ containerID: "keep", ifname: "eth0" }] }, {}, ""));
    expect(ipt.transactions.length).toBe(n);
    // A GC without the list collects nothing.
    await plugin.gc!(cmd("GC", { cniVersion: "1.1.0", backend: "iptables" }, {}, ""));
    expect(lines().some((l) => l.includes("10.88.0.5/32"))).toBe(true);
    // DEL without prevResult removes what ADD recorded, and forgets it.
    await plugin.del(cmd("DEL", { backend: "iptables" }, {}, "keep"));
    await plugin.del(cmd("DEL", { name: "net2", backend: "iptables" }, {}, "live-reuser"));
    await plugin.del(cmd("DEL", { name: "net2", backend: "iptables" }, {}, "other"));
    expect(lines().filter((l) => l.includes("10.88.0.") || l.includes("fd88::"))).toEqual([]);
    expect(readdirSync(deps.stateDir, { recursive: true }).filter((n) => String(n).endsWith(".json"))).toEqual([]);
  });

  test("iptables GC leaves the rules of an address some namespace of the node still has (a recordless container reusing it), and forgets the record", async () => {
    const { ipt, deps, configured, plugin } = setup();
    const prev = (ip: string) => ({ cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: "/x" }], ips: [{ address: ip, interface: 0 }] });
    await plugin.add(cmd("ADD", { backend: "iptables", prevResult: prev("10.88.0.9/16") }, {}, "stale"));
    const before = filterLines(ipt, 4);
    configured.set("10.88.0.9", "/proc/4242/ns/net");
    await plugin.gc!(cmd("GC", { cniVersion: "1.1.0", backend: "iptables", "cni.dev/valid-attachments": [] }, {}, ""));
    expect(filterLines(ipt, 4)).toEqual(before);
    expect(readdirSync(deps.stateDir, { recursive: true }).filter((n) => String(n).endsWith(".json"))).toEqual([]);
  });

  test("firewalld GC (fake bus): the stale attachment's sources are removed from the zone ADD used; a source another attachment uses stays", async () => {
    const { fwd, deps, plugin } = setup({ firewalld: true });
    const prev = (ip: string) => ({ cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: "/x" }], ips: [{ address: ip, interface: 0 }] });
    await plugin.add(cmd("ADD", { backend: "firewalld", prevResult: prev("10.88.0.5/16") }, {}, "keep"));
    await plugin.add(cmd("ADD", { backend: "firewalld", firewalldZone: "internal", prevResult: prev("10.88.0.6/16") }, {}, "stale"));
    await plugin.add(cmd("ADD", { backend: "firewalld", prevResult: prev("10.88.0.5/16") }, {}, "stale-same-ip"));
    fwd.calls.length = 0;
    await plugin.gc!(cmd("GC", { cniVersion: "1.1.0", "cni.dev/valid-attachments": [{ containerID: "keep", ifname: "eth0" }] }, { DBUS_SYSTEM_BUS_ADDRESS: "unix:path=/tmp/bus" }, ""));
    expect(fwd.calls).toEqual(["del internal 10.88.0.6/32"]);
    fwd.calls.length = 0;
    await plugin.gc!(cmd("GC", { cniVersion: "1.1.0", "cni.dev/valid-attachments": [] }, {}, ""));
    expect(fwd.calls).toEqual(["del trusted 10.88.0.5/32"]);
    expect(readdirSync(deps.stateDir, { recursive: true }).filter((n) => String(n).endsWith(".json"))).toEqual([]);
  });

  test("no system bus socket means no firewalld, decided without the D-Bus client", () => {
    expect(busSocketsMissing("unix:path=/nonexistent/system_bus_socket")).toBe(true);
    expect(busSocketsMissing("unix:path=/nonexistent/a;unix:guid=1,path=/nonexistent/b")).toBe(true);
    expect(busSocketsMissing(`unix:path=${import.meta.path}`)).toBe(false);
    expect(busSocketsMissing("unix:abstract=/tmp/dbus-x")).toBe(false);
    expect(busSocketsMissing("unix:path=/nonexistent/a;tcp:host=localhost,port=1")).toBe(false);
  });

  test("versions: 0.4.0 and later only", () => {
    expect(setup().plugin.versions).toEqual(["0.4.0", "1.0.0", "1.1.0"]);
  });
});
