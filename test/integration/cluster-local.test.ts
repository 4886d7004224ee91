/**
 * cluster-local on a real three-member etcd cluster (Debian's etcd-server), started by
 * test/harness/etcd-cluster.ts and stopped by PID afterwards.
 *
 * The lab: three "nodes" (network namespaces) whose `eth0` is a veth into one bridge of the test's
 * namespace, so they share one L2 network: the bridge also carries the etcd members' client address,
 * and each node's `eth0` is the master of its macvlan containers. Without a cluster-wide allocator,
 * such nodes would hand out the same addresses.
 *
 * - TLS cluster: 300 macvlan + cluster-local ADDs from the three nodes at once: every address
 *   unique, configured in its container, and every reservation in etcd a live attachment; a
 *   container on one node reaches one on another; every spec version's lifecycle; TLS set up wrong
 *   is code 7 naming the field.
 * - plain cluster: a member killed in the middle of a burst (every ADD unique or code 11 with
 *   nothing left); two members down (ADD 11, STATUS 50; back after a restart); GC on node A never
 *   touches node B; `cni-plugins inspect`/`gc` show this node's reservations; requested addresses,
 *   ADD retries, DEL of someone else's; bad input; the agent's IPAM gauge of the network, from
 *   calls it served and one run standalone on another node.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { registerCleanup, runAllCleanups } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { EtcdCluster } from "../harness/etcd-cluster.ts";
import { describeRun, execPlugin, type PluginInvocation, type PluginRun } from "../harness/exec-plugin.ts";
import { addrsOf } from "../harness/ip-oracle.ts";
import { pingFrom, resultIps } from "../harness/macvlan-helpers.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { startAgent } from "../harness/agent.ts";
import { DIST_BIN, MULTI_CALL_BINARY } from "../harness/paths.ts";
import { freeLoopbackPort } from "../harness/prometheus.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { ALL_SPEC_VERSIONS, hasCheck, hasStatusAndGc } from "../harness/versions.ts";
import { DEL_PREV_VARIANTS } from "../e2e/lib/del-prevresult.ts";

const LAB_BRIDGE = "clbr0";
const LAB_ADDR = "10.123.0.1";
const NODES = ["node-a", "node-b", "node-c"] as const;
type NodeName = (typeof NODES)[number];
const NET = "cl-net";
const POD_SUBNET = "10.124.0.0/22";

interface Node {
  name: NodeName;
  ns: ContainerNetns;
}

const nodes = new Map<NodeName, Node>();

function sh(argv: string[]): string {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")} failed: ${r.stderr.toString().trim()}`);
  return r.stdout.toString();
}

/** The bridge, and per node a netns whose eth0 is plugged into it. */
async function buildLab(): Promise<void> {
  sh(["ip", "link", "add", LAB_BRIDGE, "type", "bridge"]);
  registerCleanup(`bridge ${LAB_BRIDGE}`, () => void Bun.spawnSync(["ip", "link", "del", LAB_BRIDGE]));
  sh(["ip", "addr", "add", `${LAB_ADDR}/24`, "dev", LAB_BRIDGE]);
  sh(["ip", "link", "set", LAB_BRIDGE, "up"]);
  for (const [i, name] of NODES.entries()) {
    const ns = await createContainerNetns();
    const host = `cln${i}`;
    sh(["ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", String(ns.pid)]);
    sh(["ip", "link", "set", host, "master", LAB_BRIDGE, "up"]);
    const inNode = (...a: string[]) => sh(["nsenter", `--net=${ns.path}`, "--", ...a]);
    inNode("ip", "link", "set", "lo", "up");
    inNode("ip", "addr", "add", `10.123.0.${11 + i}/24`, "dev", "eth0");
    inNode("ip", "link", "set", "eth0", "up");
    nodes.set(name, { name, ns });
  }
}

function node(name: NodeName): Node {
  return nodes.get(name)!;
}

/** A cluster-local `ipam` object on `cluster` for `node`. */
function ipamConf(cluster: EtcdCluster, prefix: string, nodeName: string, extra: Record<string, unknown> = {}, etcd: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: "cluster-local", ranges: [[{ subnet: POD_SUBNET }]], ...extra, etcd: cluster.etcdConfig({ prefix, node: nodeName, ...etcd }) };
}

/** macvlan on the node's eth0 with cluster-local IPAM. */
function macvlanConf(cluster: EtcdCluster, prefix: string, nodeName: string, cniVersion = "1.1.0", ipam: Record<string, unknown> = {}): Record<string, unknown> {
  return { cniVersion, name: NET, type: "macvlan", master: "eth0", mode: "bridge", ipam: ipamConf(cluster, prefix, nodeName, ipam) };
}

/** The IPAM plugin alone (as an interface plugin delegates to it), with a config of its own. */
function ipamAlone(cluster: EtcdCluster, prefix: string, nodeName: string, cniVersion = "1.1.0", extra: Record<string, unknown> = {}, etcd: Record<string, unknown> = {}): Record<string, unknown> {
  return { cniVersion, name: NET, type: "cluster-local", ipam: ipamConf(cluster, prefix, nodeName, extra, etcd) };
}

/** Runs `type` inside a node's netns (its "host"). */
function onNode(n: NodeName, type: string, inv: PluginInvocation): Promise<PluginRun> {
  return execPlugin(type, { ...inv, hostNetns: node(n).ns.path, timeoutMs: 60_000 });
}

/** Runs `fn` over `items` with at most `limit` at a time; results in input order. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

interface Owner {
  containerID: string;
  ifname: string;
  node: string;
  ips: string[];
}

/** The owner records under a prefix, by `containerID/ifname`. */
async function owners(cluster: EtcdCluster, prefix: string): Promise<Map<string, Owner>> {
  const out = new Map<string, Owner>();
  for (const kv of await cluster.keys(`${prefix}${NET}/owners/`)) {
    const o = JSON.parse(kv.value) as Owner;
    out.set(`${o.containerID}/${o.ifname}`, o);
  }
  return out;
}

/** The reserved addresses under a prefix: address → `containerID/ifname@node`. */
async function reservedIps(cluster: EtcdCluster, prefix: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const kv of await cluster.keys(`${prefix}${NET}/ips/`)) {
    const r = JSON.parse(kv.value) as { containerID: string; ifname: string; node: string };
    out.set(kv.key.slice(`${prefix}${NET}/ips/`.length), `${r.containerID}/${r.ifname}@${r.node}`);
  }
  return out;
}

const ipOf = (cidr: string): string => cidr.split("/")[0]!;
let seq = 0;
const cid = (tag: string): string => `cl-${tag}-${process.pid}-${++seq}`;

/** One netns holder shared by the IPAM-only calls (they never enter it). */
let ipamNetns: ContainerNetns;

function ipamInv(command: string, containerID: string, config: unknown, extra: Partial<PluginInvocation> = {}): PluginInvocation {
  return { command, containerID, netns: ipamNetns.path, ifName: "eth0", config, timeoutMs: 60_000, ...extra };
}

describe.skipIf(!sandboxed())("cluster-local on a three-member etcd cluster", () => {
  beforeAll(async () => {
    await buildLab();
    ipamNetns = await createContainerNetns();
  });
  afterAll(() => runAllCleanups());

  describe("with TLS", () => {
    let cluster: EtcdCluster;
    beforeAll(async () => {
      cluster = await EtcdCluster.start({ basePort: 24790, listenAddress: LAB_ADDR, tls: true });
      registerCleanup("etcd cluster (TLS)", () => cluster.stopNow());
    });
    afterAll(() => cluster.stop());

    test("300 macvlan + cluster-local ADDs from three nodes at once: every address unique and configured, every reservation a live attachment", async () => {
      const prefix = "/burst/";
      const total = 300;
      const pods = await pool(Array.from({ length: total }, (_, i) => i), 16, async (i) => ({
        node: NODES[i % NODES.length]!,
        id: cid("burst"),
        ns: await createContainerNetns(),
      }));
      const runs = await pool(pods, 18, (p) =>
        onNode(p.node, "macvlan", { command: "ADD", containerID: p.id, netns: p.ns.path, ifName: "eth0", config: macvlanConf(cluster, prefix, p.node) }),
      );
      expect(runs.filter((r) => r.status !== 0).map(describeRun)).toEqual([]);
      const ips = runs.map((r) => ipOf(resultIps(r.json)[0]!.address));
      expect(new Set(ips).size).toBe(total);

      // Every reservation in etcd is one of these attachments, on the node that made it, and the
      // address is configured in that container.
      const recorded = await owners(cluster, prefix);
      expect(recorded.size).toBe(total);
      for (const [i, p] of pods.entries()) {
        expect(recorded.get(`${p.id}/eth0`)).toEqual({ containerID: p.id, ifname: "eth0", node: p.node, ips: [ips[i]!] });
      }
      const reserved = await reservedIps(cluster, prefix);
      expect([...reserved.keys()].sort()).toEqual([...ips].sort());
      const unconfigured = pods.filter((p, i) => !addrsOf(p.ns.path, "eth0").includes(`${ips[i]}/22`)).map((p) => p.id);
      expect(unconfigured).toEqual([]);

      // The nodes share one L2 network: a container on node-a reaches containers on node-b and node-c.
      expect(pingFrom(pods[0]!.ns.path, ips[1]!)).toBe(true);
      expect(pingFrom(pods[0]!.ns.path, ips[2]!)).toBe(true);

      // DEL of 30 of them at once releases exactly theirs.
      const gone = pods.slice(0, 30);
      const dels = await pool(gone, 15, (p) =>
        onNode(p.node, "macvlan", { command: "DEL", containerID: p.id, netns: p.ns.path, ifName: "eth0", config: macvlanConf(cluster, prefix, p.node) }),
      );
      expect(dels.filter((r) => r.status !== 0).map(describeRun)).toEqual([]);
      const after = await owners(cluster, prefix);
      expect(after.size).toBe(total - 30);
      expect(gone.some((p) => after.has(`${p.id}/eth0`))).toBe(false);
      expect((await reservedIps(cluster, prefix)).size).toBe(total - 30);
      await Promise.all(pods.map((p) => p.ns.destroy()));
      await cluster.deletePrefix(prefix);
    }, 240_000);

    for (const v of ALL_SPEC_VERSIONS) {
      test(`[${v}] ADD, ADD again (same addresses), ${hasCheck(v) ? "CHECK, " : ""}DEL, DEL again${hasStatusAndGc(v) ? ", STATUS" : ""}; dual-stack`, async () => {
        const prefix = `/life-${v}/`;
        const dual = v === "0.1.0" || v === "0.2.0" ? {} : { ranges: [[{ subnet: "10.125.0.0/24" }], [{ subnet: "fd12:5::/64" }]] };
        const conf = ipamAlone(cluster, prefix, "node-a", v, { routes: [{ dst: "0.0.0.0/0" }], ...dual });
        const id = cid("life");
        const first = expectResult(await execPlugin("cluster-local", ipamInv("ADD", id, conf)));
        expect(first.cniVersion).toBe(v);
        const again = expectResult(await execPlugin("cluster-local", ipamInv("ADD", id, conf)));
        expect(again).toEqual(first);
        const addresses = resultIps(first).map((x) => x.address);
        expect(addresses).toEqual(v === "0.1.0" || v === "0.2.0" ? ["10.124.0.2/22"] : ["10.125.0.2/24", "fd12:5::2/64"]);
        expect((await owners(cluster, prefix)).get(`${id}/eth0`)!.ips).toEqual(addresses.map(ipOf));
        if (hasCheck(v)) {
          expectSuccess(await execPlugin("cluster-local", ipamInv("CHECK", id, { ...conf, prevResult: first })), { silent: true });
          expectCniError(await execPlugin("cluster-local", ipamInv("CHECK", cid("none"), conf)), { code: 999, msg: "Failed to find address added by container" });
        }
        expectSuccess(await execPlugin("cluster-local", ipamInv("DEL", id, conf)), { silent: true });
        expect((await owners(cluster, prefix)).size).toBe(0);
        expect((await reservedIps(cluster, prefix)).size).toBe(0);
        expectSuccess(await execPlugin("cluster-local", ipamInv("DEL", id, conf)), { silent: true });
        if (hasStatusAndGc(v)) expectSuccess(await execPlugin("cluster-local", { command: "STATUS", config: conf }), { silent: true });
        await cluster.deletePrefix(prefix);
      });
    }

    test("DEL with no prevResult, `{}` or a prevResult without ips releases what the attachment holds (cni#1156)", async () => {
      const prefix = "/del-prev/";
      const conf = ipamAlone(cluster, prefix, "node-a", "1.1.0", {});
      for (const [variant, prevOf] of Object.entries(DEL_PREV_VARIANTS)) {
        const id = cid("delprev");
        const added = expectResult(await execPlugin("cluster-local", ipamInv("ADD", id, conf)));
        const prevResult = prevOf(added);
        const del = await execPlugin("cluster-local", ipamInv("DEL", id, prevResult === undefined ? conf : { ...conf, prevResult }));
        expect({ variant, status: del.status, stdout: del.stdout }).toEqual({ variant, status: 0, stdout: "" });
        expect((await owners(cluster, prefix)).size).toBe(0);
        expect((await reservedIps(cluster, prefix)).size).toBe(0);
      }
      await cluster.deletePrefix(prefix);
    });

    test("TLS set up wrong is code 7 naming the field: another CA, no client certificate, unreadable or broken files", async () => {
      const prefix = "/tls-bad/";
      const tls = cluster.tls!;
      const dir = makeTempDir("cl-tls-");
      const garbled = join(dir, "garbled.crt");
      writeFileSync(garbled, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n");
      const cases: [Record<string, unknown>, string][] = [
        [{ caFile: tls.otherCaFile }, "etcd.caFile"],
        [{ certFile: undefined, keyFile: undefined }, "etcd.certFile"],
        [{ keyFile: join(dir, "missing.key") }, `invalid etcd.keyFile: open ${join(dir, "missing.key")}: no such file or directory`],
        [{ caFile: join(dir) }, "invalid etcd.caFile"],
        [{ certFile: tls.keyFile }, "no PEM certificate"],
        [{ certFile: garbled }, `etcd.certFile ${garbled}`],
        [{ keyFile: join(cluster.dir, "server.key") }, "etcd.keyFile"],
      ];
      for (const [etcd, msg] of cases) {
        const conf = ipamAlone(cluster, prefix, "node-a", "1.1.0", {}, etcd);
        const ipam = conf.ipam as { etcd: Record<string, unknown> };
        for (const [k, val] of Object.entries(etcd)) if (val === undefined) delete ipam.etcd[k];
        const id = cid("tls");
        expectCniError(await execPlugin("cluster-local", ipamInv("ADD", id, conf)), { code: 7, msg });
      }
      expect(await cluster.keys(prefix)).toEqual([]);
    });
  });

  describe("without TLS", () => {
    let cluster: EtcdCluster;
    beforeAll(async () => {
      cluster = await EtcdCluster.start({ basePort: 25790, listenAddress: LAB_ADDR });
      registerCleanup("etcd cluster", () => cluster.stopNow());
    });
    afterAll(() => cluster.stop());

    test("a member killed in the middle of a burst: every ADD gets a unique address or fails with code 11 leaving nothing", async () => {
      const prefix = "/kill/";
      await cluster.makeLeader("m1"); // the first endpoint of every node, and the leader
      const total = 60;
      const ids = Array.from({ length: total }, () => cid("kill"));
      let done = 0;
      let killed: Promise<void> | undefined;
      const runs = await pool(ids, 12, async (id, i) => {
        const n = NODES[i % NODES.length]!;
        const r = await execPlugin("cluster-local", ipamInv("ADD", id, ipamAlone(cluster, prefix, n, "1.1.0", {}, { timeout: "8s", endpointTimeout: "1s" }), { hostNetns: node(n).ns.path }));
        if (++done === 15) killed = cluster.kill("m1");
        return r;
      });
      await killed;
      const ok = runs.flatMap((r, i) => (r.status === 0 ? [{ id: ids[i]!, ip: ipOf(resultIps(r.json)[0]!.address) }] : []));
      const failed = runs.flatMap((r, i) => (r.status === 0 ? [] : [{ id: ids[i]!, run: r }]));
      expect(failed.filter((f) => f.run.json?.code !== 11).map((f) => describeRun(f.run))).toEqual([]);
      expect(new Set(ok.map((o) => o.ip)).size).toBe(ok.length);
      expect(ok.length).toBeGreaterThan(total / 2);
      const recorded = await owners(cluster, prefix);
      expect([...recorded.keys()].sort()).toEqual(ok.map((o) => `${o.id}/eth0`).sort());
      for (const o of ok) expect(recorded.get(`${o.id}/eth0`)!.ips).toEqual([o.ip]);
      expect([...(await reservedIps(cluster, prefix)).keys()].sort()).toEqual(ok.map((o) => o.ip).sort());
      cluster.restart("m1");
      await cluster.waitHealthy();
      await cluster.deletePrefix(prefix);
    }, 120_000);

    test("two members down: ADD is code 11 naming the endpoints, STATUS 50; after a restart both work and nothing was left", async () => {
      const prefix = "/down/";
      const conf = ipamAlone(cluster, prefix, "node-a", "1.1.0", {}, { timeout: "1500ms", endpointTimeout: "500ms" });
      await cluster.kill("m1");
      await cluster.kill("m2");
      await cluster.waitNoLeader("m3");
      const id = cid("down");
      const add = expectCniError(await execPlugin("cluster-local", ipamInv("ADD", id, conf)), { code: 11, msg: "etcd is unavailable" });
      for (const ep of cluster.endpoints) expect(add.msg).toContain(ep);
      expect(add.msg).toContain("connection refused");
      expect(add.msg).toContain("no leader");
      expectCniError(await execPlugin("cluster-local", { command: "STATUS", config: conf }), { code: 50, msg: "etcd is unavailable" });
      cluster.restart("m1");
      cluster.restart("m2");
      await cluster.waitHealthy();
      expect(await cluster.keys(prefix)).toEqual([]);
      expectSuccess(await execPlugin("cluster-local", { command: "STATUS", config: conf }), { silent: true });
      const r = expectResult(await execPlugin("cluster-local", ipamInv("ADD", id, conf)));
      expect(resultIps(r).map((x) => x.address)).toEqual(["10.124.0.2/22"]);
      await cluster.deletePrefix(prefix);
    }, 60_000);

    test("the agent's cni_ipam_addresses of a cluster-local network equals the cluster's reservations after ADD, DEL and GC, whoever ran them", async () => {
      const prefix = "/gauge/";
      const port = await freeLoopbackPort();
      const agent = await startAgent(["--metrics-address", `127.0.0.1:${port}`]);
      const gauge = async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const value = (state: string) => {
          const line = text.split("\n").find((l) => l.startsWith(`cni_ipam_addresses{plugin="cluster-local",network="${NET}",range="${POD_SUBNET}",state="${state}"}`));
          return line === undefined ? undefined : Number(line.split(" ").pop());
        };
        return { used: value("used"), free: value("free") };
      };
      /** The /22 less its network, broadcast and gateway addresses. */
      const usable = 1024 - 3;
      const via = (inv: PluginInvocation): PluginInvocation => ({ ...inv, env: { ...inv.env, CNI_PLUGINS_SOCKET: agent.socket } });
      const ids = [cid("gg"), cid("gg"), cid("gg")];
      // Served by the agent (same namespaces), and one run standalone on another node, reported.
      for (const id of ids.slice(0, 2)) expectResult(await execPlugin("cluster-local", via(ipamInv("ADD", id, ipamAlone(cluster, prefix, "node-a")))));
      expectResult(await onNode("node-b", "cluster-local", via(ipamInv("ADD", ids[2]!, ipamAlone(cluster, prefix, "node-b")))));
      const settled = async (used: number) => {
        const deadline = Date.now() + 5000;
        let g = await gauge();
        while (g.used !== used && Date.now() < deadline) {
          await Bun.sleep(100);
          g = await gauge();
        }
        return g;
      };
      expect((await reservedIps(cluster, prefix)).size).toBe(3);
      expect(await settled(3)).toEqual({ used: 3, free: usable - 3 });
      expectSuccess(await execPlugin("cluster-local", via(ipamInv("DEL", ids[0]!, ipamAlone(cluster, prefix, "node-a")))), { silent: true });
      expect(await settled(2)).toEqual({ used: 2, free: usable - 2 });
      const gc = { ...ipamAlone(cluster, prefix, "node-a"), "cni.dev/valid-attachments": [] };
      expectSuccess(await execPlugin("cluster-local", via({ command: "GC", config: gc })), { silent: true });
      expect((await reservedIps(cluster, prefix)).size).toBe(1);
      expect(await settled(1)).toEqual({ used: 1, free: usable - 1 });
      await agent.stop();
      await cluster.deletePrefix(prefix);
    });

    test("GC on node A with A's valid attachments releases A's stale reservations and never touches node B's", async () => {
      const prefix = "/gc/";
      const a = [cid("gca"), cid("gca"), cid("gca")];
      const b = [cid("gcb"), cid("gcb")];
      for (const id of a) expectResult(await execPlugin("cluster-local", ipamInv("ADD", id, ipamAlone(cluster, prefix, "node-a"))));
      for (const id of b) expectResult(await execPlugin("cluster-local", ipamInv("ADD", id, ipamAlone(cluster, prefix, "node-b"))));
      const before = await owners(cluster, prefix);
      const gc = { ...ipamAlone(cluster, prefix, "node-a"), "cni.dev/valid-attachments": [{ containerID: a[0], ifname: "eth0" }] };
      expectSuccess(await execPlugin("cluster-local", { command: "GC", config: gc }), { silent: true });
      const after = await owners(cluster, prefix);
      expect([...after.keys()].sort()).toEqual([`${a[0]}/eth0`, ...b.map((id) => `${id}/eth0`)].sort());
      for (const id of b) expect(after.get(`${id}/eth0`)).toEqual(before.get(`${id}/eth0`));
      expect((await reservedIps(cluster, prefix)).size).toBe(3);
      // An empty list on B releases all of B's, and still nothing of A's.
      expectSuccess(await execPlugin("cluster-local", { command: "GC", config: { ...ipamAlone(cluster, prefix, "node-b"), "cni.dev/valid-attachments": [] } }), { silent: true });
      expect([...(await owners(cluster, prefix)).keys()]).toEqual([`${a[0]}/eth0`]);
      // Without the key GC releases nothing.
      expectSuccess(await execPlugin("cluster-local", { command: "GC", config: ipamAlone(cluster, prefix, "node-a") }), { silent: true });
      expect((await owners(cluster, prefix)).size).toBe(1);
      await cluster.deletePrefix(prefix);
    });

    test("cni-plugins inspect and gc on node A show and collect A's cluster-local reservations, not B's", async () => {
      const prefix = "/op/";
      const confDir = makeTempDir("cl-netd-");
      const cacheDir = makeTempDir("cl-cache-");
      mkdirSync(join(cacheDir, "results"));
      const list = { cniVersion: "1.1.0", name: NET, plugins: [{ type: "macvlan", master: "eth0", ipam: ipamConf(cluster, prefix, "node-a") }] };
      writeFileSync(join(confDir, "10-cl.conflist"), JSON.stringify(list));
      const live = await createContainerNetns();
      const liveId = cid("opa");
      const liveIp = ipOf(resultIps(expectResult(await onNode("node-a", "macvlan", { command: "ADD", containerID: liveId, netns: live.path, ifName: "eth0", config: macvlanConf(cluster, prefix, "node-a") })))[0]!.address);
      const deadId = cid("opa");
      expectResult(await execPlugin("cluster-local", ipamInv("ADD", deadId, ipamAlone(cluster, prefix, "node-a"))));
      const bId = cid("opb");
      expectResult(await execPlugin("cluster-local", ipamInv("ADD", bId, ipamAlone(cluster, prefix, "node-b"))));
      const operator = (...args: string[]) => {
        const argv = ["nsenter", `--net=${node("node-a").ns.path}`, "--", MULTI_CALL_BINARY, ...args, "--json", "--conf-dir", confDir, "--cache-dir", cacheDir, "--bin-dir", DIST_BIN];
        const p = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
        expect({ status: p.exitCode, stderr: p.stderr.toString() }).toMatchObject({ status: 0 });
        return JSON.parse(p.stdout.toString()).networks[0] as { attachments: { containerID: string; state: string; holdings: { kind: string; what: string }[] }[]; problems: string[] };
      };
      const seen = operator("inspect");
      expect(seen.problems).toEqual([]);
      expect(seen.attachments.map((x) => x.containerID).sort()).toEqual([liveId, deadId].sort());
      expect(seen.attachments.find((x) => x.containerID === liveId)).toMatchObject({ state: "live", holdings: [{ kind: "cluster-local", what: `etcd ${prefix}${NET}/owners/${liveId}/eth0 (${liveIp})` }] });
      expect(seen.attachments.find((x) => x.containerID === deadId)!.state).toBe("stale");
      const gc = operator("gc", "--apply");
      expect(gc.attachments.length).toBe(2);
      expect([...(await owners(cluster, prefix)).keys()].sort()).toEqual([`${liveId}/eth0`, `${bId}/eth0`].sort());
      expectSuccess(await onNode("node-a", "macvlan", { command: "DEL", containerID: liveId, netns: live.path, ifName: "eth0", config: macvlanConf(cluster, prefix, "node-a") }));
      await live.destroy();
      await cluster.deletePrefix(prefix);
    });

    test("requested addresses, ADD retries and DEL of another attachment", async () => {
      const prefix = "/req/";
      const conf = ipamAlone(cluster, prefix, "node-a", "1.1.0", { ranges: [[{ subnet: "10.126.0.0/29", exclude: ["10.126.0.3"] }]] });
      const one = cid("req");
      const viaArgs = expectResult(await execPlugin("cluster-local", ipamInv("ADD", one, conf, { args: "IP=10.126.0.5" })));
      expect(resultIps(viaArgs).map((x) => x.address)).toEqual(["10.126.0.5/29"]);
      const two = cid("req");
      expectCniError(await execPlugin("cluster-local", ipamInv("ADD", two, { ...conf, args: { cni: { ips: ["10.126.0.5"] } } })), {
        code: 999,
        msg: "failed to allocate for range 0: requested IP address 10.126.0.5 is not available in range set 10.126.0.1-10.126.0.6",
      });
      expectCniError(await execPlugin("cluster-local", ipamInv("ADD", two, { ...conf, args: { cni: { ips: ["10.126.0.3"] } } })), { code: 999, msg: "is excluded" });
      expectCniError(await execPlugin("cluster-local", ipamInv("ADD", two, { ...conf, args: { cni: { ips: ["10.99.0.3"] } } })), { code: 999, msg: "failed to allocate all requested IPs: 10.99.0.3" });
      expect((await owners(cluster, prefix)).size).toBe(1);
      // Round robin from the hint (after .5), skipping the excluded .3; the requested one on a retry.
      const got = [];
      for (let i = 0; i < 3; i++) got.push(resultIps(expectResult(await execPlugin("cluster-local", ipamInv("ADD", cid("req"), conf))))[0]!.address);
      expect(got).toEqual(["10.126.0.6/29", "10.126.0.2/29", "10.126.0.4/29"]);
      expectCniError(await execPlugin("cluster-local", ipamInv("ADD", cid("req"), conf)), { code: 999, msg: "no IP addresses available in range set: 10.126.0.1-10.126.0.6" });
      expectCniError(await execPlugin("cluster-local", { command: "STATUS", config: conf }), { code: 50, msg: "no IP addresses available" });
      expect(resultIps(expectResult(await execPlugin("cluster-local", ipamInv("ADD", one, conf, { args: "IP=10.126.0.5" }))))[0]!.address).toBe("10.126.0.5/29");
      expectCniError(await execPlugin("cluster-local", ipamInv("ADD", one, conf, { args: "IP=10.126.0.6" })), { code: 999, msg: "already holds 10.126.0.5, which is not the requested 10.126.0.6" });
      // DEL of the same container on another interface releases nothing of eth0's.
      expectSuccess(await execPlugin("cluster-local", ipamInv("DEL", one, conf, { ifName: "net1" })), { silent: true });
      expect((await owners(cluster, prefix)).has(`${one}/eth0`)).toBe(true);
      await cluster.deletePrefix(prefix);
    });

    test("bad input: no etcd, no endpoints, an endpoint that is not etcd, a dead one first, none reachable", async () => {
      const prefix = "/bad/";
      const id = cid("bad");
      const base = ipamAlone(cluster, prefix, "node-a");
      const ipam = base.ipam as Record<string, unknown>;
      const { etcd: _drop, ...noEtcd } = ipam;
      expectCniError(await execPlugin("cluster-local", ipamInv("ADD", id, { ...base, ipam: noEtcd })), { code: 7, msg: "IPAM config missing 'etcd' key" });
      expectCniError(await execPlugin("cluster-local", ipamInv("ADD", id, ipamAlone(cluster, prefix, "node-a", "1.1.0", {}, { endpoints: [] }))), { code: 7, msg: "etcd.endpoints is empty" });
      expectCniError(await execPlugin("cluster-local", ipamInv("ADD", id, ipamAlone(cluster, prefix, "node-a", "1.1.0", {}, { endpoints: ["ftp://x"] }))), { code: 7, msg: "etcd.endpoints[0]" });
      expectCniError(await execPlugin("cluster-local", ipamInv("ADD", id, ipamAlone(cluster, prefix, "node-a", "1.1.0", {}, { timeout: "soon" }))), { code: 7, msg: "invalid etcd.timeout" });

      const http = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("404 page not found\n", { status: 404 }) });
      registerCleanup("not-etcd server", () => void http.stop(true));
      const notEtcd = `http://127.0.0.1:${http.port}`;
      const wrong = expectCniError(await execPlugin("cluster-local", ipamInv("ADD", id, ipamAlone(cluster, prefix, "node-a", "1.1.0", {}, { endpoints: [notEtcd] }))), { code: 7, msg: "etcd.endpoints" });
      expect(wrong.msg).toContain(`${notEtcd}: answered HTTP 404 "404 page not found", not etcd's v3 API`);

      const dead = "http://127.0.0.1:1";
      const failover = expectResult(await execPlugin("cluster-local", ipamInv("ADD", id, ipamAlone(cluster, prefix, "node-a", "1.1.0", {}, { endpoints: [dead, notEtcd, ...cluster.endpoints] }))));
      expect(resultIps(failover).map((x) => x.address)).toEqual(["10.124.0.2/22"]);
      const unreachable = expectCniError(await execPlugin("cluster-local", ipamInv("ADD", cid("bad"), ipamAlone(cluster, prefix, "node-a", "1.1.0", {}, { endpoints: [dead], timeout: "600ms" }))), { code: 11 });
      expect(unreachable.msg).toContain(`${dead}: connection refused`);
      expect((await owners(cluster, prefix)).size).toBe(1);
      await cluster.deletePrefix(prefix);
    });
  });
});
