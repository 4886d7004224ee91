/**
 * `cni-plugins inspect` and `cni-plugins gc` (operator/, docs/operator.md) on a real node: a
 * bridge (ipMasq) + host-local → portmap network with one live pod and one whose netns vanished
 * without DEL (the leak a crashed runtime leaves). inspect tells them apart; gc without --apply
 * changes nothing; gc --apply collects the dead pod's reservation, masquerade chain and port
 * forwarding and leaves the live pod alone; with --valid the operator's list decides.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerCleanup, useFixtureCleanup } from "../harness/cleanup.ts";
import { ConflistRunner, type NetworkConfigList } from "../harness/conflist.ts";
import { createPersistentNetns, type PersistentNetns } from "../harness/netns.ts";
import { DIST_BIN, MULTI_CALL_BINARY } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

const NETWORK = "op-net";
const BRIDGE = "opbr0";
const SUBNET = "10.213.77.0/24";

interface Node {
  confDir: string;
  cacheDir: string;
  dataDir: string;
  list: NetworkConfigList;
  runner: ConflistRunner;
}

interface Pod {
  containerID: string;
  ns: PersistentNetns;
  ip: string;
}

function node(): Node {
  const confDir = makeTempDir("op-netd-");
  const cacheDir = makeTempDir("op-cache-");
  const dataDir = makeTempDir("op-ipam-");
  const list: NetworkConfigList = {
    name: NETWORK,
    cniVersion: "1.1.0",
    plugins: [
      { type: "bridge", bridge: BRIDGE, isGateway: true, ipMasq: true, ipam: { type: "host-local", dataDir, ranges: [[{ subnet: SUBNET }]] } },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
  };
  writeFileSync(join(confDir, "10-op.conflist"), JSON.stringify(list));
  registerCleanup(`bridge ${BRIDGE}`, () => void Bun.spawnSync(["ip", "link", "del", BRIDGE], { stderr: "ignore" }));
  return { confDir, cacheDir, dataDir, list, runner: new ConflistRunner({ path: [DIST_BIN], cacheDir }) };
}

let seq = 0;
async function pod(n: Node, hostPort: number): Promise<Pod> {
  const ns = createPersistentNetns();
  const containerID = `op-${process.pid}-${++seq}`;
  const result = (await n.runner.add(n.list, {
    containerID,
    netns: ns.path,
    ifName: "eth0",
    capabilityArgs: { portMappings: [{ hostPort, containerPort: 80, protocol: "tcp" }] },
  })) as { ips: { address: string }[] };
  // Only the namespace here (cleanups are synchronous); tests DEL what they keep (del() below), and
  // a rule left by a failed test goes with the lane's throwaway network namespace.
  registerCleanup(`netns of ${containerID}`, () => ns.destroy());
  return { containerID, ns, ip: result.ips[0]!.address.split("/")[0]! };
}

/** The runtime's DEL of a pod that is still attached. */
async function del(n: Node, p: Pod): Promise<void> {
  await n.runner.del(n.list, { containerID: p.containerID, netns: p.ns.path, ifName: "eth0" });
}

function operator(n: Node, ...args: string[]): { status: number; stdout: string; stderr: string } {
  const p = Bun.spawnSync([MULTI_CALL_BINARY, ...args, "--conf-dir", n.confDir, "--cache-dir", n.cacheDir, "--bin-dir", DIST_BIN], { stdout: "pipe", stderr: "pipe" });
  return { status: p.exitCode ?? -1, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

interface Report {
  networks: { name: string; attachments: { containerID: string; ifName: string; state: string; why: string; holdings: { kind: string; what: string }[] }[]; gc?: { calls?: { plugin: string; error?: string }[] } }[];
}

function inspect(n: Node, ...args: string[]): Report["networks"][number]["attachments"] {
  const run = operator(n, "inspect", "--json", ...args);
  expect(run.status).toBe(0);
  const report = JSON.parse(run.stdout) as Report;
  return report.networks.find((x) => x.name === NETWORK)!.attachments;
}

/** Every nat/filter rule naming the container (iptables-save, both variants as the plugins chose). */
function rulesOf(containerID: string): string[] {
  const out: string[] = [];
  for (const tool of ["iptables-save", "iptables-legacy-save"]) {
    const p = Bun.spawnSync([tool], { stdout: "pipe", stderr: "ignore" });
    if (p.exitCode === 0) out.push(...p.stdout.toString().split("\n").filter((l) => l.includes(`id: \\"${containerID}\\"`) || l.includes(`id: "${containerID}"`)));
  }
  return out;
}

describe.skipIf(!sandboxed())("cni-plugins inspect / gc", () => {
  useFixtureCleanup();

  test("inspect tells a live pod from one whose netns is gone; gc is a dry run until --apply, which collects only the dead one", async () => {
    const n = node();
    const live = await pod(n, 18080);
    const dead = await pod(n, 18081);
    dead.ns.destroy(); // the runtime died: no DEL ever came

    const seen = inspect(n);
    const a = seen.find((x) => x.containerID === live.containerID)!;
    const d = seen.find((x) => x.containerID === dead.containerID)!;
    expect(a.state).toBe("live");
    expect(a.why).toBe(`netns ${live.ns.path} exists`);
    expect(d.state).toBe("stale");
    expect(d.why).toBe(`netns ${dead.ns.path} is gone`);
    const kinds = (x: typeof d) => [...new Set(x.holdings.map((h) => h.kind))].sort();
    expect(kinds(d)).toEqual(["cache", "host-local", "iptables"]);
    expect(d.holdings.some((h) => h.what.includes("CNI-HOSTPORT-DNAT"))).toBe(true);
    expect(d.holdings.some((h) => h.what.includes("POSTROUTING"))).toBe(true);
    expect(kinds(a)).toEqual(["cache", "host-local", "iptables"]);

    const deadFile = join(n.dataDir, NETWORK, dead.ip);
    const liveFile = join(n.dataDir, NETWORK, live.ip);
    const deadRules = rulesOf(dead.containerID);
    const liveRules = rulesOf(live.containerID);
    expect(deadRules.length).toBeGreaterThan(0);

    const dry = operator(n, "gc");
    expect(dry.status).toBe(0);
    expect(dry.stdout).toContain("gc (dry run): would send 1 valid attachment(s) to bridge, portmap; 1 stale attachment(s) would be collected");
    expect(existsSync(deadFile)).toBe(true);
    expect(rulesOf(dead.containerID)).toEqual(deadRules);

    const applied = operator(n, "gc", "--apply");
    expect({ status: applied.status, stdout: applied.stdout, stderr: applied.stderr }).toMatchObject({ status: 0 });
    expect(applied.stdout).toContain("gc bridge: ok");
    expect(applied.stdout).toContain("gc portmap: ok");
    expect(applied.stdout).toContain("gc: 1 stale attachment(s) collected");
    expect(existsSync(deadFile)).toBe(false);
    expect(rulesOf(dead.containerID)).toEqual([]);
    expect(existsSync(liveFile)).toBe(true);
    expect(rulesOf(live.containerID)).toEqual(liveRules);
    await del(n, live);
    expect(existsSync(liveFile)).toBe(false);
  });

  test("with --valid, the operator's list decides: an unlisted pod is collected although its netns exists", async () => {
    const n = node();
    const keep = await pod(n, 18082);
    const drop = await pod(n, 18083);
    const validFile = join(makeTempDir("op-valid-"), "live.txt");
    writeFileSync(validFile, `# from crictl pods -q\n${keep.containerID}\n`);

    const seen = inspect(n, "--valid-file", validFile);
    expect(seen.find((x) => x.containerID === keep.containerID)!.state).toBe("live");
    expect(seen.find((x) => x.containerID === drop.containerID)).toMatchObject({ state: "stale", why: "not in the --valid list" });

    const applied = operator(n, "gc", "--apply", "--valid-file", validFile);
    expect({ status: applied.status, stdout: applied.stdout }).toMatchObject({ status: 0 });
    expect(existsSync(join(n.dataDir, NETWORK, drop.ip))).toBe(false);
    expect(rulesOf(drop.containerID)).toEqual([]);
    expect(existsSync(join(n.dataDir, NETWORK, keep.ip))).toBe(true);
    expect(rulesOf(keep.containerID).length).toBeGreaterThan(0);
    await del(n, keep);
  });

  test("without a cache entry, an address no namespace holds marks the attachment stale", async () => {
    const n = node();
    const live = await pod(n, 18084);
    const dead = await pod(n, 18085);
    dead.ns.destroy();
    const emptyCache = makeTempDir("op-nocache-");
    mkdirSync(join(emptyCache, "results"));
    const run = Bun.spawnSync([MULTI_CALL_BINARY, "inspect", "--json", "--conf-dir", n.confDir, "--cache-dir", emptyCache], { stdout: "pipe", stderr: "pipe" });
    expect(run.exitCode).toBe(0);
    const seen = (JSON.parse(run.stdout.toString()) as Report).networks[0]!.attachments;
    expect(seen.find((x) => x.containerID === live.containerID)).toMatchObject({ state: "live", why: `${live.ip} is configured in ${live.ns.path}` });
    expect(seen.find((x) => x.containerID === dead.containerID)).toMatchObject({ state: "stale", why: `no network namespace holds ${dead.ip}` });
    await del(n, live);
    await del(n, dead); // DEL after the netns vanished: releases the address and the rules
  });
});
