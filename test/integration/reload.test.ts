/**
 * `cni-plugins reload` and `cni-plugins reload --watch` (operator/reload, docs/operator.md) with the
 * real things, on a node of the test's own (a network namespace: test/harness/reload-lab.ts):
 * bridge (ipMasq, spoof-check) + host-local → portmap → firewall pods with a hostPort serving HTTP,
 * a dead pod (its netns gone, its cache entry left), then each fault — `iptables -t nat -F`,
 * `iptables -t filter -F CNI-FORWARD`, `nft flush ruleset`, one of our nftables tables deleted,
 * `firewall-cmd --reload` and firewalld restarted with a real firewalld on a private system bus,
 * the bus itself restarted. With the watcher running, the hostPort answers again and the firewall
 * state equals the one before the fault (nothing twice, nothing for the dead pod) within 2 s — the
 * times are printed; without it, `cni-plugins reload` restores the same, and a second run changes
 * nothing. For iptables-nft, iptables-legacy (periodic check) and the nftables backends. DEL after
 * a reload leaves nothing, ours and the Go plugins' (1.1.1). Bad input, races with ADD and DEL,
 * and a watcher that cannot work.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { FileLock } from "../../shared/sys/flock.ts";
import { formatChainName } from "../../shared/firewall/naming.ts";
import { dnatChainName } from "../../meta/portmap/iptables-rules.ts";
import { useSuiteFixtureCleanup } from "../harness/cleanup.ts";
import type { NetworkConfigList } from "../harness/conflist.ts";
import { firewalldInstalled } from "../harness/firewall-firewalld.ts";
import { startHttpProbe, type HttpProbe } from "../harness/http-probe.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { ReloadNode, reloadArgv, ReloadWatcher, type Pod } from "../harness/reload-lab.ts";
import { DIST_BIN } from "../harness/paths.ts";
import { join } from "node:path";
import { sandboxed } from "../harness/sandbox.ts";

/** How soon the watcher must have restored everything (the issue's bound). */
const RESTORE_BOUND_MS = 2000;

interface Fault {
  name: string;
  run(node: ReloadNode): void | Promise<void>;
}

const recoveries: string[] = [];

function network(name: string, bridge: string, subnet: string, dataDir: string, opts: { nft?: boolean; firewall?: Record<string, unknown> } = {}): NetworkConfigList {
  return {
    cniVersion: "1.0.0",
    name,
    plugins: [
      {
        type: "bridge",
        bridge,
        isGateway: true,
        ipMasq: true,
        macspoofchk: true,
        ...(opts.nft ? { ipMasqBackend: "nftables" } : {}),
        ipam: { type: "host-local", dataDir, ranges: [[{ subnet }]] },
      },
      { type: "portmap", capabilities: { portMappings: true }, ...(opts.nft ? { backend: "nftables" } : {}) },
      { type: "firewall", ...(opts.firewall ?? {}) },
    ],
  };
}

/** Polls until the node's firewall state equals `want`; the time it took (ms after `since`). */
async function stateAgain(node: ReloadNode, want: string, since: number, timeoutMs: number): Promise<number> {
  const end = since + timeoutMs;
  for (;;) {
    const now = node.firewallState();
    if (now === want) return Date.now() - since;
    if (Date.now() > end) {
      expect(now).toBe(want); // shows the difference
      throw new Error("unreachable");
    }
    await Bun.sleep(40);
  }
}

/** The fault with the watcher running: restored within the bound; the times are recorded. */
async function faultWhileWatching(label: string, node: ReloadNode, probe: HttpProbe, baseline: string, fault: Fault): Promise<void> {
  const started = Date.now();
  await fault.run(node);
  const since = Date.now();
  const rulesMs = await stateAgain(node, baseline, since, RESTORE_BOUND_MS + 3000);
  const up = await probe.upAgain(started, since, RESTORE_BOUND_MS + 3000);
  const answered = up.wentDown
    ? `hostPort answered again ${up.ms} ms after the fault's command returned (down for ${up.outageMs} ms)`
    : "hostPort never stopped answering (probed every 20 ms)";
  const line = `reload --watch, ${label}, ${fault.name}: ${answered}; rules equal to before after ${rulesMs} ms`;
  recoveries.push(line);
  console.log(line);
  expect(up.ms).toBeLessThan(RESTORE_BOUND_MS);
  expect(rulesMs).toBeLessThan(RESTORE_BOUND_MS);
}

/** The fault without a watcher: one `cni-plugins reload` restores everything, a second changes nothing. */
async function faultThenReload(node: ReloadNode, probe: HttpProbe, baseline: string, fault: Fault): Promise<void> {
  await fault.run(node);
  const r = node.reload();
  expect(r.status, r.stdout + r.stderr).toBe(0);
  expect(node.firewallState()).toBe(baseline);
  await probe.upAgain(Date.now(), Date.now(), 3000);
  const again = node.reload("--json");
  expect(again.status, again.stderr).toBe(0);
  const report = JSON.parse(again.stdout) as { attachments: { state: string; parts: { state: string }[] }[] };
  expect(report.attachments.flatMap((a) => a.parts.map((p) => p.state)).filter((s) => s !== "ok")).toEqual([]);
  expect(node.firewallState()).toBe(baseline);
}

/** The plugins' DEL of `pod` with its cache entry left as ADD wrote it (the runtime has not removed it yet). */
async function delKeepingCache(node: ReloadNode, pod: Pod): Promise<string> {
  const cache = node.ours.cacheFilePath(pod.network.name, pod.rt);
  const kept = readFileSync(cache);
  const { atime, mtime } = statSync(cache);
  await node.ours.del(pod.network, pod.rt);
  writeFileSync(cache, kept);
  utimesSync(cache, atime, mtime);
  return cache;
}

/**
 * A pod whose runtime crashed after the plugins' DEL: its netns is gone, its cache entry stays.
 * Reload must write nothing for it.
 */
async function deadPod(node: ReloadNode, list: NetworkConfigList, hostPort: number): Promise<Pod> {
  const pod = await node.pod(list, hostPort);
  await delKeepingCache(node, pod);
  pod.ns.destroy();
  return pod;
}

/** The identifiers a pod's rules carry (chains, comments, addresses). */
function namesOf(pod: Pod): string[] {
  return [pod.containerID, `${pod.ip}/32`, `${pod.ip} `, formatChainName(pod.network.name, pod.containerID), dnatChainName(pod.network.name, pod.containerID)];
}

function scenario(
  label: string,
  opts: { tag: string; variant: "nft" | "legacy"; firewalld: boolean; nft: boolean; interval: string; faults: Fault[] },
): void {
  describe.skipIf(!sandboxed() || (opts.firewalld && !firewalldInstalled()))(`reload: ${label}`, () => {
    useSuiteFixtureCleanup();
    let node: ReloadNode;
    let pods: Pod[] = [];
    let dead: Pod;
    let probe: HttpProbe;
    let baseline = "";
    const tag = opts.tag;

    beforeAll(async () => {
      node = await ReloadNode.create({ variant: opts.variant, firewalld: opts.firewalld });
      const a = network(`rl-${tag}-a`, `rl${tag}a`.slice(0, 15), "10.231.1.0/24", node.dataDir, { nft: opts.nft, firewall: { backend: opts.nft ? "nftables" : "iptables" } });
      node.addNetwork(a);
      pods.push(await node.pod(a, 18080));
      if (opts.firewalld) {
        // firewall without a backend: firewalld runs, so ADD binds the address to its trusted zone.
        const b = network(`rl-${tag}-b`, `rl${tag}b`.slice(0, 15), "10.231.2.0/24", node.dataDir);
        node.addNetwork(b);
        pods.push(await node.pod(b, 18081));
      }
      dead = await deadPod(node, a, 18082);
      probe = await startHttpProbe(node.ns.path, "10.231.1.1", 18080);
      await probe.upAgain(Date.now(), Date.now(), 5000);
      baseline = node.firewallState();
    }, 60_000);

    afterAll(() => {
      probe?.stop();
      pods = [];
    });

    test("the node holds each pod's rules once and nothing for the dead pod; a reload changes nothing", () => {
      for (const pod of pods) expect(node.linesNaming(pod.containerID).length + node.linesNaming(pod.ip).length).toBeGreaterThan(0);
      expect(node.linesNaming(...namesOf(dead))).toEqual([]);
      if (opts.firewalld) expect(baseline).toContain(`${pods[1]!.ip}/32`);
      const r = node.reload("--json");
      expect(r.status, r.stderr).toBe(0);
      const report = JSON.parse(r.stdout) as { attachments: { containerID: string; state: string; why: string }[] };
      const states = Object.fromEntries(report.attachments.map((x) => [x.containerID, x.state]));
      for (const pod of pods) expect(states[pod.containerID]).toBe("ok");
      expect(states[dead.containerID]).toBe("skipped");
      expect(node.firewallState()).toBe(baseline);
    });

    test("--dry-run after a flush names what is missing and changes nothing", async () => {
      const fault = opts.faults[0]!;
      await fault.run(node);
      const broken = node.firewallState();
      const r = node.reload("--dry-run");
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain("would restore");
      expect(r.stdout).toContain(pods[0]!.containerID);
      expect(node.firewallState()).toBe(broken);
      expect(node.reload().status).toBe(0);
      expect(node.firewallState()).toBe(baseline);
    });

    for (const fault of opts.faults) {
      test(`without a watcher: ${fault.name}, then cni-plugins reload`, async () => {
        await faultThenReload(node, probe, baseline, fault);
      }, 30_000);
    }

    test(`with --watch: every fault is repaired within ${RESTORE_BOUND_MS} ms`, async () => {
      const watcher = new ReloadWatcher(node, "--interval", opts.interval);
      try {
        await watcher.waitFor("watching (");
        if (opts.firewalld) await watcher.waitFor("watching firewalld on the D-Bus system bus");
        for (const fault of opts.faults) await faultWhileWatching(label, node, probe, baseline, fault);
        // Nothing keeps passes going once everything is in place: after the last repair has been
        // reported, its own writes' notifications restore nothing more.
        await watcher.quiet(300);
        const before = watcher.stdout;
        await Bun.sleep(700);
        expect(watcher.stdout.slice(before.length)).not.toContain("restored");
      } finally {
        expect(await watcher.stop()).toBe(0);
      }
      expect(watcher.stderr).not.toContain("keeps removing");
    }, 90_000);

    test("DEL after a reload leaves nothing of the pod (ours)", async () => {
      await opts.faults[0]!.run(node);
      expect(node.reload().status).toBe(0);
      const pod = pods[0]!;
      await node.ours.del(pod.network, pod.rt);
      expect(node.linesNaming(...namesOf(pod))).toEqual([]);
    });

    if (opts.firewalld && opts.variant === "nft") {
      test.skipIf(!hasGoPlugin("bridge") || !hasGoPlugin("portmap") || !hasGoPlugin("firewall"))("a Go plugin's DEL (1.1.1) after a reload leaves nothing of the pod", async () => {
        await opts.faults[0]!.run(node);
        expect(node.reload().status).toBe(0);
        const pod = pods[1]!;
        await node.go.del(pod.network, pod.rt);
        expect(node.linesNaming(...namesOf(pod))).toEqual([]);
      });
    }
  });
}

const flushNat = (tool: string): Fault => ({ name: `${tool} -t nat -F`, run: (n) => void n.must([tool, "-w", "-t", "nat", "-F"]) });
const flushForward = (tool: string): Fault => ({ name: `${tool} -t filter -F CNI-FORWARD`, run: (n) => void n.must([tool, "-w", "-t", "filter", "-F", "CNI-FORWARD"]) });
const nftFlush: Fault = { name: "nft flush ruleset", run: (n) => void n.must(["nft", "flush", "ruleset"]) };
const deleteTable = (family: string, table: string): Fault => ({ name: `nft delete table ${family} ${table}`, run: (n) => void n.must(["nft", "delete", "table", family, table]) });
const firewalldReload: Fault = { name: "firewall-cmd --reload", run: (n) => void n.must(["firewall-cmd", "--reload"]) };
const firewalldRestart: Fault = { name: "firewalld restarted", run: (n) => n.fwd!.restartFirewalld() };
const busRestart: Fault = { name: "D-Bus and firewalld restarted", run: (n) => n.fwd!.restartBus() };

scenario("iptables-nft", {
  tag: "nft",
  variant: "nft",
  firewalld: true,
  nft: false,
  interval: "60",
  // After `nft flush ruleset` firewalld has lost its own table and cannot reload: restarting it comes next.
  faults: [flushNat("iptables"), flushForward("iptables-nft"), deleteTable("bridge", "nat"), nftFlush, firewalldRestart, firewalldReload, busRestart],
});

scenario("iptables-legacy", {
  tag: "leg",
  variant: "legacy",
  firewalld: false,
  nft: false,
  interval: "0.5",
  faults: [flushNat("iptables-legacy"), flushForward("iptables-legacy")],
});

scenario("nftables backends", {
  tag: "nfb",
  variant: "nft",
  firewalld: false,
  nft: true,
  interval: "60",
  faults: [deleteTable("ip", "cni_hostport"), deleteTable("inet", "cni_plugins_masquerade"), deleteTable("inet", "cni_plugins_firewall"), nftFlush],
});

describe.skipIf(!sandboxed())("reload: bad input, races with ADD and DEL, a watcher that cannot work", () => {
  useSuiteFixtureCleanup();
  let node: ReloadNode;
  let list: NetworkConfigList;
  let pods: Pod[];

  beforeAll(async () => {
    node = await ReloadNode.create({ variant: "nft", firewalld: false });
    list = network("rl-race", "rlrace", "10.231.3.0/24", node.dataDir, { firewall: { backend: "iptables" } });
    node.addNetwork(list);
    pods = [await node.pod(list, 18090), await node.pod(list, 18091)];
  }, 60_000);

  /** `-A` lines that occur more than once (a rule written twice). */
  const duplicated = (): string[] => {
    const lines = node.firewallState().split("\n").filter((l) => l.startsWith("-A "));
    return lines.filter((l, i) => lines.indexOf(l) !== i);
  };

  test("a truncated cache file and one whose network uses a plugin not of this suite: named, skipped, not fatal", () => {
    const good = node.ours.cacheFilePath(list.name, pods[0]!.rt);
    const truncated = `${node.cacheDir}/results/rl-race-broken-eth0`;
    const text = readFileSync(good, "utf8");
    writeFileSync(truncated, text.slice(0, text.length / 2));
    const foreign = JSON.parse(text) as { config: string; networkName: string; containerId: string };
    foreign.networkName = "rl-foreign";
    foreign.containerId = "foreign-1";
    foreign.config = Buffer.from(JSON.stringify({ cniVersion: "1.0.0", name: "rl-foreign", plugins: [{ type: "flannel" }, { type: "tuning" }] })).toString("base64");
    const foreignFile = `${node.cacheDir}/results/rl-foreign-foreign-1-eth0`;
    writeFileSync(foreignFile, JSON.stringify(foreign));
    try {
      node.must(["iptables", "-w", "-t", "nat", "-F"]);
      const r = node.reload();
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain(`note: libcni cache ${truncated}: not JSON (truncated?)`);
      expect(r.stdout).toContain('network "rl-foreign" foreign-1/eth0: ok');
      expect(r.stdout).toContain('note: plugin "flannel" is not part of this suite: skipped');
      expect(node.linesNaming("foreign-1")).toEqual([]);
      expect(r.stdout).toMatch(new RegExp(`network "rl-race" ${pods[0]!.containerID}/eth0: restored`));
    } finally {
      rmSync(truncated);
      rmSync(foreignFile);
    }
  });

  test("a pod being deleted is not put back: DEL done, its cache entry and netns still there", async () => {
    const baseline = node.firewallState();
    const gone = await node.pod(list, 18092);
    const cache = await delKeepingCache(node, gone);
    node.must(["iptables", "-w", "-t", "nat", "-F"]);
    const r = node.reload();
    expect(r.status, r.stdout).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`${gone.containerID}/eth0: skipped: being deleted`));
    expect(node.linesNaming(...namesOf(gone))).toEqual([]);
    expect(node.firewallState()).toBe(baseline);
    rmSync(cache);
  });

  test("reload racing a DEL and an ADD (all waiting for the lock at once): nothing resurrected, nothing twice", async () => {
    node.must(["iptables", "-w", "-t", "nat", "-F"]);
    node.must(["iptables", "-w", "-t", "filter", "-F", "CNI-FORWARD"]);
    const lock = FileLock.open("/run/cni/reload/lock", 0o600);
    lock.lock();
    const dying = pods[1]!;
    const reload = Bun.spawn(["nsenter", `--net=${node.ns.path}`, "--", ...reloadArgv(node)], { stdout: "pipe", stderr: "pipe" });
    const del = node.ours.del(list, dying.rt);
    const add = node.pod(list, 18093);
    await Bun.sleep(300);
    lock.close();
    const [status, , added] = await Promise.all([reload.exited, del, add]);
    expect(status, await new Response(reload.stdout).text()).toBe(0);
    expect(node.linesNaming(...namesOf(dying))).toEqual([]);
    expect(duplicated()).toEqual([]);
    for (const live of [pods[0]!, added]) expect(node.linesNaming(live.containerID).length).toBeGreaterThan(0);
    const again = node.reload("--json");
    expect((JSON.parse(again.stdout) as { attachments: { parts: { state: string }[] }[] }).attachments.flatMap((a) => a.parts.map((p) => p.state)).filter((x) => x !== "ok")).toEqual([]);
  }, 30_000);

  test("run as the DaemonSet runs it: from a mount namespace of its own, through the exec shim into the node's", () => {
    const baseline = node.firewallState();
    node.must(["iptables", "-w", "-t", "nat", "-F"]);
    // The container's mount namespace; the shim joins the node's (this process's here, PID 1's there).
    const shim = join(DIST_BIN, "cni-plugins-shim");
    const r = node.run(["unshare", "--mount", "--propagation", "private", "--", shim, "--namespaces-of", String(process.pid), ...reloadArgv(node)]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("restored");
    expect(node.firewallState()).toBe(baseline);
  });

  test("a watcher that cannot work at all says why and exits 1; a usage error exits 2", () => {
    const r = node.run([...reloadArgv(node).slice(0, 2), "--watch", "--cache-dir", "/etc/passwd"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^cni-plugins reload: cannot work: .*\/etc\/passwd\/results/m);
    const u = node.run([...reloadArgv(node).slice(0, 2), "--bogus"]);
    expect(u.status).toBe(2);
    expect(u.stderr).toContain('unknown flag "--bogus"');
  });
});

afterAll(() => {
  if (recoveries.length > 0) console.log(`\nrecovery times with the watcher running:\n${recoveries.map((l) => `  ${l}`).join("\n")}`);
});
