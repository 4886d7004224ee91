/**
 * macvlan + ipam dhcp against dnsmasq: containers attached by macvlan (master = a veth in the
 * test's throwaway "host" netns whose peer is a port of the lab bridge) get leases from the
 * server, reach it and each other, and release on DEL. Needs root and dnsmasq.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { registerCleanup, runAllCleanups } from "../harness/cleanup.ts";
import { LAB_BRIDGE, SERVER_IP, sh, startDaemon, startLab, type Daemon, type Lab } from "../harness/dhcp-lab.ts";
import { waitFor } from "../harness/wait.ts";
import { execPlugin } from "../harness/exec-plugin.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";

afterAll(() => runAllCleanups());

const HAVE_DNSMASQ = existsSync("/usr/sbin/dnsmasq") && process.getuid?.() === 0;
const T = 120_000;
const MASTER = "dhmv0";

describe.skipIf(!HAVE_DNSMASQ)("macvlan with ipam dhcp", () => {
  let lab: Lab;
  let daemon: Daemon;
  beforeAll(async () => {
    lab = await startLab();
    sh(["ip", "link", "add", MASTER, "type", "veth", "peer", "name", "dhmvp"]);
    registerCleanup(`veth ${MASTER}`, () => void Bun.spawnSync(["ip", "link", "del", MASTER]));
    sh(["ip", "link", "set", "dhmvp", "master", LAB_BRIDGE, "up"]);
    sh(["ip", "link", "set", MASTER, "up"]);
    daemon = await startDaemon(join(lab.dir, "d"), ["-timeout", "2s", "-resendtimeout", "20s"]);
  }, T);
  afterAll(async () => {
    await daemon?.signal("SIGKILL");
    Bun.spawnSync(["ip", "link", "del", MASTER]);
    await lab?.stop();
  });

  const conf = () => ({
    cniVersion: "1.0.0",
    name: "dhcpnet",
    type: "macvlan",
    master: MASTER,
    mode: "bridge",
    ipam: { type: "dhcp", daemonSocketPath: daemon.socketPath },
  });
  const run = (command: string, id: string, ns: ContainerNetns) =>
    execPlugin("macvlan", { command, containerID: id, netns: ns.path, ifName: "eth0", config: conf(), timeoutMs: 90_000 });
  const inNs = (ns: ContainerNetns, ...a: string[]) => sh(["nsenter", `--net=${ns.path}`, ...a]);

  test("two macvlan containers get distinct leases, reach the server and each other; CHECK passes; DEL releases", async () => {
    const [a, b] = await Promise.all([createContainerNetns(), createContainerNetns()]);
    const [addA, addB] = await Promise.all([run("ADD", "mv-a", a), run("ADD", "mv-b", b)]);
    expect(addA.status, addA.stdout + addA.stderr).toBe(0);
    expect(addB.status, addB.stdout + addB.stderr).toBe(0);
    const ipA = (addA.json.ips[0].address as string).split("/")[0]!;
    const ipB = (addB.json.ips[0].address as string).split("/")[0]!;
    expect(ipA).toMatch(/^10\.77\.0\.1\d\d$/);
    expect(ipB).not.toBe(ipA);
    expect(addA.json.ips[0].gateway).toBe(SERVER_IP);
    // The lease is bound to the macvlan's own MAC (the one in the result) at the server.
    const macA = addA.json.interfaces[0].mac as string;
    expect(lab.leases().find((l) => l[2] === ipA)?.[1]).toBe(macA);
    expect(inNs(a, "ip", "-4", "-o", "addr", "show", "dev", "eth0")).toContain(`${ipA}/24`);
    expect(inNs(a, "ip", "route", "show", "default")).toContain(`via ${SERVER_IP}`);
    inNs(a, "ping", "-c1", "-W3", SERVER_IP);
    inNs(a, "ping", "-c1", "-W3", ipB);

    const check = await execPlugin("macvlan", {
      command: "CHECK", containerID: "mv-a", netns: a.path, ifName: "eth0", timeoutMs: 90_000,
      config: { ...conf(), prevResult: addA.json },
    });
    expect(check.status, check.stdout + check.stderr).toBe(0);

    for (const [id, ns, ip] of [["mv-a", a, ipA], ["mv-b", b, ipB]] as const) {
      const del = await run("DEL", id, ns);
      expect(del.status, del.stdout + del.stderr).toBe(0);
      await waitFor(`DHCPRELEASE of ${ip}`, () => lab.leases().every((l) => l[2] !== ip), 5000);
    }
    expect(daemon.log()).not.toContain("failed to release");
    expect(inNs(a, "ip", "-o", "link", "show")).not.toContain("eth0");
    await Promise.all([a.destroy(), b.destroy()]);
  }, T);
});
