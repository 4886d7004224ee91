/**
 * The agent never wedges a node (docs/resident.md, "Failure modes and limits"), with the real shim,
 * agent and plugins:
 * - a bin directory of shim copies (not hard links): each ADD's IPAM is a nested call, which the
 *   agent refuses (it runs standalone), so a burst of ADDs cannot wait for each other's threads;
 * - every thread hung in an IPAM that never answers (an external one; the dhcp daemon with no DHCP
 *   server), or held by callers that never send stdin: an unrelated pod's call is refused at once
 *   and succeeds standalone; each hung ADD is ended when its shim is killed, and its DEL follows;
 * - a foreign IPAM that runs our host-local as its own child (the agent's grandchild);
 * - a call that outlives --call-timeout is ended with code 11, its delegate killed.
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { availableParallelism } from "node:os";
import type { Subprocess } from "bun";
import { startAgent, type RunningAgent } from "../harness/agent.ts";
import { defaultMaxWorkers } from "../../agent/flags.ts";
import { Frame } from "../../agent/protocol.ts";
import { exchange, requestFrames } from "../harness/agent-client.ts";
import { bridgeConfig, bridgePorts, reservationFiles } from "../harness/bridge-helpers.ts";
import { registerCleanup, useFixtureCleanup } from "../harness/cleanup.ts";
import { startDaemon } from "../harness/dhcp-lab.ts";
import { describeRun, execPlugin, pluginEnv, type PluginInvocation, type PluginRun } from "../harness/exec-plugin.ts";
import { findLink } from "../harness/ip-oracle.ts";
import { makeVethMaster } from "../harness/macvlan-helpers.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { DIST_BIN, MULTI_CALL_BINARY, SHIM_NAME } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

/** A socket path where nothing listens: the shim runs standalone. */
const NO_AGENT = "/run/cni/no-agent-here.sock";
/** The agent's default --max-workers here: the calls it takes to hold every thread. */
const MAX_WORKERS = defaultMaxWorkers(availableParallelism());

function via(socket: string, inv: PluginInvocation): PluginInvocation {
  return { ...inv, env: { ...inv.env, CNI_PLUGINS_SOCKET: socket } };
}

/** An executable script in `dir`. */
function script(dir: string, name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}

/**
 * An IPAM that never answers an ADD: it leaves `<dir>/started.<container>` holding the pid of the
 * process that hangs (so a test can wait for it and see it killed), and answers DEL at once.
 */
function hangingIpam(dir: string): void {
  script(dir, "hang-ipam", `if [ "$CNI_COMMAND" = ADD ]; then echo $$ > "${dir}/started.$CNI_CONTAINERID"; exec sleep 600; fi\nexit 0`);
}

function alive(pid: number): boolean {
  return existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
}

async function waitFor(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

/** A plugin call as a runtime makes it, kept running: the test kills it (as a runtime's timeout does). */
function startCall(type: string, inv: PluginInvocation): Subprocess<Uint8Array, "pipe", "pipe"> {
  const env = pluginEnv(inv, DIST_BIN);
  const proc = Bun.spawn([join(DIST_BIN, type)], { env, stdin: new TextEncoder().encode(JSON.stringify(inv.config)), stdout: "pipe", stderr: "pipe" });
  registerCleanup(`${type} pid ${proc.pid}`, () => proc.kill("SIGKILL"));
  return proc;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/**
 * Loopback ADDs of an unrelated pod, alternating standalone and through `agent`: the medians. The
 * agent must answer at once (a refusal, so the shim runs standalone), never after a wait.
 */
async function unrelatedLoopbackAdds(agent: RunningAgent, ns: ContainerNetns): Promise<{ standalone: number; throughAgent: number }> {
  const lo = (socket: string, i: number) =>
    execPlugin("loopback", via(socket, { command: "ADD", containerID: `unrelated-${i}`, netns: ns.path, ifName: "lo", config: { cniVersion: "1.0.0", name: "lo", type: "loopback" } }));
  const standalone: number[] = [];
  const throughAgent: number[] = [];
  for (let i = 0; i < 5; i++) {
    const a = await lo(NO_AGENT, i);
    const b = await lo(agent.socket, i);
    expect(describeRun(a)).toStartWith("exit=0");
    expect(describeRun(b)).toStartWith("exit=0");
    standalone.push(a.ms);
    throughAgent.push(b.ms);
  }
  return { standalone: median(standalone), throughAgent: median(throughAgent) };
}

/** The agent refused the unrelated calls for the reason that says no thread works. */
function expectRefusedAsStalled(agent: RunningAgent): void {
  const refusals = agent.refused().filter((l) => l.includes("/loopback"));
  expect(refusals.length).toBeGreaterThanOrEqual(5);
  for (const line of refusals) expect(line).toContain(`all ${MAX_WORKERS} worker threads run calls that wait on other processes`);
}

/**
 * With every thread of `agent` held: an unrelated pod's ADD is refused at once (never after the
 * 10 s admission bound) and succeeds standalone; then each held ADD's shim is killed, as a runtime's
 * timeout does, and its DEL (`del(i)`) succeeds through the agent within a second.
 */
async function expectUnwedged(what: string, agent: RunningAgent, adds: Subprocess[], del: (i: number) => Promise<PluginRun>): Promise<void> {
  const unrelated = await createContainerNetns();
  const { standalone, throughAgent } = await unrelatedLoopbackAdds(agent, unrelated);
  process.stderr.write(`NOTE ${what}: unrelated loopback ADD ${throughAgent.toFixed(1)} ms through the agent, ${standalone.toFixed(1)} ms standalone (medians of 5)\n`);
  expectRefusedAsStalled(agent);
  expect(throughAgent).toBeLessThan(standalone + 500);
  for (const [i, add] of adds.entries()) {
    add.kill("SIGKILL");
    await add.exited;
    const run = await del(i);
    expect(describeRun(run)).toStartWith("exit=0");
    expect(run.ms).toBeLessThan(1000);
  }
}

describe.skipIf(!sandboxed())("the agent never wedges a node", () => {
  useFixtureCleanup();

  test("a bin directory of shim copies: 20 concurrent bridge ADDs succeed (their IPAM calls run standalone), then a loopback ADD", async () => {
    const bin = makeTempDir();
    for (const name of ["bridge", "host-local", "loopback"]) copyFileSync(join(DIST_BIN, SHIM_NAME), join(bin, name));
    symlinkSync(MULTI_CALL_BINARY, join(bin, "cni-plugins"));
    const agent = await startAgent();
    const dataDir = makeTempDir();
    const conf = bridgeConfig({ name: "wedge-copies", cniVersion: "1.0.0", bridge: "wcbr0", dataDir, subnets: ["10.91.0.0/24"] });
    const nss: ContainerNetns[] = [];
    for (let i = 0; i < 20; i++) nss.push(await createContainerNetns());
    const inv = (i: number, command: "ADD" | "DEL") =>
      via(agent.socket, { command, containerID: `copies-${i}`, netns: nss[i]!.path, ifName: "eth0", config: conf, binDir: bin, timeoutMs: 20_000 });
    const adds = await Promise.all(nss.map((_, i) => execPlugin("bridge", inv(i, "ADD"))));
    expect(adds.filter((r) => r.status !== 0).map(describeRun)).toEqual([]);
    expect(agent.refused().some((l) => l.includes("/host-local") && l.includes("a nested call runs standalone"))).toBe(true);
    const lo = await execPlugin("loopback", via(agent.socket, { command: "ADD", containerID: "copies-lo", netns: nss[0]!.path, ifName: "lo", binDir: bin, config: { cniVersion: "1.0.0", name: "lo", type: "loopback" } }));
    expect(describeRun(lo)).toStartWith("exit=0");
    const dels = await Promise.all(nss.map((_, i) => execPlugin("bridge", inv(i, "DEL"))));
    expect(dels.filter((r) => r.status !== 0).map(describeRun)).toEqual([]);
    expect(bridgePorts("wcbr0")).toEqual([]);
    expect(reservationFiles(join(dataDir, "wedge-copies"))).toEqual([]);
  }, 120_000);

  test("every thread hung in an IPAM that never answers: an unrelated ADD is refused at once; each hung ADD's DEL follows its shim's kill", async () => {
    const ipamDir = makeTempDir();
    hangingIpam(ipamDir);
    const agent = await startAgent();
    const conf = bridgeConfig({ name: "wedge-hung", cniVersion: "1.0.0", bridge: "whbr0", dataDir: makeTempDir(), subnets: ["10.92.0.0/24"] });
    (conf as { ipam: Record<string, unknown> }).ipam = { type: "hang-ipam" };
    const path = `${ipamDir}:${DIST_BIN}`;
    const nss: ContainerNetns[] = [];
    for (let i = 0; i < MAX_WORKERS; i++) nss.push(await createContainerNetns());
    const inv = (i: number, command: "ADD" | "DEL") => via(agent.socket, { command, containerID: `hung-${i}`, netns: nss[i]!.path, ifName: "eth0", config: conf, path });
    const adds = nss.map((_, i) => startCall("bridge", inv(i, "ADD")));
    const started = (i: number) => join(ipamDir, `started.hung-${i}`);
    await waitFor("every ADD to hang in its IPAM", () => nss.every((_, i) => existsSync(started(i))));
    const hung = nss.map((_, i) => Number(readFileSync(started(i), "utf8")));

    await expectUnwedged("hung IPAM", agent, adds, (i) => execPlugin("bridge", inv(i, "DEL")));
    await waitFor("the hung IPAM processes to be killed", () => hung.every((pid) => !alive(pid)), 5_000);
    expect(agent.log().match(/served \S+ DEL hung-/g)?.length).toBe(MAX_WORKERS);
    expect(bridgePorts("whbr0")).toEqual([]);
    for (const ns of nss) expect(findLink(ns.path, "eth0")).toBeUndefined();
  }, 120_000);

  test("every thread waiting on the dhcp daemon with no DHCP server: an unrelated ADD is refused at once; each macvlan ADD's DEL follows its shim's kill", async () => {
    const daemon = await startDaemon(makeTempDir("cni-wedge-dhcp-"));
    const master = makeVethMaster();
    const agent = await startAgent();
    const conf = { cniVersion: "1.0.0", name: "wedge-dhcp", type: "macvlan", master: master.name, ipam: { type: "dhcp", daemonSocketPath: daemon.socketPath } };
    const nss: ContainerNetns[] = [];
    for (let i = 0; i < MAX_WORKERS; i++) nss.push(await createContainerNetns());
    const inv = (i: number, command: "ADD" | "DEL") => via(agent.socket, { command, containerID: `dhcp-${i}`, netns: nss[i]!.path, ifName: "eth0", config: conf });
    const adds = nss.map((_, i) => startCall("macvlan", inv(i, "ADD")));
    // Each ADD has made its macvlan and waits for the daemon, which retries DHCP for minutes.
    await waitFor("every ADD to wait on the daemon", () => nss.every((ns) => findLink(ns.path, "eth0") !== undefined));
    await Bun.sleep(300);

    await expectUnwedged("dhcp without a server", agent, adds, (i) => execPlugin("macvlan", inv(i, "DEL")));
    expect(agent.log().match(/served \S+ DEL dhcp-/g)?.length).toBe(MAX_WORKERS);
    for (const ns of nss) expect(findLink(ns.path, "eth0")).toBeUndefined();
  }, 120_000);

  test("every thread held by a caller that never sends its stdin: an unrelated ADD is refused at once; the threads serve again once those callers go", async () => {
    const agent = await startAgent();
    await waitFor("the agent's first log line", () => agent.log().includes("serving on"));
    const buildId = /\(build ([0-9a-f]+),/.exec(agent.log())?.[1] ?? "";
    expect(buildId).not.toBe("");
    const unrelated = await createContainerNetns();
    const silent = Array.from({ length: MAX_WORKERS }, (_, i) => {
      const accepted = Promise.withResolvers<void>();
      const env = { CNI_COMMAND: "ADD", CNI_CONTAINERID: `silent-${i}`, CNI_NETNS: unrelated.path, CNI_IFNAME: "lo", CNI_PATH: DIST_BIN, PATH: process.env.PATH ?? "" };
      const call = exchange(
        agent.socket,
        requestFrames({ buildId, argv: [join(DIST_BIN, "loopback")], env }),
        (type) => {
          if (type === Frame.ACCEPTED) accepted.resolve();
        },
        4_000,
      );
      return { accepted: accepted.promise, call };
    });
    await Promise.all(silent.map((s) => s.accepted));

    const { standalone, throughAgent } = await unrelatedLoopbackAdds(agent, unrelated);
    process.stderr.write(`NOTE silent callers: unrelated loopback ADD ${throughAgent.toFixed(1)} ms through the agent, ${standalone.toFixed(1)} ms standalone (medians of 5)\n`);
    expectRefusedAsStalled(agent);
    expect(throughAgent).toBeLessThan(standalone + 500);

    await Promise.all(silent.map((s) => s.call)); // they hang up (4 s): their calls end
    await waitFor("the silent callers' calls to end", () => (agent.log().match(/served \S+ ADD silent-/g)?.length ?? 0) === MAX_WORKERS);
    const lo = await execPlugin("loopback", via(agent.socket, { command: "ADD", containerID: "after", netns: unrelated.path, ifName: "lo", config: { cniVersion: "1.0.0", name: "lo", type: "loopback" } }));
    expect(describeRun(lo)).toStartWith("exit=0");
    expect(agent.log()).toMatch(/served \S+\/loopback ADD after /);
  }, 60_000);

  test("a foreign IPAM that runs our host-local as its own child: ADD and DEL succeed (the grandchild runs standalone)", async () => {
    const ipamDir = makeTempDir();
    script(ipamDir, "wrap-ipam", `out=$("${join(DIST_BIN, "host-local")}"); rc=$?; printf '%s' "$out"; exit $rc`);
    const agent = await startAgent();
    const dataDir = makeTempDir();
    const conf = bridgeConfig({ name: "wedge-wrap", cniVersion: "1.0.0", bridge: "wwbr0", dataDir, subnets: ["10.101.0.0/24"] });
    (conf as { ipam: Record<string, unknown> }).ipam = { ...(conf as { ipam: Record<string, unknown> }).ipam, type: "wrap-ipam" };
    const ns = await createContainerNetns();
    const inv = (command: "ADD" | "DEL") =>
      via(agent.socket, { command, containerID: "wrapped", netns: ns.path, ifName: "eth0", config: conf, path: `${ipamDir}:${DIST_BIN}`, timeoutMs: 20_000 });
    const add = await execPlugin("bridge", inv("ADD"));
    expect(describeRun(add)).toStartWith("exit=0");
    expect(add.json.ips[0].address).toBe("10.101.0.2/24");
    const del = await execPlugin("bridge", inv("DEL"));
    expect(describeRun(del)).toStartWith("exit=0");
    expect(agent.refused().filter((l) => l.includes("/host-local") && l.includes("a nested call runs standalone"))).toHaveLength(2);
    expect(agent.log()).toMatch(/served \S+\/bridge DEL wrapped /);
    expect(reservationFiles(join(dataDir, "wedge-wrap"))).toEqual([]);
  }, 60_000);

  test("a call that outlives --call-timeout is ended: code 11, its delegate killed; the DEL then succeeds", async () => {
    const ipamDir = makeTempDir();
    hangingIpam(ipamDir);
    const agent = await startAgent(["--call-timeout", "2"]);
    const conf = bridgeConfig({ name: "wedge-limit", cniVersion: "1.0.0", bridge: "wlbr0", dataDir: makeTempDir(), subnets: ["10.93.0.0/24"] });
    (conf as { ipam: Record<string, unknown> }).ipam = { type: "hang-ipam" };
    const ns = await createContainerNetns();
    const inv = (command: "ADD" | "DEL") => via(agent.socket, { command, containerID: "limit", netns: ns.path, ifName: "eth0", config: conf, path: `${ipamDir}:${DIST_BIN}` });
    const add = await execPlugin("bridge", inv("ADD"));
    expect(add.status).toBe(1);
    expect(add.json).toMatchObject({ code: 11, msg: expect.stringContaining("the call was ended: it ran longer than the agent's limit for a call") });
    expect(add.ms).toBeGreaterThan(1900);
    expect(add.ms).toBeLessThan(10_000);
    const pid = Number(readFileSync(join(ipamDir, "started.limit"), "utf8"));
    await waitFor("the hung IPAM to be killed", () => !alive(pid), 5_000);
    expect(findLink(ns.path, "eth0")).toBeUndefined(); // the ended ADD rolled back what it had made
    expect(describeRun(await execPlugin("bridge", inv("DEL")))).toStartWith("exit=0");
    expect(readdirSync(ipamDir).filter((f) => f.startsWith("started."))).toEqual(["started.limit"]);
  }, 60_000);
});
