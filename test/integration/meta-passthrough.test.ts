/**
 * prevResult pass-through goldens for the chained plugins: tuning,
 * portmap, bandwidth, sbr, firewall and loopback-with-prevResult must print the prevResult
 * re-serialised in the config's version — unknown fields dropped, keys in the version's order, IP
 * text canonical, `dns` in every version (`{}` when empty, as Go 1.1.1), 1.x with HEAD's sorted keys.
 *
 * Each case sets up a real attachment first (bridge + host-local, dual stack, through the conflist
 * runner) so the plugins that need kernel state (bandwidth's host veth, sbr's addresses, firewall
 * and portmap rules) do real work, then runs only the meta plugin's ADD with a crafted prevResult
 * built from test/fixtures/passthrough/prev-<family>.json (the real bridge, host veth and container
 * interface plus extra fields) and compares stdout with out-<version>.json. Placeholders
 * (`@HOST_VETH@`, MACs, `@NETNS@`, `@VERSION@`) are filled from the real attachment; the goldens
 * carry one trailing newline that the plugins do not print.
 *
 * The same cases run against the Go 1.1.1 binaries in /usr/lib/cni for every version they support:
 * byte-identical for 0.x; for 1.0.0 compared parsed, because 1.1.1 prints struct order where HEAD
 * (and we) sort keys (§1.7). 1.1.0 (HEAD-only fields: route mtu/advmss/priority/table/scope,
 * interface mtu/socketPath/pciID) has no Go counterpart.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerCleanup, useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError } from "../harness/cni-expect.ts";
import { ConflistRunner, versionAtLeast, type NetworkConfigList, type RuntimeConf } from "../harness/conflist.ts";
import { describeRun, execPlugin, type PluginRun } from "../harness/exec-plugin.ts";
import { goIfbName } from "../harness/bandwidth-helpers.ts";
import { ipJson } from "../harness/ip-oracle.ts";
import { setSysctlIn } from "../harness/meta-tuning-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { DIST_BIN, GO_BIN_DIR, hasGoPlugin, REPO_ROOT } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { ALL_SPEC_VERSIONS } from "../harness/versions.ts";

const FIXTURES = join(REPO_ROOT, "test", "fixtures", "passthrough");
const BRIDGE = "pt5br";
const NETWORK = "pt5";
/** Versions the Go 1.1.1 library knows. */
const GO_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"];

type Impl = "ours" | "go";

interface MetaCase {
  type: string;
  /** First spec version the plugin supports (upstream VERSION). */
  since: string;
  /** The plugin's config beyond type/name/cniVersion (some state-changing option, so it does real work). */
  conf: (dataDir: string) => Record<string, unknown>;
  capabilityArgs?: Record<string, unknown>;
  /**
   * bandwidth with egress shaping appends its IFB (`bwp…`, upstream's name) to the interfaces, as
   * upstream does (`result.Interfaces = append(…, ifb)`): the golden then gets that entry too.
   */
  appendsIfb?: boolean;
}

const CASES: MetaCase[] = [
  { type: "tuning", since: "0.1.0", conf: (d) => ({ dataDir: d, mtu: 1400, sysctl: { "net.core.somaxconn": "500" } }) },
  {
    type: "portmap",
    since: "0.1.0",
    conf: () => ({ capabilities: { portMappings: true }, snat: true }),
    capabilityArgs: { portMappings: [{ hostPort: 18080, containerPort: 80, protocol: "tcp" }] },
  },
  {
    type: "bandwidth",
    since: "0.3.0",
    conf: () => ({ ingressRate: 8_000_000, ingressBurst: 80_000, egressRate: 8_000_000, egressBurst: 80_000 }),
    appendsIfb: true,
  },
  { type: "sbr", since: "0.1.0", conf: () => ({}) },
  { type: "firewall", since: "0.4.0", conf: () => ({}) },
  { type: "loopback", since: "0.1.0", conf: () => ({}) },
];

/** The prevResult template serving `version` (one per result family; 1.1.0 adds HEAD-only fields). */
function inputTemplate(version: string): string {
  if (!versionAtLeast(version, "0.3.0")) return "prev-0.2.0.json";
  if (!versionAtLeast(version, "1.0.0")) return "prev-0.4.0.json";
  return version === "1.0.0" ? "prev-1.0.0.json" : "prev-1.1.0.json";
}

function fill(text: string, values: Record<string, string>): string {
  let out = text;
  for (const [key, value] of Object.entries(values)) out = out.replaceAll(`@${key}@`, value);
  const left = /@[A-Z_]+@/.exec(out);
  if (left !== null) throw new Error(`unfilled placeholder ${left[0]}`);
  return out;
}

/** The golden text for `version` with the attachment's values (the file's final newline removed). */
function golden(version: string, values: Record<string, string>): string {
  return fill(readFileSync(join(FIXTURES, `out-${version}.json`), "utf8"), values).replace(/\n$/, "");
}

/**
 * The golden with one more interface appended, in the version's key order (`name, mac` for 0.3/0.4,
 * sorted for 1.x). Re-printing with JSON.stringify(…, 4) keeps the golden's text: same layout as
 * Go's MarshalIndent, object keys in insertion order.
 */
function withInterface(goldenText: string, version: string, iface: { name: string; mac: string }): string {
  const parsed = JSON.parse(goldenText) as { interfaces: Record<string, string>[] };
  parsed.interfaces.push(versionAtLeast(version, "1.0.0") ? { mac: iface.mac, name: iface.name } : { name: iface.name, mac: iface.mac });
  return JSON.stringify(parsed, null, 4);
}

/** The IFB upstream's bandwidth creates for this attachment, with its MAC (`ip -j link`). */
function ifbOf(containerID: string): { name: string; mac: string } {
  const name = goIfbName(NETWORK, containerID);
  const [link] = ipJson<{ address: string }[]>(undefined, "link", "show", "dev", name);
  if (link === undefined) throw new Error(`no ifb ${name}`);
  return { name, mac: link.address };
}

interface Attachment {
  runner: ConflistRunner;
  list: NetworkConfigList;
  netns: string;
  rt: RuntimeConf;
  values: Record<string, string>;
}

/** bridge + host-local (dual stack) of `impl`, ADDed through the conflist runner; torn down after the test. */
async function attach(binDir: string, capabilityArgs: Record<string, unknown> | undefined): Promise<Attachment> {
  const ns = await createContainerNetns();
  // no DAD in the container: bridge's ADD waits for its IPv6 address to leave "tentative"
  setSysctlIn(ns.path, "/proc/sys/net/ipv6/conf/default/accept_dad", "0");
  const runner = new ConflistRunner({ path: [binDir], cacheDir: makeTempDir("pt5-cache-") });
  const list: NetworkConfigList = {
    name: NETWORK,
    cniVersion: "1.0.0",
    plugins: [
      {
        type: "bridge",
        bridge: BRIDGE,
        isGateway: true,
        ipam: {
          type: "host-local",
          dataDir: makeTempDir("pt5-ipam-"),
          ranges: [[{ subnet: "10.123.0.0/24" }], [{ subnet: "fd00:123::/64" }]],
          routes: [{ dst: "0.0.0.0/0" }, { dst: "::/0" }],
        },
      },
    ],
  };
  const rt: RuntimeConf = { containerID: `pt5-${process.pid}-${Math.random().toString(16).slice(2, 10)}`, netns: ns.path, ifName: "eth0" };
  if (capabilityArgs !== undefined) rt.capabilityArgs = capabilityArgs;
  // the netns holder's death removes the veth pair; only the bridge outlives an attachment
  registerCleanup(`bridge ${BRIDGE}`, () => {
    Bun.spawnSync(["ip", "link", "del", BRIDGE], { stderr: "ignore" });
  });
  const real = (await runner.add(list, rt)) as { interfaces: { name: string; mac: string }[] };
  const [br, hostVeth, eth0] = real.interfaces;
  if (br?.name !== BRIDGE || hostVeth === undefined || eth0?.name !== "eth0") {
    throw new Error(`unexpected bridge result: ${JSON.stringify(real)}`);
  }
  return {
    runner,
    list,
    netns: ns.path,
    rt,
    values: {
      BRIDGE_MAC_UPPER: br.mac.toUpperCase(),
      HOST_VETH: hostVeth.name,
      HOST_MAC: hostVeth.mac,
      CONTAINER_MAC: eth0.mac,
      NETNS: ns.path,
    },
  };
}

/** The meta plugin's config as libcni builds it, with the crafted prevResult (key order kept as written). */
function metaConfig(c: MetaCase, version: string, prevResult: unknown, rt: RuntimeConf, dataDir: string): Record<string, unknown> {
  const plugin = { type: c.type, ...c.conf(dataDir) };
  const list: NetworkConfigList = { name: NETWORK, cniVersion: version, plugins: [plugin] };
  const runner = new ConflistRunner({ cacheDir: dataDir });
  return runner.buildPluginConfig(list, plugin, prevResult as Record<string, unknown> | undefined, rt);
}

async function runMeta(binDir: string, command: string, a: Attachment, config: unknown, type: string): Promise<PluginRun> {
  return execPlugin(type, { command, containerID: a.rt.containerID, netns: a.netns, ifName: "eth0", config, binDir });
}

/**
 * One full case: attachment, meta ADD with the crafted prevResult (returned with the filled golden),
 * meta DEL (with prevResult from 0.4.0 on, as runtimes do), bridge DEL.
 */
async function passThrough(binDir: string, c: MetaCase, version: string): Promise<{ add: PluginRun; want: string }> {
  const a = await attach(binDir, c.capabilityArgs);
  const values = { ...a.values, VERSION: version };
  const prev = JSON.parse(fill(readFileSync(join(FIXTURES, inputTemplate(version)), "utf8"), values)) as unknown;
  const dataDir = makeTempDir("pt5-meta-");
  const add = await runMeta(binDir, "ADD", a, metaConfig(c, version, prev, a.rt, dataDir), c.type);
  let want = golden(version, values);
  if (c.appendsIfb === true && add.status === 0) want = withInterface(want, version, ifbOf(a.rt.containerID));
  const delConf = metaConfig(c, version, versionAtLeast(version, "0.4.0") ? prev : undefined, a.rt, dataDir);
  const del = await runMeta(binDir, "DEL", a, delConf, c.type);
  expect({ del: describeRun(del), status: del.status }).toMatchObject({ status: 0 });
  await a.runner.del(a.list, a.rt);
  return { add, want };
}

function supported(c: MetaCase, impl: Impl): string[] {
  const all = impl === "go" ? GO_VERSIONS : [...ALL_SPEC_VERSIONS];
  return all.filter((v) => versionAtLeast(v, c.since));
}

describe.skipIf(!sandboxed())("prevResult pass-through goldens (ours)", () => {
  useFixtureCleanup();
  // the throwaway host: no DAD on the bridge's IPv6 gateway either
  if (sandboxed()) writeFileSync("/proc/sys/net/ipv6/conf/default/accept_dad", "0");

  for (const c of CASES) {
    for (const v of supported(c, "ours")) {
      test(`${c.type} [${v}] prints the prevResult as out-${v}.json`, async () => {
        const { add, want } = await passThrough(DIST_BIN, c, v);
        expect({ status: add.status, stdout: add.stdout, stderr: add.stderr }).toEqual({ status: 0, stdout: want, stderr: add.stderr });
      }, 60_000);
    }
    // versions below the plugin's first one are refused as upstream does (code 1), before any work
    for (const v of ALL_SPEC_VERSIONS.filter((x) => !versionAtLeast(x, c.since))) {
      test(`${c.type} [${v}] is refused: incompatible CNI version`, async () => {
        const run = await execPlugin(c.type, {
          command: "ADD",
          containerID: "pt5-old",
          netns: "/proc/self/ns/net",
          ifName: "eth0",
          config: { cniVersion: v, name: NETWORK, type: c.type, ...c.conf("/nonexistent"), prevResult: { cniVersion: v } },
        });
        expectCniError(run, { code: 1, msg: "incompatible CNI versions" });
      });
    }
  }
});

describe.skipIf(!sandboxed() || !hasGoPlugin("tuning"))("prevResult pass-through goldens (Go 1.1.1 reference, verifying the goldens)", () => {
  useFixtureCleanup();

  for (const c of CASES) {
    for (const v of supported(c, "go")) {
      test(`Go ${c.type} [${v}] matches out-${v}.json${v === "1.0.0" ? " (parsed: 1.1.1 prints struct order)" : ""}`, async () => {
        const { add, want } = await passThrough(GO_BIN_DIR, c, v);
        expect({ status: add.status, out: add.stdout }).toMatchObject({ status: 0 });
        if (v === "1.0.0") expect(JSON.parse(add.stdout)).toEqual(JSON.parse(want));
        else expect(add.stdout).toBe(want);
      }, 60_000);
    }
  }
});

interface MinimalCase {
  name: string;
  cniVersion: string;
  prevResult: unknown;
  /** Expected result (printed as Go's 4-space MarshalIndent), or `error`: a substring of the message. */
  out?: unknown;
  /** Go 1.1.1's result where it differs from ours (1.x: struct order, not sorted keys). */
  goOut?: unknown;
  error?: string;
  /** A difference from Go that is a bug of ours: the case runs as test.failing until it is fixed. */
  knownBug?: string;
}

const MINIMAL = JSON.parse(readFileSync(join(FIXTURES, "minimal.json"), "utf8")) as MinimalCase[];
/** Pass-through plugins that need nothing but a netns for these prevResults (sbr needs addresses). */
const MINIMAL_PLUGINS = ["tuning", "portmap", "loopback"];

async function runMinimal(binDir: string, type: string, m: MinimalCase): Promise<PluginRun> {
  const ns = await createContainerNetns();
  return execPlugin(type, {
    command: "ADD",
    containerID: "pt5-min",
    netns: ns.path,
    ifName: "eth0",
    binDir,
    config: { cniVersion: m.cniVersion, name: NETWORK, type, dataDir: makeTempDir("pt5-min-"), prevResult: m.prevResult },
  });
}

describe.skipIf(!sandboxed())("prevResult edge cases (minimal.json)", () => {
  useFixtureCleanup();

  for (const m of MINIMAL) {
    for (const type of MINIMAL_PLUGINS) {
      const name = `${type} [${m.cniVersion}]: ${m.name}`;
      const body = async (): Promise<void> => {
        const run = await runMinimal(DIST_BIN, type, m);
        if (m.error !== undefined) {
          // ours: code 6 (decoding), shared/cni/result/prevresult.ts; Go: 999 with the same text
          expectCniError(run, { code: 6, msg: m.error });
        } else {
          expect({ status: run.status, stdout: run.stdout }).toEqual({ status: 0, stdout: JSON.stringify(m.out, null, 4) });
        }
      };
      if (m.knownBug !== undefined) test.failing(`${name} (known bug: ${m.knownBug})`, body);
      else test(name, body);

      // Go 1.1.1 stops at spec 1.0.0: no Go counterpart for a 1.1.0 case
      if (!GO_VERSIONS.includes(m.cniVersion)) continue;
      test.skipIf(!hasGoPlugin(type))(`Go ${name}`, async () => {
        const run = await runMinimal(GO_BIN_DIR, type, m);
        if (m.error !== undefined) {
          expectCniError(run, { code: 999, msg: m.error });
        } else {
          expect({ status: run.status, stdout: run.stdout }).toEqual({ status: 0, stdout: JSON.stringify(m.goOut ?? m.out, null, 4) });
        }
      });
    }
  }
});
