/**
 * The dhcp daemon's metrics in the resident agent (`cni-plugins serve --metrics-address …
 * --dhcp -- …`, docs/observability.md): `cni_dhcp_leases`, `cni_dhcp_lease_renewals_total{outcome}`
 * and `cni_dhcp_lease_failures_total{stage}`, read straight from GET /metrics while macvlan
 * containers with ipam dhcp go through the shims (CNI_PLUGINS_SOCKET = this agent).
 *
 * The DHCP server is the lab's scriptable fake (test/harness/dhcp-fake-server.ts; dnsmasq cannot
 * grant leases under 2 minutes, nor fall silent): first one that always answers (lease 8 s, T1
 * 2 s: a renewal within the test), then one that answers a single ACK and falls silent (lease 6 s,
 * T1 2 s, T2 4 s: the renewal goes unanswered, then the rebind, then the lease expires). The
 * daemon runs with `-timeout 1s -resendtimeout 3s`, so an acquisition nobody answers gives up
 * after ~3 s.
 *
 * What each step must move (ipam/dhcp/daemon/lease.ts LeaseEvents, server.ts):
 *   ADD → leases 1; an answered renewal → renewals{ok} +1; DEL → leases 0;
 *   DEL of a lease whose interface is gone (RELEASE cannot be sent) → failures{release} +1, leases 0;
 *   unanswered renewal → renewals{failed} +1, unanswered rebind → failures{renew} +1, expiry → leases 0;
 *   ADD with no answering server → failures{acquire} +1, leases stay 0.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { startAgent, type RunningAgent } from "../harness/agent.ts";
import { registerCleanup, runAllCleanups } from "../harness/cleanup.ts";
import { LAB_BRIDGE, SERVER_IP, sh, startFakeServer, startLab, type FakeServer, type Lab } from "../harness/dhcp-lab.ts";
import { describeRun, execPlugin, type PluginRun } from "../harness/exec-plugin.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { freeLoopbackPort } from "../harness/prometheus.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

// The lab and the agent live for the whole describe block: cleanups run at the end (and at exit).
afterAll(() => runAllCleanups());

const T = 60_000;
const NETWORK = "dhcpmetrics";
/** The macvlan master: a veth in the test's netns whose peer is a port of the lab bridge. */
const MASTER = "dhmm0";
const MASTER_PEER = "dhmmp";
const ADDRESS = "10.77.0.42";

/** The value of one series in a Prometheus text exposition (undefined: the series is not there). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(",");
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (m === null || m[1] !== name) continue;
    const got = (m[2] ?? "")
      .split(",")
      .filter((p) => p !== "")
      .sort()
      .join(",");
    if (got === want) return Number(m[3]);
  }
  return undefined;
}

interface DhcpFigures {
  leases: number | undefined;
  renewOk: number;
  renewFailed: number;
  acquire: number;
  renew: number;
  release: number;
}

describe.skipIf(!sandboxed())("the dhcp daemon's metrics in the resident agent", () => {
  let lab: Lab;
  let server: FakeServer | undefined;
  let agent: RunningAgent;
  let target = "";
  let dhcpSocket = "";

  const scrape = async (): Promise<string> => {
    const res = await fetch(`http://${target}/metrics`, { signal: AbortSignal.timeout(3000) });
    expect(res.status).toBe(200);
    return res.text();
  };
  const figures = async (): Promise<DhcpFigures> => {
    const t = await scrape();
    const c = (name: string, labels: Record<string, string>): number => sample(t, name, labels) ?? 0;
    return {
      leases: sample(t, "cni_dhcp_leases"),
      renewOk: c("cni_dhcp_lease_renewals_total", { outcome: "ok" }),
      renewFailed: c("cni_dhcp_lease_renewals_total", { outcome: "failed" }),
      acquire: c("cni_dhcp_lease_failures_total", { stage: "acquire" }),
      renew: c("cni_dhcp_lease_failures_total", { stage: "renew" }),
      release: c("cni_dhcp_lease_failures_total", { stage: "release" }),
    };
  };
  /** Polls /metrics until `cond` holds (answers that reading) or `ms` pass (answers the last one). */
  const until = async (cond: (f: DhcpFigures) => boolean, ms: number): Promise<DhcpFigures> => {
    const end = Date.now() + ms;
    for (;;) {
      const f = await figures();
      if (cond(f) || Date.now() > end) return f;
      await Bun.sleep(200);
    }
  };

  const conf = () => ({
    cniVersion: "1.0.0",
    name: NETWORK,
    type: "macvlan",
    master: MASTER,
    mode: "bridge",
    ipam: { type: "dhcp", daemonSocketPath: dhcpSocket },
  });
  const macvlan = (command: string, id: string, ns: ContainerNetns): Promise<PluginRun> =>
    execPlugin("macvlan", {
      command,
      containerID: id,
      netns: ns.path,
      ifName: "eth0",
      config: conf(),
      timeoutMs: 30_000,
      env: { CNI_PLUGINS_SOCKET: agent.socket },
    });
  const requests = (s: FakeServer, from: number) => s.events().slice(from).filter((e) => e.type === "DHCPREQUEST");

  beforeAll(async () => {
    lab = await startLab({ dnsmasq: false });
    sh(["ip", "link", "add", MASTER, "type", "veth", "peer", "name", MASTER_PEER]);
    registerCleanup(`veth ${MASTER}`, () => void Bun.spawnSync(["ip", "link", "del", MASTER]));
    sh(["ip", "link", "set", MASTER_PEER, "master", LAB_BRIDGE, "up"]);
    sh(["ip", "link", "set", MASTER, "up"]);
    const dir = makeTempDir("cni-agent-dhcpm-");
    dhcpSocket = join(dir, "dhcp.sock");
    const leaseDir = makeTempDir("cni-agent-dhcpm-leases-");
    const dhcpArgs = ["--dhcp", "--", "-socketpath", dhcpSocket, "-leasedir", leaseDir, "-timeout", "1s", "-resendtimeout", "3s"];
    // Another pick when the free port was taken meanwhile.
    for (let attempt = 1; ; attempt++) {
      target = `127.0.0.1:${await freeLoopbackPort()}`;
      try {
        agent = await startAgent(["--metrics-address", target, ...dhcpArgs], { dir, waitFor: dhcpSocket });
        break;
      } catch (err) {
        if (attempt >= 3 || !/in use/i.test((err as Error).message)) throw err;
      }
    }
    const end = Date.now() + 10_000;
    for (;;) {
      const body = await fetch(`http://${target}/metrics`, { signal: AbortSignal.timeout(2000) })
        .then((r) => r.text())
        .catch(() => undefined);
      if (body !== undefined) break;
      if (Date.now() > end) throw new Error(`GET http://${target}/metrics never answered; agent log:\n${agent.log()}`);
      await Bun.sleep(100);
    }
  }, T);

  afterAll(async () => {
    await server?.stop();
    if (agent !== undefined) expect(await agent.stop()).toBe(0);
    Bun.spawnSync(["ip", "link", "del", MASTER]);
    await lab?.stop();
  }, T);

  test("the families are exposed with their types; no lease, no renewal, no failure yet", async () => {
    const t = await scrape();
    expect(t).toContain("# TYPE cni_dhcp_leases gauge");
    expect(t).toContain("# TYPE cni_dhcp_lease_renewals_total counter");
    expect(t).toContain("# TYPE cni_dhcp_lease_failures_total counter");
    const f = await figures();
    expect({ ...f, leases: f.leases ?? 0 }).toEqual({ leases: 0, renewOk: 0, renewFailed: 0, acquire: 0, renew: 0, release: 0 });
  });

  test("ADD: leases 1; an answered renewal at T1: renewals{ok} >= 1; DEL: leases 0, RELEASE sent", async () => {
    server = await startFakeServer(lab, { address: ADDRESS, leaseSeconds: 8, t1Seconds: 2, t2Seconds: 6 });
    const c = await createContainerNetns();
    const add = await macvlan("ADD", "dm1", c);
    expect(add.status, describeRun(add)).toBe(0);
    expect(add.json.ips[0].address).toBe(`${ADDRESS}/24`);
    expect(add.json.ips[0].gateway).toBe(SERVER_IP);
    expect((await figures()).leases).toBe(1);

    const bound = Date.now();
    const renewed = await until((f) => f.renewOk >= 1, 10_000);
    expect(renewed.renewOk, agent.log()).toBeGreaterThanOrEqual(1);
    expect(Date.now() - bound).toBeGreaterThan(1000); // at T1 (2 s), not at once
    expect(agent.log()).toContain(`dm1/${NETWORK}/eth0: renewed ${ADDRESS}`);
    // RENEWING: a unicast REQUEST from the leased address, which the server answered.
    expect(requests(server, 0).some((e) => e.via === "unicast" && e.ciaddr === ADDRESS && e.answered)).toBe(true);
    expect(renewed).toMatchObject({ leases: 1, renewFailed: 0, acquire: 0, renew: 0, release: 0 });

    const del = await macvlan("DEL", "dm1", c);
    expect(del.status, describeRun(del)).toBe(0);
    expect(await figures()).toMatchObject({ leases: 0, release: 0 });
    await waitForEvent(server, "DHCPRELEASE");
    await c.destroy();
  }, T);

  test("DEL when the interface is gone (RELEASE cannot be sent): failures{release} +1, leases 0", async () => {
    const before = await figures();
    const c = await createContainerNetns();
    const add = await macvlan("ADD", "dm2", c);
    expect(add.status, describeRun(add)).toBe(0);
    expect((await figures()).leases).toBe(1);
    sh(["nsenter", `--net=${c.path}`, "ip", "link", "del", "eth0"]);
    const del = await macvlan("DEL", "dm2", c);
    expect(del.status, describeRun(del)).toBe(0);
    expect(agent.log()).toContain(`dm2/${NETWORK}/eth0: failed to release DHCP lease`);
    const after = await figures();
    expect(after).toMatchObject({ leases: 0, release: before.release + 1, acquire: before.acquire, renew: before.renew });
    await c.destroy();
  }, T);

  test("renewal and rebind unanswered: renewals{failed} +1, failures{renew} +1; expiry: leases 0", async () => {
    await server?.stop();
    // One ACK (the ADD's), then silence: renew from T1 (2 s) to T2 (4 s), rebind to expiry (6 s).
    server = await startFakeServer(lab, { address: ADDRESS, leaseSeconds: 6, t1Seconds: 2, t2Seconds: 4, answerAcks: 1 });
    const before = await figures();
    const c = await createContainerNetns();
    const add = await macvlan("ADD", "dm3", c);
    expect(add.status, describeRun(add)).toBe(0);
    expect((await figures()).leases).toBe(1);
    const lost = await until((f) => f.renew > before.renew && f.leases === 0, 15_000);
    expect(lost, agent.log()).toMatchObject({
      leases: 0,
      renewOk: before.renewOk,
      renewFailed: before.renewFailed + 1,
      renew: before.renew + 1,
      acquire: before.acquire,
      release: before.release,
    });
    expect(agent.log()).toContain(`dm3/${NETWORK}/eth0: lease on ${ADDRESS} expired; eth0 set down`);
    // The lease is gone already: DEL succeeds and fails nothing more.
    const del = await macvlan("DEL", "dm3", c);
    expect(del.status, describeRun(del)).toBe(0);
    expect(await figures()).toMatchObject({ leases: 0, release: before.release });
    await c.destroy();
  }, T);

  test("ADD that no server answers: fails, failures{acquire} +1, leases stay 0", async () => {
    // The server of the test before has given its one ACK and only listens now.
    const before = await figures();
    const c = await createContainerNetns();
    const started = Date.now();
    const add = await macvlan("ADD", "dm4", c);
    expect(add.status, describeRun(add)).toBe(1);
    expect(add.json.msg).toContain("no more tries");
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(agent.log()).toContain(`dm4/${NETWORK}/eth0: no lease`);
    expect(await figures()).toMatchObject({ leases: 0, acquire: before.acquire + 1, renew: before.renew, release: before.release, renewFailed: before.renewFailed });
    const del = await macvlan("DEL", "dm4", c);
    expect(del.status, describeRun(del)).toBe(0);
    expect((await figures()).leases).toBe(0);
    await c.destroy();
  }, T);
});

async function waitForEvent(s: FakeServer, type: string): Promise<void> {
  const end = Date.now() + 5000;
  while (!s.events().some((e) => e.type === type)) {
    if (Date.now() > end) throw new Error(`the fake server never received a ${type}: ${JSON.stringify(s.events())}`);
    await Bun.sleep(100);
  }
}
