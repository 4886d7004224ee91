/**
 * The agent's metrics (`cni-plugins serve --metrics-address`, docs/observability.md) as an operator
 * reads them: a real Prometheus (test/harness/prometheus.ts) scrapes the agent while a burst of
 * pods goes through the shims, and every check is PromQL through Prometheus's HTTP API.
 *
 * The calls: 12 bridge+host-local ADDs in their own namespaces (two waves, a scrape between them,
 * so rate() over the duration histogram has an increase to work on), 3 bridge ADDs failing on
 * purpose (code 7: a bad mtu; code 4: no CNI_IFNAME; code 6: not JSON; all three fail before IPAM,
 * so no host-local call), CHECK of 4 pods and DEL of 4, 3 loopback ADDs, and two calls the agent
 * does not serve: one refused (its caller is in another network namespace; it runs standalone) and
 * one made by the standalone executable itself. Both report to the agent, so both are counted.
 *
 * Expected `cni_plugin_calls_total` by (plugin, command, code), computed from the answers: each
 * bridge call that got to IPAM (ADD, CHECK, DEL here: all that did not fail on their environment or
 * config) is also one host-local call of the same command and outcome (in-process delegation).
 *
 * IPAM: host-local never hands out the network address, the broadcast address (the default
 * rangeEnd is broadcast−1: shared/ipam/range.ts canonicalizeRange) nor the range's gateway (the
 * default gateway is network+1, skipped by shared/ipam/candidates.ts iterateCandidates), so for
 * the /24 here used + free = 256 − 3 = 253. (shared/ipam/range.ts allocatableCount counts 254: it
 * does not subtract the gateway.)
 */
import { describe, expect, test } from "bun:test";
import { existsSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { startAgent, type RunningAgent } from "../harness/agent.ts";
import { bridgeConfig, bridgePorts, reservationFiles } from "../harness/bridge-helpers.ts";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { describeRun, execPlugin, type PluginInvocation, type PluginRun } from "../harness/exec-plugin.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { MULTI_CALL_BINARY } from "../harness/paths.ts";
import { freeLoopbackPort, PROMETHEUS_BINARY, startPrometheus, type RunningPrometheus, type Vector } from "../harness/prometheus.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

const NETWORK = "metrics-net";
const SUBNET = "10.87.0.0/24";
const BRIDGE = "mtrbr0";
/** 256 addresses − network − broadcast − gateway (see the file comment). */
const HANDED_OUT_AT_MOST = 253;

function via(socket: string, inv: PluginInvocation): PluginInvocation {
  return { ...inv, env: { ...inv.env, CNI_PLUGINS_SOCKET: socket } };
}

/** The CNI error code of a run as the metric labels it: "0" for success, else the error's code. */
function codeOf(r: PluginRun): string {
  if (r.status === 0) return "0";
  const code = r.json?.code;
  if (typeof code !== "number") throw new Error(`not a CNI error: ${describeRun(r)}`);
  return String(code);
}

/** The calls made, as `plugin command code` -> count. */
class Tally {
  readonly counts = new Map<string, number>();
  add(plugin: string, command: string, code: string): void {
    const key = `${plugin} ${command} ${code}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
  /** A call and what it delegated in-process (`delegates`: the IPAM plugin, when IPAM was reached). */
  record(plugin: string, command: string, r: PluginRun, delegates: string[] = []): PluginRun {
    const code = codeOf(r);
    this.add(plugin, command, code);
    for (const d of delegates) this.add(d, command, code);
    return r;
  }
  table(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort(([a], [b]) => a.localeCompare(b)));
  }
}

/** A vector as `label label ... = value` lines (sorted), to compare whole answers. */
function asTable(v: Vector, labels: string[]): Record<string, number> {
  return Object.fromEntries(v.map((s) => [labels.map((l) => s.metric[l] ?? "").join(" "), s.value] as const).sort(([a], [b]) => a.localeCompare(b)));
}

/** The single value of a query that must answer exactly one sample. */
async function one(prom: RunningPrometheus, promql: string): Promise<number> {
  const v = await prom.query(promql);
  if (v.length !== 1) throw new Error(`${promql}: ${v.length} samples, expected 1: ${JSON.stringify(v)}`);
  return v[0]!.value;
}

/**
 * Polls `read` (after a scrape each time) until it deep-equals `expected`, within `ms`; answers
 * the last reading (the caller asserts it, so a mismatch shows the difference).
 */
async function settled<T>(prom: RunningPrometheus, read: () => Promise<T>, expected: T, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const got = await read();
    if (Bun.deepEquals(got, expected) || Date.now() > end) return got;
    await prom.waitForScrapes(1);
  }
}

/**
 * Starts the agent with its metrics on a free loopback port (another pick when the port was taken
 * meanwhile), and waits until GET /metrics answers.
 */
async function startAgentWithMetrics(): Promise<{ agent: RunningAgent; target: string }> {
  let agent: RunningAgent | undefined;
  let target = "";
  for (let attempt = 1; agent === undefined; attempt++) {
    target = `127.0.0.1:${await freeLoopbackPort()}`;
    try {
      agent = await startAgent(["--max-workers", "8", "--metrics-address", target]);
    } catch (err) {
      if (attempt >= 3 || !/in use/i.test((err as Error).message)) throw err;
    }
  }
  const end = Date.now() + 10_000;
  for (;;) {
    const res = await fetch(`http://${target}/metrics`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    if (res !== undefined) {
      const body = await res.text();
      expect(`HTTP ${res.status} ${res.headers.get("content-type")}`).toStartWith("HTTP 200 text/plain");
      expect(body).toContain("# TYPE cni_agent_workers gauge");
      return { agent, target };
    }
    if (Date.now() > end) throw new Error(`nothing answers on http://${target}/metrics; agent log:\n${agent.log()}`);
    await Bun.sleep(50);
  }
}

describe.skipIf(!sandboxed())("agent metrics, scraped by a real Prometheus", () => {
  useFixtureCleanup();

  test("a burst of pods through the shims: calls by plugin/command/code, durations, phases, IPAM, workers, refusals, queue", async () => {
    expect(existsSync(PROMETHEUS_BINARY)).toBe(true); // test/setup-host.sh installs the package prometheus
    const { agent, target } = await startAgentWithMetrics();
    const prom = await startPrometheus([target], { scrapeIntervalS: 1 });
    await prom.waitForScrapes(1);

    const tally = new Tally();
    const dataDir = makeTempDir("cni-metrics-store-");
    const store = join(dataDir, NETWORK);
    const conf = bridgeConfig({ name: NETWORK, cniVersion: "1.0.0", bridge: BRIDGE, dataDir, subnets: [SUBNET], extra: { isGateway: true } });
    const nss: ContainerNetns[] = [];
    for (let i = 0; i < 12; i++) nss.push(await createContainerNetns());
    const pod = (i: number, command: string, extra: Partial<PluginInvocation> = {}): PluginInvocation =>
      via(agent.socket, { command, containerID: `metrics-${i}`, netns: nss[i]!.path, ifName: "eth0", config: conf, timeoutMs: 60_000, ...extra });
    const results: unknown[] = [];
    const addWave = async (from: number, to: number) => {
      const runs = await Promise.all(Array.from({ length: to - from }, (_, k) => execPlugin("bridge", pod(from + k, "ADD"))));
      runs.forEach((r, k) => {
        expect(describeRun(r)).toStartWith("exit=0");
        results[from + k] = r.json;
        tally.record("bridge", "ADD", r, ["host-local"]);
      });
    };

    // Wave 1, loopback ADDs, then a scrape: the bridge ADD series exist before wave 2 adds to them.
    await addWave(0, 6);
    for (let i = 0; i < 3; i++) {
      const r = await execPlugin("loopback", via(agent.socket, { command: "ADD", containerID: `metrics-lo-${i}`, netns: nss[i]!.path, ifName: "lo", config: { cniVersion: "1.0.0", name: "lo", type: "loopback" } }));
      expect(describeRun(r)).toStartWith("exit=0");
      tally.record("loopback", "ADD", r);
    }
    await prom.waitForScrapes(2);
    await addWave(6, 12);

    // ADDs failing on purpose, each before IPAM (so no host-local call).
    const failing: [PluginInvocation, number][] = [
      [pod(0, "ADD", { containerID: "metrics-bad-mtu", config: { ...conf, mtu: "abc" } }), 7],
      [pod(1, "ADD", { containerID: "metrics-no-ifname", ifName: undefined }), 4],
      [pod(2, "ADD", { containerID: "metrics-not-json", config: "{not json" }), 6],
    ];
    for (const [inv, code] of failing) {
      const r = await execPlugin("bridge", inv);
      expect(r.status).toBe(1);
      expect(r.json).toMatchObject({ code });
      tally.record("bridge", "ADD", r);
    }

    // CHECK pods 0..3, DEL pods 8..11.
    for (let i = 0; i < 4; i++) {
      const r = await execPlugin("bridge", pod(i, "CHECK", { config: { ...conf, prevResult: results[i] } }));
      expect(describeRun(r)).toStartWith("exit=0");
      tally.record("bridge", "CHECK", r, ["host-local"]);
    }
    for (let i = 8; i < 12; i++) {
      const r = await execPlugin("bridge", pod(i, "DEL"));
      expect(describeRun(r)).toStartWith("exit=0");
      tally.record("bridge", "DEL", r, ["host-local"]);
    }

    // Two calls the agent does not serve, each counted through the report socket:
    // (1) refused: the caller is in another network namespace; the shim then runs standalone.
    const elsewhere = await createContainerNetns();
    const refusedRun = await execPlugin(
      "loopback",
      via(agent.socket, { command: "ADD", containerID: "metrics-refused", netns: nss[3]!.path, ifName: "lo", config: { cniVersion: "1.0.0", name: "lo", type: "loopback" }, hostNetns: elsewhere.path }),
    );
    expect(describeRun(refusedRun)).toStartWith("exit=0");
    tally.record("loopback", "ADD", refusedRun);
    expect(agent.refused()).toHaveLength(1);
    expect(agent.refused()[0]).toContain("is in another network namespace");
    // (2) the standalone executable itself under a plugin name (no shim, no agent involved).
    const standaloneBin = makeTempDir("cni-metrics-standalone-");
    symlinkSync(MULTI_CALL_BINARY, join(standaloneBin, "loopback"));
    const standaloneRun = await execPlugin(
      "loopback",
      via(agent.socket, { binDir: standaloneBin, command: "ADD", containerID: "metrics-standalone", netns: nss[4]!.path, ifName: "lo", config: { cniVersion: "1.0.0", name: "lo", type: "loopback" } }),
    );
    expect(describeRun(standaloneRun)).toStartWith("exit=0");
    tally.record("loopback", "ADD", standaloneRun);

    const expected = tally.table();
    // What was run, written out (the tally must agree, or the test itself is wrong).
    expect(expected).toEqual({
      "bridge ADD 0": 12,
      "bridge ADD 4": 1,
      "bridge ADD 6": 1,
      "bridge ADD 7": 1,
      "bridge CHECK 0": 4,
      "bridge DEL 0": 4,
      "host-local ADD 0": 12,
      "host-local CHECK 0": 4,
      "host-local DEL 0": 4,
      "loopback ADD 0": 5,
    });

    // Reports are drained every ~100 ms; then Prometheus has to scrape.
    await Bun.sleep(1500);
    await prom.waitForScrapes(2);
    const calls = await settled(prom, async () => asTable(await prom.query("sum by (plugin, command, code) (cni_plugin_calls_total)"), ["plugin", "command", "code"]), expected);
    expect(calls).toEqual(expected);

    // Durations: the p99 of bridge ADD over 5 m is a finite positive number of seconds.
    const p99 = (await prom.query("histogram_quantile(0.99, sum by (le, plugin, command) (rate(cni_plugin_call_duration_seconds_bucket[5m])))")).find(
      (s) => s.metric.plugin === "bridge" && s.metric.command === "ADD",
    );
    expect(p99).toBeDefined();
    expect(Number.isFinite(p99!.value)).toBe(true);
    expect(p99!.value).toBeGreaterThan(0);
    expect(p99!.value).toBeLessThanOrEqual(60);
    // Every successful bridge ADD through the agent timed its link phase.
    expect(await one(prom, 'sum(cni_plugin_phase_duration_seconds_count{plugin="bridge",command="ADD",phase="link"})')).toBeGreaterThan(0);

    // IPAM: used = the reservations in the store (8: 12 ADDs − 4 DELs), used + free = 253.
    const ipam = async () =>
      asTable(await prom.query(`sum by (state) (cni_ipam_addresses{plugin="host-local",network="${NETWORK}",range="${SUBNET}"})`), ["state"]);
    const reserved = reservationFiles(store).length;
    expect(reserved).toBe(8);
    expect(await settled(prom, ipam, { free: HANDED_OUT_AT_MOST - reserved, used: reserved })).toEqual({ free: HANDED_OUT_AT_MOST - reserved, used: reserved });

    // The agent itself.
    expect(await one(prom, "sum(cni_agent_workers)")).toBeGreaterThanOrEqual(1);
    expect(await settled(prom, () => one(prom, "sum(cni_agent_calls_in_flight)"), 0)).toBe(0);
    expect(asTable(await prom.query("sum by (reason) (cni_agent_refusals_total) > 0"), ["reason"])).toEqual({ namespace: 1 });
    expect(await one(prom, "sum(cni_agent_queue_wait_seconds_count)")).toBeGreaterThan(0);
    // No restart happened (the counter may have no sample before its first one).
    expect(await one(prom, "sum(cni_agent_restarts_total) or vector(0)")).toBe(0);

    // Clean up through the plugins: DEL the other pods; the store and the gauge go to 0.
    for (let i = 0; i < 8; i++) {
      const r = await execPlugin("bridge", pod(i, "DEL"));
      expect(describeRun(r)).toStartWith("exit=0");
      tally.record("bridge", "DEL", r, ["host-local"]);
    }
    expect(reservationFiles(store)).toEqual([]);
    expect(bridgePorts(BRIDGE)).toEqual([]);
    await Bun.sleep(500);
    expect(await settled(prom, ipam, { free: HANDED_OUT_AT_MOST, used: 0 })).toEqual({ free: HANDED_OUT_AT_MOST, used: 0 });
    const after = tally.table();
    expect(after["bridge DEL 0"]).toBe(12);
    expect(await settled(prom, async () => asTable(await prom.query("sum by (plugin, command, code) (cni_plugin_calls_total)"), ["plugin", "command", "code"]), after)).toEqual(after);

    await prom.stop();
    expect(await agent.stop()).toBe(0);
    Bun.spawnSync(["ip", "link", "del", BRIDGE]);
  }, 240_000);
});
