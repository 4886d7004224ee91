/**
 * portmap localhost hostPort safety (upstream #729): with a
 * localhost hostPort the plugin turns `route_localnet` on for the bridge, which makes the host
 * route packets addressed to 127.0.0.0/8 that arrive on the bridge. Without a martian guard a
 * container with CAP_NET_RAW completes handshakes with host services bound to 127.0.0.1.
 *
 * Real traffic: a TCP listener bound to 127.0.0.1:PORT (and one on the gateway address, as the
 * control) in the throwaway host netns; from inside the container a hand-crafted SYN goes to
 * 127.0.0.1:PORT through the bridge gateway's MAC, and no SYN-ACK may come back, while the same SYN
 * to the gateway address is answered. Both backends; then route_localnet must be back to 0 after
 * DEL. The same probe against the Go portmap 1.1.1 is recorded (not asserted).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { useHostSysctls } from "../harness/host-sysctl.ts";
import { ConflistRunner, type RuntimeConf } from "../harness/conflist.ts";
import { execPlugin } from "../harness/exec-plugin.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { GO_BIN_DIR, hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir, suiteTempDir } from "../harness/tempdir.ts";
import { gatewayOf, ipOf, linkExists, macOf, portmapList, routeLocalnet, sh, shQuiet, type PortmapLabNet } from "../harness/portmap-lab.ts";
import { synProbe, synProbeAvailable, type SynProbeOutcome } from "../harness/portmap-syn-probe.ts";

const BRIDGE = "pmlnbr0";
const SUBNET = "10.91.0.0/24";
const GATEWAY = gatewayOf(SUBNET);
/** The host service bound to 127.0.0.1 (and, as the control, to the gateway address). */
const PROBE_PORT = 19999;
const HOST_PORT = 18180;

/** Removes the martian guards of both backends (leftovers of earlier tests in this host netns). */
function dropGuards(): void {
  shQuiet(["iptables", "-t", "filter", "-F", "CNI-HOSTPORT-LOCALNET"]);
  shQuiet(["nft", "flush", "chain", "ip", "cni_hostport", "localnet_guard"]);
}

function setRouteLocalnet(value: "0" | "1"): void {
  sh(["sysctl", "-qw", `net.ipv4.conf.${BRIDGE}.route_localnet=${value}`]);
}

/** TCP listeners in the host netns on 127.0.0.1:PROBE_PORT and GATEWAY:PROBE_PORT; returns a stopper. */
function listenOnHost(): () => void {
  const handler = { open() {}, data() {} };
  const local = Bun.listen({ hostname: "127.0.0.1", port: PROBE_PORT, socket: handler });
  const gw = Bun.listen({ hostname: GATEWAY, port: PROBE_PORT, socket: handler });
  return () => {
    local.stop(true);
    gw.stop(true);
  };
}

describe.skipIf(!sandboxed() || !synProbeAvailable())("portmap: a 127.0.0.1 host service is not reachable from the container (#729)", () => {
  useFixtureCleanup();
  const runner = new ConflistRunner({ cacheDir: suiteTempDir() });
  const goRunner = new ConflistRunner({ cacheDir: suiteTempDir(), path: [GO_BIN_DIR] });

  // A bridge created here starts from the netns default route_localnet, which a new netns copies from the host.
  useHostSysctls({ "net.ipv4.ip_forward": "1", "net.ipv4.conf.default.route_localnet": "0" });
  beforeAll(() => {
    sh(["ip", "link", "set", "lo", "up"]);
  });
  afterAll(() => {
    dropGuards();
    shQuiet(["ip", "link", "del", BRIDGE]);
  });

  function net(name: string): PortmapLabNet {
    return { name, bridge: BRIDGE, subnet: SUBNET, dataDir: makeTempDir() };
  }

  async function attach(r: ConflistRunner, n: PortmapLabNet, backend: "iptables" | "nftables", id: string, hostPort = HOST_PORT) {
    const ns = await createContainerNetns();
    const list = portmapList(n, backend);
    const rt: RuntimeConf = { containerID: id, netns: ns.path, ifName: "eth0", capabilityArgs: { portMappings: [{ hostPort, containerPort: 80, protocol: "tcp" }] } };
    const result = await r.add(list, rt);
    return { ns, list, rt, result, ip: ipOf(result) };
  }

  function probe(ns: ContainerNetns, srcIP: string, dstIP: string): SynProbeOutcome {
    return synProbe({ netns: ns.path, ifName: "eth0", srcIP, dstMac: macOf(BRIDGE), dstIP, dstPort: PROBE_PORT });
  }

  for (const backend of ["iptables", "nftables"] as const) {
    test(`${backend}: SYN to 127.0.0.1 via the gateway MAC gets no SYN-ACK while route_localnet is on; restored after DEL`, async () => {
      dropGuards();
      if (linkExists(BRIDGE)) setRouteLocalnet("0");
      const c = await attach(runner, net(`pm-lnet-${backend}`), backend, `pm-lnet-${backend}`);
      const stop = listenOnHost();
      try {
        expect(routeLocalnet(BRIDGE)).toBe("1");
        // control: the same hand-made SYN to the gateway address is answered
        expect(probe(c.ns, c.ip, GATEWAY)).toBe("syn-ack");
        // the localhost-only service stays out of reach
        expect(probe(c.ns, c.ip, "127.0.0.1")).toBe("none");

        // The probe does see the hole when the guard is gone (so "none" above is the guard's work) ...
        dropGuards();
        expect(probe(c.ns, c.ip, "127.0.0.1")).toBe("syn-ack");
        // ... and a repeated ADD puts the guard back.
        const conf = { cniVersion: "1.0.0", name: c.list.name, type: "portmap", backend, runtimeConfig: { portMappings: c.rt.capabilityArgs!.portMappings }, prevResult: c.result };
        const again = await execPlugin("portmap", { command: "ADD", containerID: c.rt.containerID, netns: c.ns.path, ifName: "eth0", config: conf });
        expect(again.status).toBe(0);
        expect(probe(c.ns, c.ip, "127.0.0.1")).toBe("none");
        // portmap's DEL alone (the container keeps its eth0): route_localnet goes back to 0, and then
        // the kernel itself drops the SYN as a martian, guard or not.
        const del = await execPlugin("portmap", { command: "DEL", containerID: c.rt.containerID, netns: c.ns.path, ifName: "eth0", config: conf });
        expect(del.status).toBe(0);
        expect(routeLocalnet(BRIDGE)).toBe("0");
        dropGuards();
        expect(probe(c.ns, c.ip, "127.0.0.1")).toBe("none");
        expect(probe(c.ns, c.ip, GATEWAY)).toBe("syn-ack");
      } finally {
        stop();
      }
      await runner.del(c.list, c.rt);
      expect(routeLocalnet(BRIDGE)).toBe("0");
      await c.ns.destroy();
    }, 90_000);
  }

  test("route_localnet: the last DEL restores 0; a value an admin had set to 1 is left alone", async () => {
    dropGuards();
    if (linkExists(BRIDGE)) setRouteLocalnet("0");
    const n = net("pm-lnet-users");
    const a = await attach(runner, n, "iptables", "pm-lnet-ua");
    const b = await attach(runner, n, "iptables", "pm-lnet-ub", HOST_PORT + 1);
    expect(routeLocalnet(BRIDGE)).toBe("1");
    await runner.del(a.list, a.rt);
    expect(routeLocalnet(BRIDGE)).toBe("1"); // b still relies on it
    await runner.del(b.list, b.rt);
    expect(routeLocalnet(BRIDGE)).toBe("0");

    setRouteLocalnet("1"); // set by someone else
    const c = await attach(runner, n, "iptables", "pm-lnet-uc");
    await runner.del(c.list, c.rt);
    expect(routeLocalnet(BRIDGE)).toBe("1");
    setRouteLocalnet("0");
    for (const x of [a, b, c]) await x.ns.destroy();
  }, 90_000);

  test.skipIf(!hasGoPlugin("portmap"))("Go portmap 1.1.1: the same probe (recorded, not asserted)", async () => {
    dropGuards();
    if (linkExists(BRIDGE)) setRouteLocalnet("0");
    const c = await attach(goRunner, net("pm-lnet-go"), "iptables", "pm-lnet-go");
    const stop = listenOnHost();
    let outcome: SynProbeOutcome;
    try {
      // the control must hold, or the recorded outcome would mean nothing
      expect(probe(c.ns, c.ip, GATEWAY)).toBe("syn-ack");
      outcome = probe(c.ns, c.ip, "127.0.0.1");
    } finally {
      stop();
    }
    const during = routeLocalnet(BRIDGE);
    await goRunner.del(c.list, c.rt);
    const after = routeLocalnet(BRIDGE);
    console.log(
      `[record] Go portmap 1.1.1, SYN from the container to 127.0.0.1:${PROBE_PORT}: ${outcome} ` +
        `(${outcome === "syn-ack" ? "VULNERABLE: host localhost service reachable, #729 reproduced" : "not reachable"}); ` +
        `route_localnet during=${during} after DEL=${after}`,
    );
    setRouteLocalnet("0");
    await c.ns.destroy();
  }, 90_000);
});
