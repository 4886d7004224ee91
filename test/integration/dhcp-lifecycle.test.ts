/**
 * dhcp daemon lease lifecycle against a scriptable fake DHCP server (test/harness/dhcp-fake-server.ts:
 * 10 s leases, then silence), plus socket activation and the SO_PEERCRED check. Root only; runs
 * inside the test process's throwaway netns like every integration file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runAllCleanups, registerCleanup } from "../harness/cleanup.ts";
import { dhcpConf, labContainer, startDaemon, startFakeServer, startLab, type Daemon, type FakeServer, type Lab, type LabContainer } from "../harness/dhcp-lab.ts";
import { waitFor } from "../harness/wait.ts";
import type { FakeServerEvent } from "../harness/dhcp-fake-server.ts";
import { execPlugin, pluginEnv } from "../harness/exec-plugin.ts";
import { pluginPath, DIST_BIN } from "../harness/paths.ts";
import { makeTempDir } from "../harness/tempdir.ts";

afterAll(() => runAllCleanups());

const ROOT = process.getuid?.() === 0;
const HAVE_ACTIVATE = existsSync("/usr/bin/systemd-socket-activate");
const HAVE_SETPRIV = existsSync("/usr/bin/setpriv");
const T = 120_000;
const ADDRESS = "10.77.0.42";

async function ipam(command: string, id: string, netns: string, conf: Record<string, unknown>) {
  return execPlugin("dhcp", { command, containerID: id, netns, ifName: "eth0", config: conf, timeoutMs: 90_000 });
}

function linkIsUp(c: LabContainer): boolean {
  const [link] = JSON.parse(c.exec("ip", "-j", "link", "show", "eth0")) as { flags: string[] }[];
  return link?.flags.includes("UP") ?? false;
}

function leaseFiles(d: Daemon): string[] {
  return existsSync(d.leaseDir) ? readdirSync(d.leaseDir).filter((f) => f.endsWith(".json")) : [];
}

/** Rewrites every persisted lease so that it was bound an hour ago (long expired). */
function ageLeases(leaseDir: string): void {
  for (const f of readdirSync(leaseDir).filter((n) => n.endsWith(".json"))) {
    const file = join(leaseDir, f);
    const r = JSON.parse(readFileSync(file, "utf8")) as { boundAt: number };
    r.boundAt = Date.now() - 3_600_000;
    writeFileSync(file, JSON.stringify(r));
  }
}

const requests = (evs: FakeServerEvent[]) => evs.filter((e) => e.type === "DHCPREQUEST");

describe.skipIf(!ROOT)("dhcp lease lifecycle (fake server)", () => {
  let lab: Lab;
  let server: FakeServer | undefined;
  beforeAll(async () => {
    lab = await startLab({ dnsmasq: false });
  }, T);
  afterAll(async () => {
    await server?.stop();
    await lab?.stop();
  });

  test("renew at T1 (unicast), rebind at T2 (broadcast), expiry: link down, lease forgotten; CHECK fails, DEL succeeds", async () => {
    // One ACK, then silence: lease 10 s, T1 3 s, T2 6 s.
    server = await startFakeServer(lab, { address: ADDRESS, leaseSeconds: 10, t1Seconds: 3, t2Seconds: 6, answerAcks: 1 });
    const d = await startDaemon(join(lab.dir, "expiry"), ["-timeout", "1s", "-resendtimeout", "20s"]);
    const c = await labContainer();
    const conf = dhcpConf(d.socketPath);
    const add = await ipam("ADD", "exp1", c.netns.path, conf);
    const bound = Date.now();
    expect(add.status, add.stdout + add.stderr).toBe(0);
    expect(add.json.ips[0].address).toBe(`${ADDRESS}/24`);
    c.exec("ip", "addr", "add", `${ADDRESS}/24`, "dev", "eth0"); // what the main plugin would do
    expect(leaseFiles(d).length).toBe(1);

    await waitFor("expiry", () => d.log().includes(`exp1/dhcpnet/eth0: lease on ${ADDRESS} expired; eth0 set down`), 40_000);
    const expiredAt = Date.now();
    const evs = server.events();
    // RENEWING: unicast REQUESTs with ciaddr, between T1 and T2.
    const renews = requests(evs).filter((e) => e.via === "unicast" && e.ciaddr === ADDRESS);
    expect(renews.length).toBeGreaterThan(0);
    for (const r of renews) {
      expect(r.at).toBeGreaterThanOrEqual(bound + 3000 - 1000);
      expect(r.at).toBeLessThan(bound + 6000 + 500);
    }
    // REBINDING: broadcast REQUESTs with ciaddr (no server id), after T2 and before expiry.
    const rebinds = requests(evs).filter((e) => e.via === "broadcast" && e.ciaddr === ADDRESS && e.server === undefined);
    expect(rebinds.length).toBeGreaterThan(0);
    for (const r of rebinds) {
      expect(r.at).toBeGreaterThanOrEqual(bound + 6000 - 1000);
      expect(r.at).toBeLessThan(bound + 10_000 + 500);
    }
    // Exchanges end at expiry: nothing sent afterwards, and the link went down close to it.
    expect(evs.every((e) => e.at < bound + 10_000 + 500)).toBe(true);
    expect(expiredAt - bound).toBeLessThan(10_000 + 8000);
    expect(linkIsUp(c)).toBe(false);
    expect(leaseFiles(d)).toEqual([]);
    await Bun.sleep(1500);
    expect(server.events().length).toBe(evs.length);

    const check = await ipam("CHECK", "exp1", c.netns.path, conf);
    expect(check.status).toBe(1);
    expect(check.json.msg).toContain("no DHCP lease held");
    const del = await ipam("DEL", "exp1", c.netns.path, conf);
    expect(del.status, del.stdout).toBe(0);
    expect(server.events().some((e) => e.type === "DHCPRELEASE")).toBe(false);
    await d.signal("SIGTERM");
    await server.stop();
    server = undefined;
    await c.netns.destroy();
  }, T);

  test("a persisted lease that expired while the daemon was down is re-acquired; with no server, the link goes down", async () => {
    server = await startFakeServer(lab, { address: ADDRESS, leaseSeconds: 3600 });
    const dir = join(lab.dir, "expired-at-start");
    const d1 = await startDaemon(dir);
    const c = await labContainer();
    const conf = dhcpConf(d1.socketPath);
    const add = await ipam("ADD", "old1", c.netns.path, conf);
    expect(add.status, add.stdout + add.stderr).toBe(0);
    c.exec("ip", "addr", "add", `${ADDRESS}/24`, "dev", "eth0");
    expect(await d1.signal("SIGTERM")).toBe(0);

    // Restart after the lease has run out: INIT-REBOOT for the same address, which the server grants.
    ageLeases(d1.leaseDir);
    const before = server.events().length;
    const d2 = await startDaemon(dir);
    await waitFor("re-acquired", () => d2.log().includes(`old1/dhcpnet/eth0: re-acquired ${ADDRESS}`), 30_000);
    const reboot = requests(server.events().slice(before));
    expect(reboot[0]).toMatchObject({ via: "broadcast", ciaddr: "0.0.0.0", requested: ADDRESS, answered: true });
    expect(reboot[0]?.server).toBeUndefined(); // INIT-REBOOT: no server identifier
    expect(server.events().slice(before).some((e) => e.type === "DHCPDISCOVER")).toBe(false);
    expect(linkIsUp(c)).toBe(true);
    const check = await ipam("CHECK", "old1", c.netns.path, conf);
    expect(check.status, check.stdout).toBe(0);
    const again = await ipam("ADD", "old1", c.netns.path, conf); // the held lease, no new exchange
    expect(again.json.ips[0].address).toBe(`${ADDRESS}/24`);
    const rec = JSON.parse(readFileSync(join(d2.leaseDir, leaseFiles(d2)[0]!), "utf8")) as { boundAt: number };
    expect(Date.now() - rec.boundAt).toBeLessThan(60_000);
    expect(await d2.signal("SIGTERM")).toBe(0);

    // Same again with the server gone: after one -resendtimeout the link is set down and the lease forgotten.
    await server.stop();
    server = undefined;
    ageLeases(d2.leaseDir);
    const d3 = await startDaemon(dir, ["-timeout", "1s", "-resendtimeout", "4s"]);
    await waitFor("expiry after the failed re-acquisition", () => d3.log().includes(`old1/dhcpnet/eth0: lease on ${ADDRESS} expired; eth0 set down`), 30_000);
    expect(d3.log()).toContain("old1/dhcpnet/eth0: re-acquiring failed");
    expect(linkIsUp(c)).toBe(false);
    expect(leaseFiles(d3)).toEqual([]);
    expect((await ipam("CHECK", "old1", c.netns.path, conf)).json.msg).toContain("no DHCP lease held");
    expect((await ipam("DEL", "old1", c.netns.path, conf)).status).toBe(0);
    await d3.signal("SIGTERM");
    await c.netns.destroy();
  }, T);

  test("a renewal answered with another address is refused and that lease released", async () => {
    server = await startFakeServer(lab, { address: ADDRESS, leaseSeconds: 8, t1Seconds: 2, t2Seconds: 6, answerAcks: 1 });
    const d = await startDaemon(join(lab.dir, "moved"), ["-timeout", "1s"]);
    const c = await labContainer();
    const conf = dhcpConf(d.socketPath);
    const add = await ipam("ADD", "mv1", c.netns.path, conf);
    expect(add.status, add.stdout + add.stderr).toBe(0);
    // Before T1 the server is replaced by one that hands out another address.
    await server.stop();
    server = await startFakeServer(lab, { address: "10.77.0.43", leaseSeconds: 8 });
    await waitFor("the refusal", () => d.log().includes(`server offered 10.77.0.43 instead of ${ADDRESS}`), 30_000).catch((err) => {
      throw new Error(`${(err as Error).message}\n${d.log()}\n${JSON.stringify(server?.events())}`);
    });
    await waitFor("the RELEASE of the unwanted lease", () => server!.events().some((e) => e.type === "DHCPRELEASE" && e.ciaddr === "10.77.0.43"), 5000);
    // The held address stays valid until its own expiry; then the link goes down.
    expect((await ipam("CHECK", "mv1", c.netns.path, conf)).status).toBe(0);
    expect((await ipam("ADD", "mv1", c.netns.path, conf)).json.ips[0].address).toBe(`${ADDRESS}/24`);
    await waitFor("expiry", () => d.log().includes(`mv1/dhcpnet/eth0: lease on ${ADDRESS} expired`), 30_000);
    expect(linkIsUp(c)).toBe(false);
    expect((await ipam("DEL", "mv1", c.netns.path, conf)).status).toBe(0);
    await d.signal("SIGTERM");
    await server.stop();
    server = undefined;
    await c.netns.destroy();
  }, T);

  test.skipIf(!HAVE_ACTIVATE)("systemd socket activation: the first ADD starts the daemon on the passed socket", async () => {
    server = await startFakeServer(lab, { address: ADDRESS, leaseSeconds: 3600 });
    const dir = makeTempDir("cni-dhcp-act-");
    const socketPath = join(dir, "dhcp.sock");
    const leaseDir = join(dir, "leases");
    // systemd-socket-activate listens, and on the first connection execs the daemon with
    // LISTEN_FDS=1 / LISTEN_PID=<its pid> and the listening socket as fd 3.
    const proc = Bun.spawn(["systemd-socket-activate", "-l", socketPath, pluginPath("dhcp"), "daemon", "-leasedir", leaseDir, "-socketpath", join(dir, "unused.sock")], {
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
      env: { PATH: process.env.PATH ?? "" },
    });
    const forget = registerCleanup(`socket-activated daemon pid ${proc.pid}`, () => proc.kill("SIGKILL"));
    let log = "";
    void (async () => {
      for await (const chunk of proc.stderr) log += new TextDecoder().decode(chunk);
    })();
    await waitFor("the activation socket", () => existsSync(socketPath), 10_000);
    const c = await labContainer();
    const conf = dhcpConf(socketPath);
    const add = await ipam("ADD", "act1", c.netns.path, conf);
    expect(add.status, add.stdout + add.stderr + log).toBe(0);
    expect(add.json.ips[0].address).toBe(`${ADDRESS}/24`);
    expect(log).toContain("listening on the socket passed by systemd");
    expect(existsSync(join(dir, "unused.sock"))).toBe(false);
    expect((await ipam("CHECK", "act1", c.netns.path, conf)).status).toBe(0);
    expect((await ipam("DEL", "act1", c.netns.path, conf)).status).toBe(0);
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    forget();
    // The socket belongs to the activator (systemd): the daemon leaves it in place.
    expect(existsSync(socketPath)).toBe(true);
    await server.stop();
    server = undefined;
    await c.netns.destroy();
  }, T);

  test.skipIf(!HAVE_SETPRIV)("SO_PEERCRED: a caller that is neither root nor the daemon's user is refused", async () => {
    const dir = makeTempDir("cni-dhcp-peer-");
    chmodSync(dir, 0o755);
    const d = await startDaemon(dir);
    // Loosen what the daemon made private, as a careless operator might.
    chmodSync(join(dir, "run"), 0o755);
    chmodSync(d.socketPath, 0o666);
    const conf = dhcpConf(d.socketPath);
    const env = pluginEnv({ command: "ADD", containerID: "peer1", netns: "/proc/1/ns/net", ifName: "eth0" }, DIST_BIN);
    const run = Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", pluginPath("dhcp")], {
      env,
      stdin: Buffer.from(JSON.stringify(conf)),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(run.exitCode, run.stderr.toString()).toBe(1);
    const err = JSON.parse(run.stdout.toString()) as { code: number; msg: string };
    expect(err.msg).toContain("error calling DHCP.Allocate: permission denied: caller uid 65534");
    await waitFor("the refusal in the daemon log", () => d.log().includes("caller uid 65534 (pid"), 5000);
    expect(leaseFiles(d)).toEqual([]);
    // Root still gets through (to a config-level answer: this netns has no eth0).
    const asRoot = await ipam("CHECK", "peer1", "/proc/1/ns/net", conf);
    expect(asRoot.json.msg).toContain("no DHCP lease held");
    await d.signal("SIGTERM");
  }, T);
});
