/**
 * The arm64 lane's differential suite (`bun test/run.ts arm64`): the arm64 build (CNI_TEST_BIN_DIR,
 * dist/arm64/bin, run by qemu-user through binfmt_misc with a Cortex-A53 CPU, ARMv8.0) against the
 * host's amd64 build (dist/bin), with the diff lane's comparison and NO difference excused: same
 * exit statuses, error codes, results, kernel and firewall state after ADD and after DEL.
 * - every row of diff-cases.ts this kernel and qemu-user can run (plugins, the bridge/ptp chains
 *   with portmap, firewall and tuning, the dhcp daemon of each build against dnsmasq, bad input),
 *   plus the bridge → portmap → firewall → tuning chain and tap; rows that need tc, routing rules
 *   or nf_tables are printed skips with the reason (aarch64-emulation.ts QEMU_USER_LACKS);
 * - STATUS and GC of every plugin;
 * - host-local's store written by one architecture and read, extended and emptied by the other;
 *   cluster-local's reservations in a real etcd cluster (TLS) likewise;
 * - the arm64 executable standalone (no agent) for loopback, bridge + host-local and static.
 * The arm64 shims are served by the arm64 agent of their node (test/harness/agent.ts, as in the
 * agent lanes); the lane fails if it served no call. Rows run in order on one node per side, reset
 * before each (lib/node.ts resetNode), so the agent starts once (an agent under emulation needs
 * seconds); a row that prepares its host gets fresh nodes.
 */
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { existsSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { pluginNames } from "../../registry/registry.ts";
import { runAllCleanups } from "../harness/cleanup.ts";
import type { NetworkConfigList } from "../harness/conflist.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { DIST_BIN, MULTI_CALL_BINARY, REPO_ROOT } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { runChain } from "./lib/chain.ts";
import { diffOrdered, formatDifference, normaliseResult } from "./lib/compare.ts";
import { diffRowBetween, logStepErrors } from "./lib/diff-run.ts";
import { createNode, resetNode, runOnNode, type Node } from "./lib/node.ts";
import { QEMU_USER_LACKS } from "../harness/aarch64-emulation.ts";
import { rowTest } from "./lib/plugins.ts";
import { requireKernel } from "../harness/kernel.ts";
import { ETCD_BINARY, EtcdCluster } from "../harness/etcd-cluster.ts";
import { execPlugin, type PluginRun } from "../harness/exec-plugin.ts";
import { DIFF_CASES, type DiffCase } from "./diff-cases.ts";

/** The host architecture's build: the reference. */
const HOST_BIN = join(REPO_ROOT, "dist", "bin");
const V = "1.0.0";

function elfMachine(path: string): string {
  const header = Bun.spawnSync(["readelf", "-h", path], { stdout: "pipe", stderr: "pipe" }).stdout.toString();
  return /Machine:\s*(.*)/.exec(header)?.[1]?.trim() ?? "unknown";
}

const skipReason = !sandboxed()
  ? "needs root in the arm64 lane's sandbox (bun test/run.ts arm64)"
  : DIST_BIN === HOST_BIN
    ? "CNI_TEST_BIN_DIR does not name another build (bun test/run.ts arm64 sets dist/arm64/bin)"
    : undefined;
if (skipReason !== undefined) process.stderr.write(`SKIP arch-diff: ${skipReason}\n`);

const hl = (dataDir: string, subnet: string) => ({ type: "host-local", dataDir, ranges: [[{ subnet }]], routes: [{ dst: "0.0.0.0/0" }] });

/** Why `row` cannot run under qemu-user, or undefined. */
function emulationReason(row: DiffCase): string | undefined {
  if (row.plugins.includes("bandwidth")) return QEMU_USER_LACKS.tc;
  if (row.plugins.includes("sbr") || row.plugins.includes("vrf")) return QEMU_USER_LACKS.rules;
  if (/macspoofchk/.test(row.name)) return QEMU_USER_LACKS.nfnetlink;
  return undefined;
}

/** The chain a Kubernetes bridge network uses: bridge → portmap → firewall → tuning (→ bandwidth). */
function kubernetesChain(withBandwidth: boolean): DiffCase {
  const bandwidth = withBandwidth ? { bandwidth: { ingressRate: 1000000, ingressBurst: 100000, egressRate: 1000000, egressBurst: 100000 } } : {};
  return {
    name: `bridge → portmap → firewall → tuning${withBandwidth ? " → bandwidth" : ""}`,
    plugins: ["bridge", "host-local", "portmap", "firewall", "tuning", ...(withBandwidth ? ["bandwidth"] : [])],
    capabilityArgs: { portMappings: [{ hostPort: 38181, containerPort: 80, protocol: "tcp" }], ...bandwidth },
    list: (c): NetworkConfigList => ({
      name: "ad-chain",
      cniVersion: V,
      plugins: [
        { type: "bridge", bridge: "adbr0", isGateway: true, ipMasq: true, ipam: hl(c.dataDir, "10.81.1.0/24") },
        { type: "portmap", snat: true, capabilities: { portMappings: true } },
        { type: "firewall", backend: "iptables" },
        { type: "tuning", mtu: 1400, sysctl: { "net.ipv4.conf.eth0.arp_notify": "1" } },
        ...(withBandwidth ? [{ type: "bandwidth", capabilities: { bandwidth: true } }] : []),
      ],
    }),
  };
}

/** Rows beyond diff-cases.ts: the Kubernetes chain (bandwidth included, and without it), and tap. */
const EXTRA_ROWS: DiffCase[] = [
  kubernetesChain(false),
  kubernetesChain(true),
  {
    name: "tap with host-local",
    plugins: ["tap", "host-local"],
    list: (c): NetworkConfigList => ({ name: "ad-tap", cniVersion: V, plugins: [{ type: "tap", mtu: 1400, ipam: hl(c.dataDir, "10.81.2.0/24") }] }),
  },
];

/** Why the cluster-local row cannot run: no etcd (test/setup-host.sh installs etcd-server). */
function requireEtcd(): string | undefined {
  return existsSync(ETCD_BINARY) ? undefined : `${ETCD_BINARY} is missing (Debian package etcd-server)`;
}

/** Why a row cannot run here (this kernel lacks a feature; qemu-user lacks one), or undefined. */
function rowReason(row: DiffCase): string | undefined {
  if (row.unsupported !== undefined) return row.unsupported;
  return (row.kernel && row.kernel.length > 0 ? requireKernel(...row.kernel) : undefined) ?? emulationReason(row);
}

describe.skipIf(skipReason !== undefined)("arm64 build against the amd64 build", () => {
  let nodes: { reference: Node; candidate: Node };

  beforeAll(async () => {
    expect(elfMachine(MULTI_CALL_BINARY)).toBe("AArch64");
    expect(elfMachine(join(DIST_BIN, "cni-plugins-shim"))).toBe("AArch64");
    nodes = { reference: await createNode(), candidate: await createNode() };
  });

  // The nodes live across the rows, so fixtures are cleaned once, after the last row (each row ends
  // its own namespaces); the nodes first, so that their agents stop with a summary in the lane's log.
  afterAll(async () => {
    await nodes?.reference.host.destroy();
    await nodes?.candidate.host.destroy();
    runAllCleanups();
  });

  for (const row of [...DIFF_CASES, ...EXTRA_ROWS]) {
    rowTest(`arm64: ${row.name}`, rowReason(row), async () => {
      resetNode(nodes.reference);
      resetNode(nodes.candidate);
      const { reference, candidate, differences } = await diffRowBetween(row, HOST_BIN, DIST_BIN, nodes);
      logStepErrors(row, reference, candidate, differences);
      expect(differences.map(formatDifference)).toEqual([]);
      if (!row.badInput) expect(reference.add.ok).toBe(true);
    }, 180_000);
  }

  // STATUS and GC (spec 1.1.0) of every plugin, with a configuration it accepts or refuses alike.
  for (const type of pluginNames()) {
    rowTest(`arm64: STATUS and GC of ${type}`, undefined, async () => {
      const outcomes = async (binDir: string, node: Node) => {
        const config = JSON.stringify({
          cniVersion: "1.1.0",
          name: `ad-sg-${type}`,
          type,
          ipam: hl(makeTempDir("cni-arch-sg-"), "10.81.3.0/24"),
          "cni.dev/valid-attachments": [],
        });
        const inv = { containerID: "", netns: "", ifName: "", config, binDir };
        const status = await runOnNode(node, type, { ...inv, command: "STATUS" });
        const gc = await runOnNode(node, type, { ...inv, command: "GC" });
        return { status: { exit: status.status, out: status.json }, gc: { exit: gc.status, out: gc.json } };
      };
      const reference = await outcomes(HOST_BIN, nodes.reference);
      const candidate = await outcomes(DIST_BIN, nodes.candidate);
      expect(diffOrdered(reference, candidate, type).map(formatDifference)).toEqual([]);
    });
  }

  rowTest("arm64: host-local's store is shared with amd64 calls (ADD by one, DEL by the other)", undefined, async () => {
    const dataDir = makeTempDir("cni-arch-store-");
    const list: NetworkConfigList = { name: "ad-store", cniVersion: V, plugins: [{ type: "ptp", ipam: hl(dataDir, "10.81.4.0/24") }] };
    const a = await createContainerNetns();
    const b = await createContainerNetns();
    const node = nodes.candidate;
    resetNode(node);
    const attA = { containerID: "ad-store-arm64", netns: a.path, ifName: "eth0" };
    const attB = { containerID: "ad-store-amd64", netns: b.path, ifName: "eth0" };
    const addA = await runChain(node, DIST_BIN, list, attA, "ADD");
    const addB = await runChain(node, HOST_BIN, list, attB, "ADD");
    expect(addA.ok && addB.ok).toBe(true);
    const ip = (r: Record<string, unknown> | undefined) => (r?.ips as { address: string }[])[0]!.address;
    expect(ip(addA.result)).toBe("10.81.4.2/24");
    expect(ip(addB.result)).toBe("10.81.4.3/24");
    const store = join(dataDir, "ad-store");
    const reservations = () => readdirSync(store).filter((f) => /^\d/.test(f)).sort();
    expect(reservations()).toEqual(["10.81.4.2", "10.81.4.3"]);
    expect((await runChain(node, HOST_BIN, list, attA, "CHECK", addA.result)).ok).toBe(true);
    expect((await runChain(node, DIST_BIN, list, attB, "CHECK", addB.result)).ok).toBe(true);
    expect((await runChain(node, HOST_BIN, list, attA, "DEL", addA.result)).ok).toBe(true);
    expect((await runChain(node, DIST_BIN, list, attB, "DEL", addB.result)).ok).toBe(true);
    expect(reservations()).toEqual([]);
    await a.destroy();
    await b.destroy();
  }, 120_000);

  rowTest("arm64: cluster-local on a three-member etcd cluster over TLS, shared with amd64 calls", requireEtcd(), async () => {
    // In the suite's own namespace (the members listen on its loopback), standalone: no agent runs
    // here. One reservation by each architecture, checked and released by the other.
    const cluster = await EtcdCluster.start({ tls: true, basePort: 24790 });
    const container = await createContainerNetns();
    try {
      const prefix = "/cni-arch";
      const before = (await cluster.keys(prefix)).map((k) => k.key).sort();
      const conf = (node: string) => ({ cniVersion: "1.1.0", name: "ad-cl", type: "cluster-local", ipam: { type: "cluster-local", ranges: [[{ subnet: "10.81.8.0/24" }]], etcd: cluster.etcdConfig({ prefix, node }) } });
      const inv = (containerID: string, command: "ADD" | "CHECK" | "DEL" | "STATUS", binDir: string, prev?: unknown) => ({
        command,
        containerID,
        netns: container.path,
        ifName: "eth0",
        binDir,
        timeoutMs: 60_000,
        config: prev === undefined ? conf("node-1") : { ...conf("node-1"), prevResult: prev },
      });
      const ok = (r: PluginRun) => expect(`exit=${r.status} ${r.stdout.trim()} ${r.stderr.trim()}`).toStartWith("exit=0");
      const arm = await execPlugin("cluster-local", inv("ad-cl-arm64", "ADD", DIST_BIN));
      ok(arm);
      const amd = await execPlugin("cluster-local", inv("ad-cl-amd64", "ADD", HOST_BIN));
      ok(amd);
      const ipOf = (r: PluginRun) => (r.json as { ips: { address: string }[] }).ips[0]!.address;
      expect(new Set([ipOf(arm), ipOf(amd)]).size).toBe(2);
      expect((await cluster.keys(prefix)).length).toBeGreaterThanOrEqual(before.length + 2);
      ok(await execPlugin("cluster-local", inv("ad-cl-arm64", "CHECK", HOST_BIN, arm.json)));
      ok(await execPlugin("cluster-local", inv("ad-cl-amd64", "CHECK", DIST_BIN, amd.json)));
      ok(await execPlugin("cluster-local", inv("", "STATUS", DIST_BIN)));
      ok(await execPlugin("cluster-local", inv("ad-cl-arm64", "DEL", HOST_BIN, arm.json)));
      ok(await execPlugin("cluster-local", inv("ad-cl-amd64", "DEL", DIST_BIN, amd.json)));
      // the reservations are gone; the range's last-reserved marker stays, as host-local's file does
      const reservations = async () => (await cluster.keys(prefix)).map((k) => k.key).filter((k) => !k.endsWith("/last_reserved_ip.0")).sort();
      expect(await reservations()).toEqual(before);
    } finally {
      await container.destroy();
      await cluster.stop();
    }
  }, 180_000);

  rowTest("arm64: the executable standalone (no agent, no shim): loopback, bridge + host-local, static", undefined, async () => {
    // A directory of symbolic links to the arm64 executable: argv[0] names the plugin, and with no
    // shim there no node agent is asked (test/harness/agent.ts).
    const standalone = makeTempDir("cni-arch-standalone-");
    for (const type of ["loopback", "bridge", "host-local", "static"]) symlinkSync(MULTI_CALL_BINARY, join(standalone, type));
    const rows: DiffCase[] = [
      { name: "loopback", plugins: ["loopback"], ifName: "lo", list: () => ({ name: "ad-lo", cniVersion: V, plugins: [{ type: "loopback" }] }) },
      { name: "bridge", plugins: ["bridge", "host-local"], list: (c) => ({ name: "ad-sa", cniVersion: V, plugins: [{ type: "bridge", bridge: "adbr1", isGateway: true, ipMasq: true, ipam: hl(c.dataDir, "10.81.5.0/24") }] }) },
      { name: "static", plugins: ["bridge", "static"], list: () => ({ name: "ad-st", cniVersion: V, plugins: [{ type: "bridge", bridge: "adbr2", ipam: { type: "static", addresses: [{ address: "10.81.6.5/24", gateway: "10.81.6.1" }] } }] }) },
    ];
    const problems: string[] = [];
    for (const row of rows) {
      resetNode(nodes.reference);
      resetNode(nodes.candidate);
      const { differences, reference } = await diffRowBetween(row, HOST_BIN, standalone, nodes);
      problems.push(...differences.map((d) => `${row.name}: ${formatDifference(d)}`));
      if (!reference.add.ok) problems.push(`${row.name}: the reference ADD failed`);
    }
    expect(problems).toEqual([]);
  }, 180_000);

  rowTest("arm64: VERSION of every plugin", undefined, async () => {
    for (const type of pluginNames()) {
      const inv = { command: "VERSION", containerID: "", netns: "", ifName: "", config: '{"cniVersion":"1.1.0"}' };
      const reference = await runOnNode(nodes.reference, type, { ...inv, binDir: HOST_BIN });
      const candidate = await runOnNode(nodes.candidate, type, { ...inv, binDir: DIST_BIN });
      expect({ type, exit: candidate.status, out: normaliseResult(candidate.json) }).toEqual({ type, exit: reference.status, out: normaliseResult(reference.json) });
    }
  }, 120_000);
});
