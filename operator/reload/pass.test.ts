/**
 * One reload pass (pass.ts) against in-memory iptables and nftables (shared/firewall fakes) and a
 * cache held in memory: what it restores is byte for byte what the plugins' ADD writes, a second
 * pass writes nothing, a dry run nothing either; dead, unknown, being-deleted and vanished
 * attachments are left alone; bad cache files and foreign plugins are reported and skipped; the
 * lock is taken in sessions; firewalld's asynchronous part is taken back when DEL raced it;
 * deletion marks that have served are swept.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AttachmentKey, DeletionMark } from "../../shared/firewall/attachment-lock.ts";
import type { FirewallDrivers } from "../../shared/firewall/backend.ts";
import { setupIPMasq } from "../../shared/firewall/ipmasq.ts";
import { FakeIptables } from "../../shared/firewall/iptables/fake.ts";
import { FakeNft } from "../../shared/firewall/nftables/fake.ts";
import type { AnyFirewallPart, FirewallPartsOf } from "../../shared/firewall/reapply.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import { makeFirewallPlugin, type FirewallDeps } from "../../meta/firewall/firewall.ts";
import { firewallPartsWith } from "../../meta/firewall/reload.ts";
import { loadPortmapConfig } from "../../meta/portmap/config.ts";
import { portmapFeatures } from "../../meta/portmap/portmap.ts";
import { parseCIDR } from "../../shared/ip/cidr.ts";
import { portmapFirewallParts } from "../../meta/portmap/reload.ts";
import { bridgeFirewallParts } from "../../plugins/bridge/reload.ts";
import { ptpFirewallParts } from "../../plugins/ptp/reload.ts";
import { setupSpoofCheck } from "../../plugins/bridge/spoofcheck.ts";
import type { NamespaceView } from "../liveness.ts";
import type { NetworkList } from "../networks.ts";
import { MARK_GRACE_MS, passStatus, pluginArgs, reloadPass, SESSION_MS, type ReloadDeps, type ReloadOptions } from "./pass.ts";

const CACHE = "/cache";
const RESULTS = `${CACHE}/results`;

const LIST = {
  cniVersion: "1.0.0",
  name: "podnet",
  plugins: [
    { type: "bridge", bridge: "cni0", isGateway: true, ipMasq: true, macspoofchk: true, ipam: { type: "host-local" } },
    { type: "portmap", capabilities: { portMappings: true } },
    { type: "firewall", backend: "iptables" },
    { type: "calico" },
  ],
};

function result(ip: string, n: number): Record<string, unknown> {
  return {
    cniVersion: "1.0.0",
    interfaces: [
      { name: "cni0", mac: "0a:00:00:00:00:01" },
      { name: `veth0000000${n}`, mac: "0a:00:00:00:00:02" },
      { name: "eth0", mac: `0a:00:00:00:01:0${n}`, sandbox: `/netns/${n}` },
    ],
    ips: [{ address: `${ip}/24`, gateway: "10.88.0.1", interface: 2 }],
  };
}

function entry(containerID: string, n: number, opts: { netns?: string; list?: unknown } = {}): string {
  return JSON.stringify({
    kind: "cniCacheV1",
    containerId: containerID,
    config: Buffer.from(JSON.stringify(opts.list ?? LIST)).toString("base64"),
    ifName: "eth0",
    networkName: "podnet",
    netns: opts.netns ?? `/netns/${n}`,
    capabilityArgs: { portMappings: [{ hostPort: 8000 + n, containerPort: 80, protocol: "tcp" }], mac: "ignored" },
    result: result(`10.88.0.${n + 1}`, n),
  });
}

interface Node {
  files: Map<string, { text: string; mtimeMs: number }>;
  netns: Set<string>;
  marks: Map<string, DeletionMark>;
  d: FirewallDrivers & { iptables: FakeIptables; nftables: FakeNft };
  locks: number;
  clock: number;
  stateDir: string;
  deps: ReloadDeps;
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "cni-reload-test-"));
  dirs.push(d);
  return d;
}

const keyOf = (a: AttachmentKey): string => `${a.network}\n${a.containerID}\n${a.ifName}`;

function fakeFirewallDeps(d: FirewallDrivers, stateDir: string): FirewallDeps {
  return {
    drivers: () => d,
    firewalld: () => {
      throw new Error("no firewalld in this test");
    },
    firewalldRunning: async () => false,
    stateDir,
    nodeAddresses: () => new Map(),
  };
}

function node(parts?: Record<string, FirewallPartsOf>): Node {
  const n = {
    files: new Map(),
    netns: new Set(["/netns/1", "/netns/2"]),
    marks: new Map(),
    d: { iptables: new FakeIptables(), nftables: new FakeNft() },
    locks: 0,
    clock: 1_000_000_000_000,
    stateDir: tempDir(),
  } as Omit<Node, "deps"> as Node;
  const view: NamespaceView = { exists: (p) => n.netns.has(p), holder: () => undefined };
  n.deps = {
    readDir: (p) => {
      if (p !== RESULTS) throw Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" });
      return [...n.files.keys()].map((f) => f.slice(RESULTS.length + 1));
    },
    readFile: (p) => n.files.get(p)!.text,
    mtimeMs: (p) => n.files.get(p)?.mtimeMs,
    exists: (p) => n.files.has(p) || n.netns.has(p),
    confNetwork: () => undefined,
    view: () => view,
    drivers: () => n.d,
    parts: parts ?? { bridge: bridgeFirewallParts, portmap: portmapFirewallParts, firewall: firewallPartsWith(fakeFirewallDeps(n.d, n.stateDir)) },
    ours: (type) => ["bridge", "portmap", "firewall", "host-local"].includes(type),
    tryLock: () => {
      n.locks++;
      return { [Symbol.dispose]: () => {} };
    },
    deletionMarkTime: (a) => n.marks.get(keyOf(a))?.atMs,
    deletionMarks: () => [...n.marks.values()],
    clearDeletionMark: (a) => void n.marks.delete(keyOf(a)),
    sleep: async () => {},
    now: () => n.clock,
  };
  return n;
}

function put(n: Node, name: string, text: string, mtimeMs: number): void {
  n.files.set(`${RESULTS}/${name}`, { text, mtimeMs });
}

const OPTS: ReloadOptions = { cacheDir: CACHE, networks: [], valid: undefined, dryRun: false, env: {} };

function dumps(d: { iptables: FakeIptables; nftables: FakeNft }): string {
  return [d.iptables.dump(4), d.iptables.dump(6), d.nftables.dump()].join("\n---\n");
}

/**
 * The two live pods of LIST, ADDed in order through the plugins' own ADD code (the firewall parts of
 * it: bridge's and portmap's ADD also configure links and sysctls of the host).
 */
async function addedByPlugins(): Promise<{ iptables: FakeIptables; nftables: FakeNft }> {
  const d = { iptables: new FakeIptables(), nftables: new FakeNft() };
  const stateDir = tempDir();
  for (const n of [1, 2]) {
    const e = JSON.parse(entry(`c${n}`, n)) as { result: Record<string, unknown>; capabilityArgs: Record<string, unknown> };
    const net: NetworkList = { ...LIST, file: "" };
    const cached = { file: "", containerID: `c${n}`, ifName: "eth0", networkName: "podnet", netns: `/netns/${n}`, cniArgs: [], capabilityArgs: e.capabilityArgs, network: net, result: e.result };
    const args = (i: number): CmdArgs => pluginArgs(cached, net, i, {});
    setupSpoofCheck({ hostVeth: `veth0000000${n}`, containerMac: `0a:00:00:00:01:0${n}`, containerID: `c${n}`, ifName: "eth0" }, d.nftables);
    setupIPMasq({ network: "podnet", containerID: `c${n}`, ifName: "eth0", ips: [`10.88.0.${n + 1}/24`] }, undefined, d);
    // portmap's ADD minus what is not firewall state (its route_localnet sysctl would be the host's here)
    const pm = loadPortmapConfig(args(1));
    portmapFeatures(d).iptables.setup({ conf: pm, containerID: `c${n}`, container: parseCIDR(`10.88.0.${n + 1}/24`)!, guard: pm.snat });
    await makeFirewallPlugin(fakeFirewallDeps(d, stateDir)).add(args(2));
  }
  return d;
}

describe("reload pass", () => {
  test("restores exactly what ADD wrote, oldest ADD first; a second pass writes nothing", async () => {
    const n = node();
    put(n, "podnet-c2-eth0", entry("c2", 2), 2000);
    put(n, "podnet-c1-eth0", entry("c1", 1), 1000);
    const r = await reloadPass(OPTS, n.deps);
    expect(passStatus(r)).toBe(0);
    expect(r.attachments.map((a) => [a.containerID, a.state])).toEqual([
      ["c1", "restored"],
      ["c2", "restored"],
    ]);
    expect(r.attachments[0]!.parts.map((p) => [p.what, p.state])).toEqual([
      ["spoof-check (nftables)", "restored"],
      ["ipMasq (iptables)", "restored"],
      ["hostPorts IPv4 (iptables)", "restored"],
      ["firewall (iptables)", "restored"],
    ]);
    expect(r.attachments[0]!.notes).toEqual(['plugin "calico" is not part of this suite: skipped']);
    expect(dumps(n.d)).toBe(dumps(await addedByPlugins()));

    const writes = n.d.iptables.transactions.length + n.d.nftables.transactions.length;
    const again = await reloadPass(OPTS, n.deps);
    expect(again.attachments.map((a) => a.state)).toEqual(["ok", "ok"]);
    expect(n.d.iptables.transactions.length + n.d.nftables.transactions.length).toBe(writes);
  });

  test("a check reads each iptables table once per lock session, not chain by chain", async () => {
    const n = node();
    put(n, "podnet-c1-eth0", entry("c1", 1), 1000);
    put(n, "podnet-c2-eth0", entry("c2", 2), 2000);
    await reloadPass(OPTS, n.deps);
    n.d.iptables.reads.length = 0;
    await reloadPass(OPTS, n.deps);
    expect(n.d.iptables.reads.filter((r) => !r.endsWith("(save)"))).toEqual([]);
    expect(n.d.iptables.reads.sort()).toEqual(["4 filter (save)", "4 nat (save)"]);
  });

  test("--dry-run: says what would be restored, writes nothing", async () => {
    const n = node();
    put(n, "podnet-c1-eth0", entry("c1", 1), 1000);
    const r = await reloadPass({ ...OPTS, dryRun: true }, n.deps);
    expect(r.attachments[0]!.state).toBe("would restore");
    expect(r.attachments[0]!.parts.every((p) => p.state === "would restore" && p.problems.length > 0)).toBe(true);
    expect(n.d.iptables.transactions).toEqual([]);
    expect(n.d.nftables.transactions).toEqual([]);
  });

  test("dead, unknown and other networks' attachments are left alone; bad cache files are named and skipped", async () => {
    const n = node();
    put(n, "podnet-dead-eth0", entry("dead", 3, { netns: "/netns/gone" }), 1000);
    put(n, "podnet-unknown-eth0", entry("unknown", 4, { netns: "" }).replace(/"ips":\[[^\]]*\]/, '"ips":[]'), 1000);
    put(n, "podnet-trunc-eth0", entry("trunc", 1).slice(0, 50), 1000);
    put(n, "podnet-old-eth0", JSON.stringify({ containerId: "old" }), 1000);
    put(n, "podnet-badconf-eth0", entry("badconf", 1).replace(/"config":"[^"]*"/, '"config":"e30="'), 1000);
    const r = await reloadPass(OPTS, n.deps);
    expect(r.problems).toEqual([
      `libcni cache ${RESULTS}/podnet-old-eth0: kind null is not cniCacheV1; skipped`,
      expect.stringMatching(new RegExp(`^libcni cache ${RESULTS}/podnet-trunc-eth0: not JSON \\(truncated\\?\\)`)),
    ]);
    const by = Object.fromEntries(r.attachments.map((a) => [a.containerID, a]));
    expect(by.dead!.state).toBe("skipped");
    expect(by.dead!.why).toBe("netns /netns/gone is gone");
    expect(by.unknown!.state).toBe("skipped");
    expect(by.badconf!.state).toBe("failed");
    expect(by.badconf!.why).toMatch(/config: no network name, and the configuration directory has no network "podnet"/);
    expect(n.d.iptables.transactions).toEqual([]);
    expect(passStatus(r)).toBe(1);
    expect((await reloadPass({ ...OPTS, networks: ["other"] }, n.deps)).attachments).toEqual([]);
  });

  test("a pod being deleted (DEL's mark newer than its cache entry) or whose cache entry went away is not written", async () => {
    const n = node();
    put(n, "podnet-c1-eth0", entry("c1", 1), 1000);
    put(n, "podnet-c2-eth0", entry("c2", 2), 1000);
    n.marks.set(keyOf({ network: "podnet", containerID: "c1", ifName: "eth0" }), { network: "podnet", containerID: "c1", ifName: "eth0", atMs: 1500, path: "" });
    n.marks.set(keyOf({ network: "podnet", containerID: "c2", ifName: "eth0" }), { network: "podnet", containerID: "c2", ifName: "eth0", atMs: 500, path: "" });
    const r = await reloadPass(OPTS, n.deps);
    expect(r.attachments.map((a) => [a.containerID, a.state])).toEqual([
      ["c1", "skipped"],
      ["c2", "restored"],
    ]);
    expect(r.attachments[0]!.why).toMatch(/^being deleted \(DEL marked it at /);
    expect(n.d.iptables.dump(4)).not.toContain('id: \\"c1\\"');

    const gone = node();
    put(gone, "podnet-c1-eth0", entry("c1", 1), 1000);
    const realExists = gone.deps.exists;
    gone.deps.exists = (p) => !p.endsWith("podnet-c1-eth0") && realExists(p);
    expect((await reloadPass(OPTS, gone.deps)).attachments[0]!.why).toBe("its cache entry was removed meanwhile");
    rmSync(gone.stateDir, { recursive: true, force: true });
  });

  test("the lock is taken in sessions of at most SESSION_MS, the tables read again at each", async () => {
    const n = node();
    for (let i = 1; i <= 6; i++) put(n, `podnet-c${i}-eth0`, entry(`c${i}`, i), 1000 + i);
    for (let i = 1; i <= 6; i++) n.netns.add(`/netns/${i}`);
    const realSave = n.d.iptables.saveTable.bind(n.d.iptables);
    n.d.iptables.saveTable = (family, table) => {
      n.clock += SESSION_MS; // reading is slow
      return realSave(family, table);
    };
    n.locks = 0;
    const r = await reloadPass({ ...OPTS, dryRun: true }, n.deps);
    expect(r.attachments.every((a) => a.state === "would restore")).toBe(true);
    expect(n.locks).toBeGreaterThan(1);
    expect(n.d.iptables.reads.filter((x) => x === "4 nat (save)").length).toBe(n.locks);
  });

  test("a part still missing after its setup is a failure (exit status 1), never written again in the same pass", async () => {
    let setups = 0;
    const stuck: FirewallPartsOf = () => [{ what: "stuck", sync: true, check: () => ["rule X missing"], setup: () => void setups++ }];
    const n = node({ bridge: stuck });
    put(n, "podnet-c1-eth0", entry("c1", 1), 1000);
    const r = await reloadPass(OPTS, n.deps);
    expect(r.attachments[0]!.parts).toEqual([{ what: "stuck", state: "failed", problems: ["rule X missing"], error: "still missing after the setup" }]);
    expect(setups).toBe(1);
    expect(passStatus(r)).toBe(1);
  });

  test("firewalld's part: set up outside the lock, taken back when DEL marked the pod meanwhile", async () => {
    const calls: string[] = [];
    let n: Node;
    const zone: FirewallPartsOf = (): AnyFirewallPart[] => [
      {
        what: "zone",
        sync: false,
        check: async () => (calls.includes("setup") ? [] : ["not in zone"]),
        setup: async () => {
          calls.push("setup");
          n.marks.set(keyOf({ network: "podnet", containerID: "c1", ifName: "eth0" }), { network: "podnet", containerID: "c1", ifName: "eth0", atMs: 5000, path: "" });
        },
        undo: async () => void calls.push("undo"),
      },
    ];
    n = node({ bridge: zone });
    put(n, "podnet-c1-eth0", entry("c1", 1), 1000);
    const r = await reloadPass(OPTS, n.deps);
    expect(calls).toEqual(["setup", "undo"]);
    expect(r.attachments[0]!.state).toBe("skipped");
    expect(r.attachments[0]!.why).toMatch(/^being deleted/);
  });

  test("deletion marks are swept once they served (cache entry gone, or ADDed again), and not before the grace time", async () => {
    const n = node({});
    put(n, "podnet-kept-eth0", entry("kept", 1), 10_000);
    put(n, "podnet-readded-eth0", entry("readded", 2), n.clock - MARK_GRACE_MS);
    const mark = (containerID: string, atMs: number): void => void n.marks.set(keyOf({ network: "podnet", containerID, ifName: "eth0" }), { network: "podnet", containerID, ifName: "eth0", atMs, path: "" });
    mark("kept", 20_000); // its DEL is under way: the cache entry is still there
    mark("readded", n.clock - 2 * MARK_GRACE_MS);
    mark("finished", n.clock - 2 * MARK_GRACE_MS);
    mark("young", n.clock - 1000);
    await reloadPass(OPTS, n.deps);
    expect([...n.marks.values()].map((m) => m.containerID).sort()).toEqual(["kept", "young"]);
    await reloadPass({ ...OPTS, dryRun: true }, n.deps);
    expect(n.marks.size).toBe(2);
  });

  test("ptp: its masquerade rules, as setupIPMasq writes them (nftables backend)", async () => {
    const ptp = { cniVersion: "1.0.0", name: "podnet", plugins: [{ type: "ptp", ipMasq: true, ipMasqBackend: "nftables", ipam: { type: "host-local" } }] };
    const n = node({ ptp: ptpFirewallParts });
    put(n, "podnet-c1-eth0", entry("c1", 1, { list: ptp }), 1000);
    const r = await reloadPass(OPTS, n.deps);
    expect(r.attachments[0]!.parts.map((p) => [p.what, p.state])).toEqual([["ipMasq (nftables)", "restored"]]);
    const added = { iptables: new FakeIptables(), nftables: new FakeNft() };
    setupIPMasq({ network: "podnet", containerID: "c1", ifName: "eth0", ips: ["10.88.0.2/24"] }, "nftables", added);
    expect(dumps(n.d)).toBe(dumps(added));
  });

  test("pluginArgs: libcni's buildOneConfig (name, cniVersion, prevResult after the first, runtimeConfig of enabled capabilities)", () => {
    const net: NetworkList = { ...LIST, file: "" };
    const e = { file: "", containerID: "c", ifName: "eth0", networkName: "podnet", netns: "/n", cniArgs: [["K", "V"]] as [string, string][], capabilityArgs: { portMappings: [1], mac: "m" }, network: net, result: { ips: [] } };
    const first = pluginArgs(e, net, 0, { X: "1" });
    expect(first.config).toEqual({ ...LIST.plugins[0], name: "podnet", cniVersion: "1.0.0" });
    expect([first.containerID, first.ifName, first.netns, first.args, first.env]).toEqual(["c", "eth0", "/n", "K=V", { X: "1" }]);
    expect(pluginArgs(e, net, 1, {}).config).toEqual({ ...LIST.plugins[1], name: "podnet", cniVersion: "1.0.0", prevResult: { ips: [] }, runtimeConfig: { portMappings: [1] } });
    expect(JSON.parse(new TextDecoder().decode(pluginArgs(e, net, 2, {}).stdinData))).toEqual({ ...LIST.plugins[2], name: "podnet", cniVersion: "1.0.0", prevResult: { ips: [] } });
  });
});
