/**
 * Bad-input and fault battery (issue 15), one test per plugin: seeded fuzzed configs (test/harness/
 * fuzz.ts: wrong types, huge and negative numbers, deep nesting, NUL bytes, duplicate keys, cut
 * text, a 10 MB stdin), abused CNI_* variables, kill -9 at several points of ADD followed by DEL,
 * and a read-only or full dataDir. Every call must:
 * - end within CALL_TIMEOUT_MS (no hang) with exit status 0 or 1 (no signal, no crash);
 * - on status 1, print one CNI error object: a known code (the one the input decides, where it
 *   does), a non-empty message, and none of the JS runtime's own texts;
 * - on a successful ADD, be undone by a DEL of the same call, which must succeed.
 * After a plugin's cases, nothing may be left: links and addresses of the host and the container,
 * iptables / ip6tables / nft rules, host-local reservations and tuning backup files are compared
 * with a snapshot taken after one good ADD + DEL (which may leave what is meant to stay: a bridge,
 * top-level chains). The plugins' "host" is a network namespace of the battery's own, so nothing
 * they leave on purpose (a bridge, shared chains) reaches the other tests. Deterministic (SEED; only where a kill -9 lands depends on timing, and the
 * assertions hold wherever it lands), bounded (about 350 plugin calls).
 *
 * Plugins whose kernel feature this host lacks (ipvlan, vlan, dummy, vrf) still run: each ADD must
 * fail cleanly.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { execPlugin, type PluginInvocation, type PluginRun } from "../harness/exec-plugin.ts";
import { fuzzConfigs, seededRandom, type FuzzCase, type Mutation } from "../harness/fuzz.ts";
import { listAddrs, listLinks } from "../harness/ip-oracle.ts";
import { kernelFeature, type KernelFeature } from "../harness/kernel.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

const SEED = 0x15c0ffee;
const CALL_TIMEOUT_MS = 20_000;
const FUZZ_PER_PLUGIN = 8;
/** Every valid CNI error code (SPEC.md "Error", plus 50/51 for STATUS and 999). */
const CNI_CODES = new Set([1, 2, 3, 4, 5, 6, 7, 8, 11, 50, 51, 999]);
/** Texts of the JS runtime that must never reach a runtime (a plugin names the field instead). */
const RUNTIME_INTERNALS =
  /TypeError|RangeError|ReferenceError|SyntaxError:|is not a function|undefined is not|Cannot read propert|The argument '|Maximum call stack|\n\s+at /;
const MUTATIONS: Mutation[] = ["type", "type", "number", "number", "nest", "deep", "nul", "rawnul", "dup", "dup", "truncate"];
/** Chained plugins see this address on the container's eth0 (set up in their fixture). */
const CHAINED_IP = "10.239.0.2";
const CHAINED_GW = "10.239.0.1";

interface Fixture {
  /** The plugins' host (links, firewall rules). */
  host: ContainerNetns;
  ns: ContainerNetns;
  /** host-local store, tuning backups: directories whose files must not outlive DEL. */
  dataDir: string;
  /** A veth end in the test's netns, for plugins that need a master or a device. */
  hostLink: string;
  /** Host end of the chained plugins' pre-made container link. */
  chainHostVeth: string;
}

interface PluginCase {
  plugin: string;
  /** The config of one good ADD (cniVersion 1.0.0, or 1.1.0 for GC/STATUS). */
  config(f: Fixture): Record<string, unknown>;
  /** Needs a pre-made eth0 (10.239.0.2/24) in the container and a prevResult describing it. */
  chained?: boolean;
  /** Kill -9 at these many ms into ADD, then DEL. */
  killAt?: number[];
  /** dataDir faults to inject on ADD (the plugin must fail cleanly). */
  faults?: ("ro" | "full")[];
  /** Also run the 10 MB stdin case. */
  huge?: boolean;
  /** The link kind its good ADD needs; without it (this host) every ADD must fail cleanly. */
  kernel?: KernelFeature;
  /** Its good ADD fails by design here (why). */
  goodAddFails?: string;
  /** Creates a link named CNI_IFNAME: runs every CNI_IFNAME abuse (the kernel would rename `eth%d`). */
  createsLink?: boolean;
}

const hostLocal = (f: Fixture, subnet: string) => ({ type: "host-local", dataDir: f.dataDir, ranges: [[{ subnet }]] });

function prevResult(f: Fixture): Record<string, unknown> {
  return {
    cniVersion: "1.0.0",
    interfaces: [{ name: f.chainHostVeth }, { name: "eth0", sandbox: f.ns.path }],
    ips: [{ address: `${CHAINED_IP}/24`, gateway: CHAINED_GW, interface: 1 }],
  };
}

const PLUGINS: PluginCase[] = [
  {
    plugin: "bridge",
    config: (f) => ({ type: "bridge", bridge: "fbbr0", isGateway: true, ipMasq: true, ipam: hostLocal(f, "10.231.0.0/24") }),
    killAt: [5, 30, 80],
    faults: ["ro", "full"],
    huge: true,
    createsLink: true,
  },
  { plugin: "ptp", config: (f) => ({ type: "ptp", ipMasq: true, ipam: hostLocal(f, "10.232.0.0/24") }), killAt: [10, 60], createsLink: true },
  {
    plugin: "macvlan",
    config: (f) => ({ type: "macvlan", master: f.hostLink, ipam: hostLocal(f, "10.233.0.0/24") }),
    killAt: [10, 60],
    kernel: "macvlan",
    createsLink: true,
  },
  { plugin: "ipvlan", config: (f) => ({ type: "ipvlan", master: f.hostLink, ipam: hostLocal(f, "10.234.0.0/24") }), kernel: "ipvlan", createsLink: true },
  { plugin: "vlan", config: (f) => ({ type: "vlan", master: f.hostLink, vlanId: 7, ipam: hostLocal(f, "10.235.0.0/24") }), kernel: "vlan" },
  { plugin: "dummy", config: (f) => ({ type: "dummy", ipam: hostLocal(f, "10.236.0.0/24") }), kernel: "dummy" },
  { plugin: "tap", config: (f) => ({ type: "tap", ipam: hostLocal(f, "10.237.0.0/24") }), createsLink: true },
  { plugin: "host-device", config: (f) => ({ type: "host-device", device: f.hostLink }) },
  { plugin: "loopback", config: () => ({ type: "loopback" }) },
  { plugin: "host-local", config: (f) => ({ type: "host-local", ipam: hostLocal(f, "10.238.0.0/24") }), killAt: [5, 25], faults: ["ro", "full"], huge: true },
  { plugin: "static", config: () => ({ type: "static", ipam: { type: "static", addresses: [{ address: "10.240.0.2/24", gateway: "10.240.0.1" }] } }) },
  {
    plugin: "dhcp",
    config: (f) => ({ type: "macvlan", master: f.hostLink, ipam: { type: "dhcp", daemonSocketPath: join(f.dataDir, "no-daemon.sock") } }),
    goodAddFails: "no dhcp daemon listens on the socket",
  },
  {
    plugin: "portmap",
    chained: true,
    config: () => ({ type: "portmap", capabilities: { portMappings: true }, runtimeConfig: { portMappings: [{ hostPort: 18080, containerPort: 80, protocol: "tcp" }] } }),
    killAt: [10, 60],
  },
  { plugin: "firewall", chained: true, config: () => ({ type: "firewall", backend: "iptables" }) },
  {
    plugin: "tuning",
    chained: true,
    config: (f) => ({ type: "tuning", dataDir: join(f.dataDir, "tuning"), mtu: 1400, promisc: true, sysctl: { "net.core.somaxconn": "777" } }),
    killAt: [5, 30],
    faults: ["ro", "full"],
    huge: true,
  },
  {
    plugin: "bandwidth",
    chained: true,
    config: () => ({ type: "bandwidth", ingressRate: 100_000, ingressBurst: 50_000, egressRate: 100_000, egressBurst: 50_000 }),
    kernel: "ifb",
  },
  { plugin: "sbr", chained: true, config: () => ({ type: "sbr" }) },
  { plugin: "vrf", chained: true, config: () => ({ type: "vrf", vrfname: "fbvrf" }), kernel: "vrf" },
];

/** The `type` a call executes: dhcp is exercised through macvlan, as runtimes call it. */
const executable = (p: PluginCase): string => (p.plugin === "dhcp" ? "macvlan" : p.plugin);

/** Abused CNI_* variables, with the code the skel must answer (undefined: the plugin decides). */
const ENV_ABUSE: { label: string; env: Partial<PluginInvocation>; code: number | undefined }[] = [
  { label: "CNI_IFNAME=eth%d", env: { ifName: "eth%d" }, code: 4 },
  { label: "CNI_IFNAME empty", env: { ifName: "" }, code: 4 },
  { label: "CNI_IFNAME 16 bytes", env: { ifName: "a".repeat(16) }, code: 4 },
  { label: "CNI_IFNAME ..", env: { ifName: ".." }, code: 4 },
  { label: "CNI_IFNAME with /", env: { ifName: "a/b" }, code: 4 },
  { label: "CNI_IFNAME with a space", env: { ifName: "a b" }, code: 4 },
  { label: "CNI_IFNAME all", env: { ifName: "all" }, code: 4 },
  { label: "CNI_CONTAINERID empty", env: { containerID: "" }, code: 4 },
  { label: "CNI_CONTAINERID ../x", env: { containerID: "../x" }, code: 4 },
  { label: "CNI_CONTAINERID with a newline", env: { containerID: "a\nb" }, code: 4 },
  { label: "CNI_COMMAND=add (lower case)", env: { command: "add" }, code: 4 },
  { label: "CNI_COMMAND=BOGUS", env: { command: "BOGUS" }, code: 4 },
  { label: "CNI_PATH empty", env: { path: "" }, code: 4 },
  { label: "CNI_NETNS missing file", env: { netns: "/nonexistent/netns" }, code: undefined },
  { label: "CNI_NETNS not a netns", env: { netns: "/dev/null" }, code: undefined },
  { label: "CNI_NETNS the plugin's own", env: { netns: "/proc/self/ns/net" }, code: 8 },
  { label: "CNI_ARGS malformed", env: { args: "a=b=c;;=;IP=10.0.0.999" }, code: undefined },
  { label: "CNI_ARGS 100 kB", env: { args: `IgnoreUnknown=1;K=${"v".repeat(100_000)}` }, code: undefined },
];
/** Each plugin takes the next ENV_PER_PLUGIN cases of ENV_ABUSE in turn, so that together they run every case. */
const ENV_PER_PLUGIN = 2;

// ---- state snapshots ---------------------------------------------------------------------------

function run(argv: string[]): string {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return r.exitCode === 0 ? r.stdout.toString() : "";
}

/** Firewall state of netns `host` without counters and without the save tools' comment lines. */
function firewallState(host: string): string[] {
  const inHost = ["nsenter", `--net=${host}`, "--"];
  const lines: string[] = [];
  for (const tool of ["iptables-save", "ip6tables-save"]) {
    for (const l of run([...inHost, tool]).split("\n")) if (l !== "" && !l.startsWith("#")) lines.push(`${tool}: ${l.replace(/\[\d+:\d+\]/g, "")}`);
  }
  for (const l of run([...inHost, "nft", "list", "ruleset"]).split("\n")) if (l.trim() !== "") lines.push(`nft: ${l.trim()}`);
  return lines;
}

/** Regular files under `dir` (recursive), except host-local's lock and last_reserved_ip files. */
function storeFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string, prefix: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name), `${prefix}${e.name}/`);
      else if (e.name !== "lock" && !e.name.startsWith("last_reserved_ip.") && !e.name.endsWith(".sock")) out.push(`${prefix}${e.name}`);
    }
  };
  walk(dir, "");
  return out.sort();
}

interface Snapshot {
  hostLinks: string[];
  hostAddrs: string[];
  containerLinks: string[];
  containerAddrs: string[];
  firewall: string[];
  files: string[];
}

function snapshot(f: Fixture): Snapshot {
  const links = (ns: string | undefined) => listLinks(ns).map((l) => l.ifname).sort();
  const addrs = (ns: string | undefined) =>
    listAddrs(ns)
      .flatMap((l) => (l.addr_info ?? []).filter((a) => a.scope !== "link").map((a) => `${l.ifname} ${a.local}/${a.prefixlen}`))
      .sort();
  return {
    hostLinks: links(f.host.path),
    hostAddrs: addrs(f.host.path),
    containerLinks: links(f.ns.path),
    containerAddrs: addrs(f.ns.path),
    firewall: firewallState(f.host.path),
    files: storeFiles(f.dataDir),
  };
}

// ---- one call ----------------------------------------------------------------------------------

/** What a call answered, for the failure report. */
function describeCall(what: string, r: PluginRun): string {
  return `${what}: status=${r.status} signal=${r.signal} stdout=${JSON.stringify(r.stdout.slice(0, 400))} stderr=${JSON.stringify(r.stderr.slice(0, 400))}`;
}

/** The problems with one answer (empty when it is a proper CNI answer). */
function answerProblems(what: string, r: PluginRun, expectCode: number | undefined): string[] {
  if (r.signal !== null) return [`${describeCall(what, r)}: killed (hang or crash)`];
  if (r.status !== 0 && r.status !== 1) return [`${describeCall(what, r)}: exit status must be 0 or 1`];
  if (r.status === 0) return [];
  const e = r.json as { code?: unknown; msg?: unknown } | undefined;
  if (typeof e !== "object" || e === null || Array.isArray(e)) return [`${describeCall(what, r)}: no CNI error object`];
  const problems: string[] = [];
  if (typeof e.code !== "number" || !CNI_CODES.has(e.code)) problems.push(`${describeCall(what, r)}: bad code`);
  else if (expectCode !== undefined && e.code !== expectCode) problems.push(`${describeCall(what, r)}: code must be ${expectCode}`);
  if (typeof e.msg !== "string" || e.msg === "") problems.push(`${describeCall(what, r)}: empty msg`);
  else if (RUNTIME_INTERNALS.test(e.msg)) problems.push(`${describeCall(what, r)}: runtime internals in msg`);
  return problems;
}

function diffSnapshots(before: Snapshot, after: Snapshot): string[] {
  const out: string[] = [];
  for (const key of Object.keys(before) as (keyof Snapshot)[]) {
    const was = new Set(before[key]);
    const now = new Set(after[key]);
    for (const x of now) if (!was.has(x)) out.push(`${key}: left behind: ${x}`);
    for (const x of was) if (!now.has(x)) out.push(`${key}: removed: ${x}`);
  }
  return out;
}

// ---- the battery -------------------------------------------------------------------------------

describe.skipIf(!sandboxed())("fault battery: every plugin, hostile input and failing disks", () => {
  useFixtureCleanup();
  const rand = seededRandom(SEED);

  for (const [index, p] of PLUGINS.entries()) {
    test(`${p.plugin}`, async () => {
      const fixture = await makeFixture(p);
      const type = executable(p);
      const base = { cniVersion: "1.0.0", name: `fb-${p.plugin}`, ...p.config(fixture), ...(p.chained ? { prevResult: prevResult(fixture) } : {}) };
      const problems: string[] = [];
      const ifName = p.chained ? "eth0" : "eth1";
      let n = 0;
      const call = (inv: Partial<PluginInvocation>): Promise<PluginRun> =>
        execPlugin(type, {
          command: "ADD",
          containerID: `fb-${p.plugin}-${++n}`,
          netns: fixture.ns.path,
          ifName,
          timeoutMs: CALL_TIMEOUT_MS,
          hostNetns: fixture.host.path,
          ...inv,
        });

      /** ADD; a success is undone by the same DEL, which must succeed. */
      const addThenDel = async (what: string, inv: Partial<PluginInvocation>, expectCode: number | undefined): Promise<void> => {
        const containerID = inv.containerID ?? `fb-${p.plugin}-${++n}`;
        const add = await call({ ...inv, containerID });
        problems.push(...answerProblems(`${what} ADD`, add, expectCode));
        if (add.status !== 0) return;
        const { faultyDirs: _faults, ...delInv } = inv;
        const del = await call({ ...delInv, containerID, command: "DEL" });
        problems.push(...answerProblems(`${what} DEL after a successful ADD`, del, undefined));
        if (del.status !== 0) problems.push(describeCall(`${what}: DEL after a successful ADD failed`, del));
      };

      // A good ADD + DEL first: what it leaves on purpose (a bridge, top-level chains) is the baseline.
      const good = await call({ config: base });
      const goodMustWork = p.goodAddFails === undefined && (p.kernel === undefined || kernelFeature(p.kernel));
      if (good.status === 0) expect((await call({ command: "DEL", config: base, containerID: `fb-${p.plugin}-${n}` })).status).toBe(0);
      else if (goodMustWork) problems.push(describeCall("the good ADD must succeed", good));
      else problems.push(...answerProblems("good ADD (expected to fail here)", good, undefined));
      const before = snapshot(fixture);

      const mutations = p.huge ? [...MUTATIONS, "huge" as const] : MUTATIONS;
      const cases: FuzzCase[] = fuzzConfigs(base, rand, FUZZ_PER_PLUGIN, mutations);
      if (p.huge && !cases.some((c) => c.mutation === "huge")) cases.push(...fuzzConfigs(base, rand, 1, ["huge"]));
      for (const c of cases) await addThenDel(`fuzz ${c.label}`, { config: c.stdin }, c.expectCode);

      const ifNameAbuse = ENV_ABUSE.filter((a) => a.env.ifName !== undefined);
      const abuses = p.createsLink ? ifNameAbuse : [];
      for (let i = 0; i < ENV_PER_PLUGIN; i++) abuses.push(ENV_ABUSE[(index * ENV_PER_PLUGIN + i) % ENV_ABUSE.length]!);
      for (const abuse of abuses) await addThenDel(abuse.label, { config: base, ...abuse.env }, abuse.code);
      await addThenDel("cniVersion 9.9.9", { config: { ...base, cniVersion: "9.9.9" } }, 1);

      for (const ms of p.killAt ?? []) {
        const containerID = `fb-${p.plugin}-kill${ms}`;
        const add = await call({ config: base, containerID, timeoutMs: ms });
        if (add.signal === null) problems.push(...answerProblems(`ADD killed at ${ms} ms (finished first)`, add, undefined));
        const del = await call({ command: "DEL", config: base, containerID });
        if (del.status !== 0) problems.push(describeCall(`DEL after ADD killed at ${ms} ms`, del));
      }

      for (const fault of p.faults ?? []) {
        mkdirSync(fixture.dataDir, { recursive: true });
        if (p.plugin === "tuning") mkdirSync(join(fixture.dataDir, "tuning"), { recursive: true });
        const add = await call({ config: base, faultyDirs: [{ dir: fixture.dataDir, fault }] });
        problems.push(...answerProblems(`ADD on a ${fault} dataDir`, add, undefined));
        if (add.status === 0) problems.push(describeCall(`ADD on a ${fault} dataDir must fail`, add));
      }

      problems.push(...diffSnapshots(before, snapshot(fixture)));
      expect(problems).toEqual([]);
      await fixture.ns.destroy();
      await fixture.host.destroy();
    }, 120_000);
  }
});

let fixtures = 0;

/** `ip ARGS` in netns `path`. */
function ipIn(path: string, ...args: string[]): void {
  const r = Bun.spawnSync(["nsenter", `--net=${path}`, "--", "ip", ...args], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.toString()}`);
}

/**
 * A host and a container netns (lo up in both), a store dir, a spare veth end in the host and, for
 * chained plugins, eth0 (10.239.0.2/24, default route) in the container.
 */
async function makeFixture(p: PluginCase): Promise<Fixture> {
  fixtures++;
  const host = await createContainerNetns();
  const ns = await createContainerNetns();
  const f: Fixture = { host, ns, dataDir: makeTempDir("fault-battery-"), hostLink: `fbh${fixtures}`, chainHostVeth: `fbc${fixtures}` };
  for (const path of [host.path, ns.path]) ipIn(path, "link", "set", "lo", "up");
  ipIn(host.path, "link", "add", f.hostLink, "type", "veth", "peer", "name", `${f.hostLink}p`);
  ipIn(host.path, "link", "set", f.hostLink, "up");
  if (p.chained) {
    ipIn(host.path, "link", "add", f.chainHostVeth, "type", "veth", "peer", "name", "eth0", "netns", String(ns.pid));
    ipIn(host.path, "link", "set", f.chainHostVeth, "up");
    ipIn(ns.path, "addr", "add", `${CHAINED_IP}/24`, "dev", "eth0");
    ipIn(ns.path, "link", "set", "eth0", "up");
    ipIn(ns.path, "route", "add", "default", "via", CHAINED_GW);
  }
  return f;
}
