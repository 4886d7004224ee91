import { describe, expect, test } from "bun:test";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { upstreamIfbName } from "../meta/bandwidth/ifb-name.ts";
import { formatComment } from "../shared/firewall/naming.ts";
import { formatReport, operate, validAttachments, type OperatorEnv } from "./command.ts";
import { parseFlags, parseValidFile, UsageError, type OperatorFlags } from "./flags.ts";
import { gcConfig } from "./gc-run.ts";
import { judge, type NamespaceView } from "./liveness.ts";
import { loadNetworks, parseNetworkFile } from "./networks.ts";
import { NetworkState, type SeenAttachment } from "../shared/node-state/network-state.ts";
import { readNetworkState, type SourceReaders } from "./sources.ts";
import { pluginOwnerships } from "../registry/registry.ts";

/** What the plugins of this build own (the registry's descriptions). */
const OWNERS = await pluginOwnerships();

function tmp(): string {
  return mkdtempSync(join(tmpdir(), "cni-operator-test-"));
}

describe("flags", () => {
  const parse = (...argv: string[]) => parseFlags("gc", argv, () => "a\n# comment\nb/eth1  # trailing\n\n", "/self");
  test("defaults", () => {
    const f = parse();
    expect(f).toEqual({
      confDir: "/etc/cni/net.d",
      networks: [],
      cacheDir: "/var/lib/cni",
      binDirs: "/self:/opt/cni/bin:/usr/lib/cni",
      valid: undefined,
      json: false,
      apply: false,
      dryRun: false,
      watch: false,
      intervalMs: 60_000,
    });
  });
  test("every flag, both spellings", () => {
    const f = parse("--conf-dir", "/c", "--network=n1", "--network", "n2", "--cache-dir=/k", "--bin-dir", "/b", "--valid", "x", "--valid=y/eth0", "--valid-file", "f", "--json", "--apply");
    expect(f.confDir).toBe("/c");
    expect(f.networks).toEqual(["n1", "n2"]);
    expect(f.cacheDir).toBe("/k");
    expect(f.binDirs).toBe("/b");
    expect(f.valid).toEqual([{ containerID: "x" }, { containerID: "y", ifName: "eth0" }, { containerID: "a" }, { containerID: "b", ifName: "eth1" }]);
    expect(f.json && f.apply).toBe(true);
  });
  test("reload: --dry-run, --watch, --interval (seconds, fractions allowed)", () => {
    expect(parseFlags("reload", ["--dry-run"], () => "", "/s").dryRun).toBe(true);
    const w = parseFlags("reload", ["--watch", "--interval=0.5"], () => "", "/s");
    expect([w.watch, w.intervalMs]).toEqual([true, 500]);
    expect(parseFlags("reload", ["--interval", "0"], () => "", "/s").intervalMs).toBe(0);
  });
  test("an empty --valid-file means: nothing is live (not: the cache decides)", () => {
    expect(parseFlags("gc", ["--valid-file", "f"], () => "\n# none\n", "/s").valid).toEqual([]);
  });
  test("usage errors name the flag", () => {
    expect(() => parse("--bogus")).toThrow(/unknown flag "--bogus"/);
    expect(() => parse("--conf-dir")).toThrow(/--conf-dir needs a value/);
    expect(() => parse("--valid", "a/")).toThrow(UsageError);
    expect(() => parseFlags("inspect", ["--apply"], () => "", "/s")).toThrow(/--apply is a flag of gc/);
    expect(() => parseFlags("gc", ["--watch"], () => "", "/s")).toThrow(/--watch is a flag of reload/);
    expect(() => parseFlags("reload", ["--interval", "soon"], () => "", "/s")).toThrow(/--interval: "soon" is not a number of seconds/);
    expect(() => parseFlags("reload", ["--watch", "--dry-run"], () => "", "/s")).toThrow(/exclude each other/);
    expect(() => parseValidFile("ok\nx y\n", "f")).toThrow(/f:2/);
  });
});

describe("networks", () => {
  test("conflist, single conf, bad files and duplicate names", () => {
    const dir = tmp();
    try {
      writeFileSync(join(dir, "10-a.conflist"), JSON.stringify({ name: "a", cniVersion: "1.0.0", plugins: [{ type: "bridge" }, { type: "portmap" }] }));
      writeFileSync(join(dir, "20-b.conf"), JSON.stringify({ name: "b", type: "ptp" }));
      writeFileSync(join(dir, "30-a.json"), JSON.stringify({ name: "a", type: "macvlan" }));
      writeFileSync(join(dir, "40-bad.conf"), "{");
      writeFileSync(join(dir, "README.md"), "not a config");
      const { networks, problems } = loadNetworks(dir);
      expect(networks.map((n) => [n.name, n.cniVersion, n.plugins.map((p) => p.type)])).toEqual([
        ["a", "1.0.0", ["bridge", "portmap"]],
        ["b", "0.1.0", ["ptp"]],
      ]);
      expect(problems.join("\n")).toMatch(/30-a\.json: network "a" already defined/);
      expect(problems.join("\n")).toMatch(/40-bad\.conf: not JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("a list without types is refused", () => {
    expect(parseNetworkFile("f", JSON.stringify({ name: "x", plugins: [{}] }))).toMatch(/no "type"/);
    expect(parseNetworkFile("f", JSON.stringify({ plugins: [{ type: "a" }] }))).toMatch(/no network name/);
  });
});

/** A node in memory: files, iptables-save text, nft JSON and IFBs. */
function fakeReaders(files: Record<string, string>, extra: Partial<SourceReaders> = {}): SourceReaders {
  const enoent = (p: string) => Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" });
  return {
    readDir(p) {
      const prefix = `${p}/`;
      const names = Object.keys(files).filter((f) => f.startsWith(prefix)).map((f) => f.slice(prefix.length).split("/")[0]!);
      if (names.length === 0) throw enoent(p);
      return [...new Set(names)];
    },
    readFile(p) {
      const t = files[p];
      if (t === undefined) throw enoent(p);
      return t;
    },
    iptablesSave: () => undefined,
    nftRuleset: () => undefined,
    links: () => [],
    ...extra,
  };
}

const NET = {
  name: "n1",
  cniVersion: "1.0.0",
  file: "/etc/cni/net.d/n1.conflist",
  plugins: [{ type: "bridge", ipam: { type: "host-local", dataDir: "/d" } }, { type: "portmap" }, { type: "bandwidth" }, { type: "tuning", dataDir: "/t" }],
};

describe("sources", () => {
  test("cache, reservations, iptables comments, address rules, nft, IFBs and tuning backups are grouped by attachment", async () => {
    const save = [
      "*nat",
      `-A POSTROUTING -s 10.9.0.2/32 -m comment --comment ${JSON.stringify(formatComment("n1", "c1"))} -j CNI-aaaa`,
      `-A CNI-aaaa -d 10.9.0.0/24 -m comment --comment ${JSON.stringify(formatComment("n1", "c1"))} -j ACCEPT`,
      `-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment ${JSON.stringify(`dnat ${formatComment("n1", "c2")}`)} -j CNI-DN-bbbb`,
      `-A POSTROUTING -m comment --comment ${JSON.stringify(formatComment("other", "c1"))} -j CNI-cccc`,
      "COMMIT",
    ].join("\n");
    const filter = ["*filter", "-A CNI-FORWARD -d 10.9.0.3/32 -j ACCEPT", "-A FORWARD -d 10.9.0.3/32 -j ACCEPT", "COMMIT"].join("\n");
    const nft = JSON.stringify({ nftables: [{ rule: { family: "ip", table: "cni_hostport", chain: "hostports", comment: "c2" } }, { rule: { family: "ip", table: "x", chain: "y" } }] });
    const r = fakeReaders(
      {
        "/k/results/n1-c1-eth0": JSON.stringify({ kind: "cniCacheV1", containerId: "c1", ifName: "eth0", networkName: "n1", netns: "/run/netns/c1", result: { ips: [{ address: "10.9.0.2/24" }] } }),
        "/k/results/n1x-c9-eth0": JSON.stringify({ kind: "cniCacheV1", containerId: "c9", ifName: "eth0", networkName: "n1x" }),
        "/d/n1/10.9.0.2": "c1\r\neth0",
        "/d/n1/10.9.0.3": "c2\r\neth0",
        "/d/n1/lock": "",
        "/d/n1/last_reserved_ip.0": "10.9.0.3",
        "/t/c2_eth0.json": "{}",
        "/t/c3_eth0.json": "{}",
      },
      {
        iptablesSave: (family, table) => (family === 6 ? "" : table === "nat" ? save : filter),
        nftRuleset: () => nft,
        links: (kind) => (kind !== "ifb" ? [] : [{ name: upstreamIfbName("n1", "c2"), alias: "cni-bandwidth c2 eth0" }, { name: upstreamIfbName("other", "c2"), alias: "cni-bandwidth c2 eth0" }, { name: "bwp999" }]),
      },
    );
    const st = await readNetworkState(NET, "/k", r, OWNERS);
    const byKey = Object.fromEntries([...st.attachments.values()].map((a) => [`${a.containerID}/${a.ifName}`, a]));
    expect(Object.keys(byKey).sort()).toEqual(["c1/eth0", "c2/eth0"]);
    expect(byKey["c1/eth0"]!.holdings.map((h) => `${h.kind}: ${h.what}`)).toEqual([
      "cache: /k/results/n1-c1-eth0",
      "host-local: /d/n1/10.9.0.2",
      "iptables: 1 rule in ipv4 table nat chain POSTROUTING",
      "iptables: 1 rule in ipv4 table nat chain CNI-aaaa",
    ]);
    expect([...byKey["c1/eth0"]!.netns]).toEqual(["/run/netns/c1"]);
    expect(byKey["c2/eth0"]!.holdings.map((h) => `${h.kind}: ${h.what}`)).toEqual([
      "host-local: /d/n1/10.9.0.3",
      `ifb: link ${upstreamIfbName("n1", "c2")}`,
      "iptables: 1 rule in ipv4 table nat chain CNI-HOSTPORT-DNAT",
      "iptables: 1 filter rule naming 10.9.0.3 (CNI-FORWARD)",
      "nftables: 1 rule in ip cni_hostport",
      "tuning: /t/c2_eth0.json",
    ]);
    expect(st.problems).toEqual([]);
  });
  test("an unreadable source is a problem of the report, not a failure", async () => {
    const st = await readNetworkState(NET, "/k", fakeReaders({}, { iptablesSave: () => { throw new Error("iptables-save exploded"); } }), OWNERS);
    expect(st.problems.some((p) => p.includes("iptables-save exploded"))).toBe(true);
  });
  test("a plugin's state source runs once per network with every plugin object naming it, as type or IPAM", async () => {
    const calls: string[] = [];
    const owners = new Map([
      ["host-local", { state: { phase: "discover" as const, read: (_st: NetworkState, ps: readonly Record<string, unknown>[]) => void calls.push(`host-local ${ps.length}`) } }],
      ["tuning", { state: { phase: "match" as const, read: (st: NetworkState) => void calls.push(`tuning after ${st.attachments.size}`) } }],
    ]);
    const net = { ...NET, plugins: [{ type: "tuning" }, ...NET.plugins, { type: "macvlan", ipam: { type: "host-local" } }] };
    const st = await readNetworkState(net, "/k", fakeReaders({ "/k/results/n1-c1-eth0": JSON.stringify({ kind: "cniCacheV1", containerId: "c1", ifName: "eth0", networkName: "n1" }) }), owners);
    expect(calls).toEqual(["host-local 2", "tuning after 1"]);
    expect(st.problems).toEqual([]);
  });
});

function seen(over: Partial<SeenAttachment>): SeenAttachment {
  return { containerID: "c", ifName: "eth0", holdings: [], addresses: new Set(), netns: new Set(), cached: false, ...over };
}

const view = (paths: string[], holders: Record<string, string>): NamespaceView => ({ exists: (p) => paths.includes(p), holder: (a) => holders[a] });

describe("liveness", () => {
  test("the operator's list decides alone", () => {
    const a = seen({ netns: new Set(["/gone"]) });
    expect(judge(a, [{ containerID: "c" }], view([], {})).state).toBe("live");
    expect(judge(a, [{ containerID: "c", ifName: "eth1" }], view([], {})).state).toBe("stale");
    expect(judge(a, [], view(["/gone"], {})).state).toBe("stale");
  });
  test("without a list: a recorded netns, then an address, else unknown", () => {
    expect(judge(seen({ netns: new Set(["/n"]) }), undefined, view(["/n"], {}))).toEqual({ state: "live", why: "netns /n exists" });
    expect(judge(seen({ netns: new Set(["/n"]) }), undefined, view([], {}))).toEqual({ state: "stale", why: "netns /n is gone" });
    expect(judge(seen({ addresses: new Set(["10.0.0.2"]) }), undefined, view([], { "10.0.0.2": "/proc/7/ns/net" })).state).toBe("live");
    expect(judge(seen({ addresses: new Set(["10.0.0.2"]) }), undefined, view([], {})).state).toBe("stale");
    expect(judge(seen({}), undefined, view([], {})).state).toBe("unknown");
  });

});

describe("gc", () => {
  const flags = (over: Partial<OperatorFlags>): OperatorFlags => ({ ...parseFlags("gc", ["--conf-dir", "-", "--cache-dir", "/k", "--bin-dir", "/b"], () => "", "/s"), confDir: "", ...over });

  function node(): { dir: string; env: OperatorEnv; calls: unknown[] } {
    const dir = tmp();
    mkdirSync(join(dir, "net.d"));
    writeFileSync(join(dir, "net.d", "n1.conflist"), JSON.stringify({ ...NET, file: undefined }));
    const files: Record<string, string> = { "/d/n1/10.9.0.2": "live\r\neth0", "/d/n1/10.9.0.3": "dead\r\neth0" };
    // Only a masquerade rule names this one: no netns, no address, so nobody can tell.
    const save = `*nat\n-A POSTROUTING -m comment --comment ${JSON.stringify(formatComment("n1", "nobody-knows"))} -j CNI-x\nCOMMIT\n`;
    const calls: unknown[] = [];
    const env: OperatorEnv = {
      owners: OWNERS,
      readers: fakeReaders(files, { iptablesSave: (family, table) => (family === 4 && table === "nat" ? save : "") }),
      view: () => view([], { "10.9.0.2": "/proc/9/ns/net" }),
      gc: async (net, valid, bin) => {
        calls.push({ net: net.name, valid, bin });
        delete files["/d/n1/10.9.0.3"];
        return net.plugins.map((p) => ({ plugin: String(p.type) }));
      },
    };
    return { dir, env, calls };
  }

  test("dry run: valid attachments are the live and unknown ones; nothing is called", async () => {
    const { dir, env, calls } = node();
    try {
      const { report, status } = await operate("gc", flags({ confDir: join(dir, "net.d") }), env);
      expect(status).toBe(0);
      const n = report.networks[0]!;
      expect(n.attachments.map((a) => `${a.containerID}/${a.ifName} ${a.state}`)).toEqual(["dead/eth0 stale", "live/eth0 live", "nobody-knows/ unknown"]);
      expect(n.gc).toEqual({ applied: false, validAttachments: [{ containerID: "live", ifname: "eth0" }, { containerID: "nobody-knows", ifname: "" }] });
      expect(calls).toEqual([]);
      expect(formatReport(report)).toContain("gc (dry run): would send 2 valid attachment(s) to bridge, portmap, bandwidth, tuning; 1 stale attachment(s) would be collected");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("--apply runs GC once per network and reads the node again", async () => {
    const { dir, env, calls } = node();
    try {
      const { report, status } = await operate("gc", flags({ confDir: join(dir, "net.d"), apply: true }), env);
      expect(calls).toEqual([{ net: "n1", valid: [{ containerID: "live", ifname: "eth0" }, { containerID: "nobody-knows", ifname: "" }], bin: "/b" }]);
      expect(report.networks[0]!.gc!.remaining).toEqual([]);
      expect(status).toBe(0);
      expect(formatReport(report)).toContain("gc: 1 stale attachment(s) collected");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("--apply fails (status 1) when a stale attachment survives or a plugin fails", async () => {
    const { dir, env } = node();
    try {
      env.gc = async (net) => net.plugins.map((p) => ({ plugin: String(p.type), ...(p.type === "portmap" ? { error: "boom" } : {}) }));
      const { report, status } = await operate("gc", flags({ confDir: join(dir, "net.d"), apply: true }), env);
      expect(status).toBe(1);
      expect(report.networks[0]!.gc!.remaining!.map((a) => a.containerID)).toEqual(["dead"]);
      expect(formatReport(report)).toContain("gc portmap: failed: boom");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an operator's exact pair is sent even when nothing of it was seen", () => {
    const v = validAttachments({ name: "n", file: "", plugins: [], attachments: [], problems: [] }, flags({ valid: [{ containerID: "x", ifName: "net1" }, { containerID: "y" }] }));
    expect(v).toEqual([{ containerID: "x", ifname: "net1" }]);
  });

  test("each plugin's GC config carries the list's name, a GC-capable version and the attachments under both keys (as libcni)", () => {
    expect(gcConfig({ ...NET, cniVersion: "0.4.0" }, { type: "portmap", capabilities: { portMappings: true } }, [{ containerID: "a", ifname: "eth0" }])).toEqual({
      type: "portmap",
      capabilities: { portMappings: true },
      name: "n1",
      cniVersion: "1.1.0",
      "cni.dev/valid-attachments": [{ containerID: "a", ifname: "eth0" }],
      "cni.dev/attachments": [{ containerID: "a", ifname: "eth0" }],
    });
  });
});
