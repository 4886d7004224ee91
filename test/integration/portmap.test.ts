/**
 * portmap end to end (upstream plugins/meta/portmap and its tests; #729, CVE-2025-67499): bridge +
 * host-local + portmap driven by the conflist runner in the throwaway host netns,
 * with real TCP/UDP traffic from a client namespace, localhost and hairpin, both backends
 * (iptables-save, `nft -j list ruleset`), conflicts, validation, CHECK, DEL without portMappings,
 * GC, 200 mappings, the localnet guard, conntrack, and interop with the Go portmap 1.1.1.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { useHostSysctls } from "../harness/host-sysctl.ts";
import { ConflistRunner, type NetworkConfigList } from "../harness/conflist.ts";
import { execGoPlugin, execPlugin } from "../harness/exec-plugin.ts";
import { bothGcKeys, olderGcKey } from "../harness/gc-keys.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { suiteTempDir } from "../harness/tempdir.ts";
import { sendFrom, startServer } from "../harness/portmap-net.ts";
import { dnatChainName } from "../../meta/portmap/iptables-rules.ts";

const HOST_IP = "192.168.77.1";
const CLIENT_IP = "192.168.77.2";
const BRIDGE = "pmbr0";

function sh(argv: string[]): string {
  const p = Bun.spawnSync({ cmd: argv, stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`${argv.join(" ")} failed: ${p.stderr.toString()}`);
  return p.stdout.toString();
}
const natSave = (): string => sh(["iptables-save", "-t", "nat"]);
const filterSave = (): string => sh(["iptables-save", "-t", "filter"]);
function nftRules(): { chain: string; comment?: string; family: string; table: string; expr: unknown[] }[] {
  const out = JSON.parse(sh(["nft", "-j", "list", "ruleset"])) as { nftables: any[] };
  return out.nftables.filter((o) => o.rule).map((o) => o.rule);
}
const routeLocalnet = (): string => readFileSync(`/proc/sys/net/ipv4/conf/${BRIDGE}/route_localnet`, "utf8").trim();
const conntrackLines = (port: number): string[] =>
  readFileSync("/proc/net/nf_conntrack", "utf8")
    .split("\n")
    .filter((l) => l.includes(" udp ") && l.includes(`dport=${port} `));

function list(backend: "iptables" | "nftables", dataDir: string, extra: Record<string, unknown> = {}, cniVersion = "1.0.0"): NetworkConfigList {
  return {
    cniVersion,
    name: "pm-net",
    plugins: [
      {
        type: "bridge",
        bridge: BRIDGE,
        isGateway: true,
        hairpinMode: true,
        ipam: { type: "host-local", dataDir, ranges: [[{ subnet: "10.88.0.0/24" }]], routes: [{ dst: "0.0.0.0/0" }] },
      },
      { type: "portmap", capabilities: { portMappings: true }, backend, ...extra },
    ],
  };
}

const ipOf = (result: Record<string, unknown>): string => ((result.ips as { address: string }[])[0]!.address).split("/")[0]!;

describe.skipIf(!sandboxed())("portmap (real traffic, both backends)", () => {
  useFixtureCleanup();
  let client: ContainerNetns;
  const dataDir = suiteTempDir();
  const runner = new ConflistRunner({ cacheDir: suiteTempDir() });

  // A bridge created here starts from the netns default route_localnet, which a new netns copies from the host.
  useHostSysctls({ "net.ipv4.ip_forward": "1", "net.ipv4.conf.default.route_localnet": "0" });
  beforeAll(() => {
    sh(["ip", "link", "set", "lo", "up"]);
  });
  afterAll(() => {
    Bun.spawnSync({ cmd: ["ip", "link", "del", BRIDGE] });
  });

  /** A client namespace linked to the host by a veth (host side pmcl0 = HOST_IP); per test, as fixtures are. */
  async function setupClient(): Promise<void> {
    client = await createContainerNetns();
    // The previous test's client veth disappears with its netns, asynchronously.
    for (let i = 0; i < 100 && Bun.spawnSync({ cmd: ["ip", "link", "show", "pmcl0"], stdout: "ignore", stderr: "ignore" }).exitCode === 0; i++) {
      Bun.spawnSync({ cmd: ["ip", "link", "del", "pmcl0"], stderr: "ignore" });
      await Bun.sleep(20);
    }
    sh(["ip", "link", "add", "pmcl0", "type", "veth", "peer", "name", "eth0", "netns", String(client.pid)]);
    sh(["ip", "addr", "add", `${HOST_IP}/24`, "dev", "pmcl0"]);
    sh(["ip", "link", "set", "pmcl0", "up"]);
    const inClient = (...a: string[]): string => sh(["nsenter", `--net=${client.path}`, ...a]);
    inClient("ip", "link", "set", "lo", "up");
    inClient("ip", "addr", "add", `${CLIENT_IP}/24`, "dev", "eth0");
    inClient("ip", "link", "set", "eth0", "up");
    inClient("ip", "route", "add", "default", "via", HOST_IP);
  }

  async function container(backend: "iptables" | "nftables", id: string, mappings: unknown[], extra: Record<string, unknown> = {}) {
    const ns = await createContainerNetns();
    const l = list(backend, dataDir, extra);
    const rt = { containerID: id, netns: ns.path, ifName: "eth0", capabilityArgs: { portMappings: mappings } };
    const result = await runner.add(l, rt);
    return { ns, list: l, rt, result, ip: ipOf(result) };
  }

  for (const backend of ["iptables", "nftables"] as const) {
    test(`${backend}: TCP and UDP from another netns, localhost, hairpin; CHECK; DEL cleans up and restores route_localnet`, async () => {
      await setupClient();
      const id = `pm-traffic-${backend}`;
      const c = await container(backend, id, [
        { hostPort: 8080, containerPort: 80, protocol: "tcp" },
        { hostPort: 8053, containerPort: 53, protocol: "udp" },
      ]);
      const stopTcp = await startServer(c.ns.path, "tcp", 80, "ctr-tcp");
      const stopUdp = await startServer(c.ns.path, "udp", 53, "ctr-udp");
      try {
        expect(sendFrom(client.path, "tcp", HOST_IP, 8080)).toBe(`ctr-tcp from ${CLIENT_IP}`);
        expect(sendFrom(client.path, "udp", HOST_IP, 8053)).toBe(`ctr-udp from ${CLIENT_IP}`);
        // localhost hostPort from the host (masqueraded to the bridge address)
        expect(sendFrom(undefined, "tcp", "127.0.0.1", 8080)).toBe("ctr-tcp from 10.88.0.1");
        // hairpin: the container reaches its own hostPort through the host address
        expect(sendFrom(c.ns.path, "tcp", HOST_IP, 8080)).toBe("ctr-tcp from 10.88.0.1");
        expect(routeLocalnet()).toBe("1");
        await runner.check(c.list, c.rt);

        if (backend === "iptables") {
          const nat = natSave();
          const chain = dnatChainName("pm-net", id);
          expect(nat).toContain(`-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \\"pm-net\\" id: \\"${id}\\"" -m multiport --dports 8080 -j ${chain}`);
          expect(nat).toContain(`-A ${chain} -p tcp -m tcp --dport 8080 -j DNAT --to-destination ${c.ip}:80`);
          expect(nat).toContain(`-A ${chain} -s 127.0.0.1/32 -p udp -m udp --dport 8053 -j CNI-HOSTPORT-SETMARK`);
          expect(nat).toContain("-A CNI-HOSTPORT-SETMARK -m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x2000/0x2000");
          expect(nat).toContain("-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT");
          expect(filterSave()).toContain("-A CNI-HOSTPORT-LOCALNET ! -s 127.0.0.0/8 -d 127.0.0.0/8");
        } else {
          const rules = nftRules().filter((r) => r.table === "cni_hostport");
          expect(rules.filter((r) => r.comment === id).length).toBe(4); // 2 dnat + 2 masquerade
          const entry = rules.filter((r) => r.chain === "prerouting");
          expect(entry.length).toBe(1);
          expect(JSON.stringify(entry[0]!.expr)).toContain('"fib"');
          expect(rules.some((r) => r.chain === "localnet_guard")).toBe(true);
        }
      } finally {
        stopTcp();
        stopUdp();
      }
      await runner.del(c.list, c.rt);
      expect(natSave()).not.toContain(dnatChainName("pm-net", id));
      expect(nftRules().filter((r) => r.comment === id)).toEqual([]);
      expect(routeLocalnet()).toBe("0");
      expect(sendFrom(client.path, "tcp", HOST_IP, 8080, { timeoutMs: 1500 })).not.toContain("ctr-tcp");
      await c.ns.destroy();
    }, 60_000);
  }

  test("nftables: a hostPort does not capture traffic routed through the host to another address (CVE-2025-67499)", async () => {
    await setupClient();
    const a = await container("nftables", "pm-cve-a", [{ hostPort: 8053, containerPort: 80, protocol: "tcp" }]);
    const b = await container("nftables", "pm-cve-b", []);
    const stopA = await startServer(a.ns.path, "tcp", 80, "A");
    const stopB = await startServer(b.ns.path, "tcp", 8053, "B");
    try {
      expect(sendFrom(client.path, "tcp", b.ip, 8053)).toBe(`B from ${CLIENT_IP}`);
      expect(sendFrom(client.path, "tcp", HOST_IP, 8053)).toBe(`A from ${CLIENT_IP}`);
    } finally {
      stopA();
      stopB();
    }
    await runner.del(a.list, a.rt);
    await runner.del(b.list, b.rt);
  }, 60_000);

  test("UDP: stale conntrack is flushed on ADD (stream reaches the new container) and on DEL", async () => {
    await setupClient();
    // A datagram stream to 9053 before any mapping: conntrack keeps an un-NATed entry.
    sendFrom(client.path, "udp", HOST_IP, 9053, { srcPort: 40000, timeoutMs: 300 });
    expect(conntrackLines(9053).length).toBeGreaterThan(0);
    const c = await container("iptables", "pm-ct", [{ hostPort: 9053, containerPort: 53, protocol: "udp" }]);
    const stop = await startServer(c.ns.path, "udp", 53, "fresh");
    try {
      expect(sendFrom(client.path, "udp", HOST_IP, 9053, { srcPort: 40000 })).toBe(`fresh from ${CLIENT_IP}`);
      expect(conntrackLines(9053).length).toBeGreaterThan(0);
    } finally {
      stop();
    }
    await runner.del(c.list, c.rt);
    expect(conntrackLines(9053)).toEqual([]);
  }, 60_000);

  for (const backend of ["iptables", "nftables"] as const) {
    for (const first of ["newer", "older"] as const) {
      test(`${backend}: a hostPort another container's rules hold: the newest ADD wins and names the shadowed one; DEL of the ${first} first`, async () => {
        await setupClient();
        const port = 8181;
        const ids = { older: `pm-clash-old-${backend}-${first}`, newer: `pm-clash-new-${backend}-${first}` };
        const older = await container(backend, ids.older, [{ hostPort: port, containerPort: 80, protocol: "tcp" }]);
        const quiet = runner.calls.filter((c) => c.type === "portmap" && c.command === "ADD").at(-1)!;
        expect(quiet.run.stderr).toBe("");
        const stopOld = await startServer(older.ns.path, "tcp", 80, "old");
        const newer = await container(backend, ids.newer, [{ hostPort: port, containerPort: 80, protocol: "tcp" }]);
        const stopNew = await startServer(newer.ns.path, "tcp", 80, "new");
        try {
          const add = runner.calls.filter((c) => c.type === "portmap" && c.command === "ADD").at(-1)!;
          expect(add.run.stderr).toContain(`host port ${port}/tcp was forwarded to container ${JSON.stringify(ids.older)}`);
          expect(add.run.stderr).toContain(`container ${JSON.stringify(ids.newer)} now takes precedence`);
          expect(sendFrom(client.path, "tcp", HOST_IP, port)).toBe(`new from ${CLIENT_IP}`);
          await runner.check(older.list, older.rt);
          await runner.check(newer.list, newer.rt);
          const [gone, stays] = first === "newer" ? [newer, older] : [older, newer];
          await runner.del(gone.list, gone.rt);
          // Only its own rules went: the other's still forward (after DEL of the newer, the older's rules are back in effect).
          await runner.check(stays.list, stays.rt);
          expect(sendFrom(client.path, "tcp", HOST_IP, port)).toBe(`${first === "newer" ? "old" : "new"} from ${CLIENT_IP}`);
          await runner.del(stays.list, stays.rt);
          expect(sendFrom(client.path, "tcp", HOST_IP, port, { timeoutMs: 500 })).toStartWith("ERROR");
        } finally {
          stopOld();
          stopNew();
        }
      }, 60_000);
    }
  }

  test("validation errors; the same port with another protocol is no clash", async () => {
    const a = await container("iptables", "pm-conf-a", [{ hostPort: 8181, containerPort: 80, protocol: "tcp" }]);
    const c = await container("iptables", "pm-conf-c", [{ hostPort: 8181, containerPort: 80, protocol: "udp" }]);
    expect(runner.calls.filter((x) => x.type === "portmap" && x.command === "ADD").at(-1)!.run.stderr).toBe("");
    const ns = await createContainerNetns();
    for (const [bad, msg] of [
      [{ hostPort: 70000, containerPort: 80, protocol: "tcp" }, "Invalid host port number: 70000"],
      [{ hostPort: 8282, containerPort: 0, protocol: "tcp" }, "Invalid container port number: 0"],
      [{ hostPort: 8282, containerPort: 80, protocol: "bogus" }, 'Invalid protocol "bogus"'],
      [{ hostPort: 8282, containerPort: 80, protocol: "tcp", hostIP: "not-an-ip" }, 'Invalid host IP "not-an-ip"'],
      [[{ hostPort: 8282, containerPort: 80, protocol: "tcp" }, { hostPort: 8282, containerPort: 81, protocol: "tcp" }], "mapped twice"],
    ] as const) {
      const config = { cniVersion: "1.0.0", name: "pm-net", type: "portmap", runtimeConfig: { portMappings: Array.isArray(bad) ? bad : [bad] }, prevResult: a.result };
      const run = await execPlugin("portmap", { command: "ADD", containerID: "pm-conf-bad", netns: ns.path, ifName: "eth0", config });
      expect(run.status).toBe(1);
      expect(run.json.msg).toContain(msg);
    }
    const noPrev = await execPlugin("portmap", {
      command: "ADD", containerID: "pm-conf-bad", netns: ns.path, ifName: "eth0",
      config: { cniVersion: "1.0.0", name: "pm-net", type: "portmap", runtimeConfig: { portMappings: [{ hostPort: 1, containerPort: 1, protocol: "tcp" }] } },
    });
    expect(noPrev.json.msg).toBe("must be called as chained plugin");
    await runner.del(a.list, a.rt);
    await runner.del(c.list, c.rt);
  }, 60_000);

  test("DEL without portMappings removes the rules (derived from network + container); GC removes stale chains", async () => {
    const a = await container("iptables", "pm-del-a", [{ hostPort: 8383, containerPort: 80, protocol: "tcp" }]);
    const b = await container("iptables", "pm-gc-b", [{ hostPort: 8384, containerPort: 80, protocol: "tcp" }]);
    const c = await container("iptables", "pm-gc-c", [{ hostPort: 8385, containerPort: 80, protocol: "tcp" }]);
    const bare = { cniVersion: "1.1.0", name: "pm-net", type: "portmap", prevResult: a.result };
    const del = await execPlugin("portmap", { command: "DEL", containerID: "pm-del-a", netns: a.ns.path, ifName: "eth0", config: bare });
    expect(del.status).toBe(0);
    expect(natSave()).not.toContain(dnatChainName("pm-net", "pm-del-a"));
    const gcConf = { cniVersion: "1.1.0", name: "pm-net", type: "portmap" };
    const keep = { containerID: "pm-gc-c", ifname: "eth0" };
    const first = await execPlugin("portmap", { command: "GC", config: { ...gcConf, ...bothGcKeys([keep, { containerID: "pm-gc-b", ifname: "eth0" }], []) } });
    expect(first.status).toBe(0);
    expect(natSave()).toContain(dnatChainName("pm-net", "pm-gc-b")); // the newer key wins
    const gc = await execPlugin("portmap", { command: "GC", config: { ...gcConf, ...olderGcKey([keep]) } });
    expect(gc.status).toBe(0);
    const nat = natSave();
    expect(nat).not.toContain(dnatChainName("pm-net", "pm-gc-b"));
    expect(nat).toContain(dnatChainName("pm-net", "pm-gc-c"));
    for (const x of [a, b, c]) await runner.del(x.list, x.rt);
    expect(natSave()).not.toContain("CNI-DN-");
  }, 60_000);

  for (const backend of ["iptables", "nftables"] as const) {
    test(`${backend}: GC removes the rules of stale attachments (v4 and v6); valid ones, other networks' and foreign rules stay byte-identical`, async () => {
      const ns = await createContainerNetns();
      const addRules = async (network: string, cid: string, n: number): Promise<void> => {
        const prevResult = {
          cniVersion: "1.1.0",
          interfaces: [{ name: "eth0", sandbox: ns.path }],
          ips: [{ address: `10.97.0.${n}/24`, interface: 0 }, { address: `fd97::${n}/64`, interface: 0 }],
        };
        const runtimeConfig = { portMappings: [{ hostPort: 7000 + n, containerPort: 80, protocol: "tcp" }, { hostPort: 7100 + n, containerPort: 53, protocol: "udp" }] };
        const run = await execPlugin("portmap", { command: "ADD", containerID: cid, netns: ns.path, ifName: "eth0", config: { cniVersion: "1.1.0", name: network, type: "portmap", backend, runtimeConfig, prevResult } });
        expect(run.status, run.stderr).toBe(0);
      };
      await addRules("pm-gc", "gc-keep", 2);
      await addRules("pm-gc", "gc-stale", 3);
      // Another network: in iptables its chains name the network; in nftables rules name only the
      // container, so one that is valid here stays there (a container in no valid attachment would go).
      await addRules("pm-gc-other", "gc-stale", 4);
      await addRules("pm-gc-other", "gc-keep", 5);
      for (const t of ["iptables", "ip6tables"]) sh([t, "-t", "nat", "-A", "PREROUTING", "-p", "tcp", "--dport", "7999", "-m", "comment", "--comment", "foreign", "-j", "RETURN"]);
      sh(["nft", "add table ip pm-foreign; add chain ip pm-foreign c; add rule ip pm-foreign c tcp dport 7999 dnat to 10.97.0.9 comment \"gc-stale\""]);
      const v6Save = (): string => sh(["ip6tables-save", "-t", "nat"]);
      const state = (): string[] => [
        ...`${natSave()}\n${v6Save()}`.split("\n").filter((l) => l.startsWith("-A") || l.startsWith(":CNI-")),
        ...nftRules().map((r) => JSON.stringify({ ...r, handle: undefined })),
      ];
      const staleIpt = (l: string): boolean => l.includes(dnatChainName("pm-gc", "gc-stale")) || l.includes('dnat name: \\"pm-gc\\" id: \\"gc-stale\\"');
      const isStale = (l: string): boolean =>
        backend === "iptables" ? staleIpt(l) : l.includes('"table":"cni_hostport"') && l.includes('"comment":"gc-stale"');
      const before = state();
      expect(before.filter(isStale).length).toBeGreaterThanOrEqual(backend === "iptables" ? 10 : 6);
      const gc = await execPlugin("portmap", {
        command: "GC",
        config: { cniVersion: "1.1.0", name: "pm-gc", type: "portmap", backend, "cni.dev/valid-attachments": [{ containerID: "gc-keep", ifname: "eth0" }] },
      });
      expect(gc.status, gc.stderr).toBe(0);
      expect(state()).toEqual(before.filter((l) => !isStale(l)));
      expect(state().some((l) => l.includes("pm-foreign") && l.includes("gc-stale"))).toBe(true);
      if (backend === "iptables") expect(natSave()).toContain(dnatChainName("pm-gc-other", "gc-stale"));
      for (const [network, cid] of [["pm-gc", "gc-keep"], ["pm-gc-other", "gc-stale"], ["pm-gc-other", "gc-keep"]]) {
        const run = await execPlugin("portmap", { command: "DEL", containerID: cid!, netns: ns.path, ifName: "eth0", config: { cniVersion: "1.1.0", name: network!, type: "portmap", backend } });
        expect(run.status, run.stderr).toBe(0);
      }
      for (const t of ["iptables", "ip6tables"]) sh([t, "-t", "nat", "-D", "PREROUTING", "-p", "tcp", "--dport", "7999", "-m", "comment", "--comment", "foreign", "-j", "RETURN"]);
      sh(["nft", "delete table ip pm-foreign"]);
      expect(state().filter((l) => l.includes("gc-"))).toEqual([]);
    }, 60_000);
  }

  test("CHECK is exact: a removed DNAT rule fails it; an IPv4-only pod passes", async () => {
    const c = await container("iptables", "pm-check", [{ hostPort: 8484, containerPort: 80, protocol: "tcp" }]);
    await runner.check(c.list, c.rt);
    const chain = dnatChainName("pm-net", "pm-check");
    sh(["iptables", "-t", "nat", "-D", chain, "-p", "tcp", "-m", "tcp", "--dport", "8484", "-j", "DNAT", "--to-destination", `${c.ip}:80`]);
    await expect(runner.check(c.list, c.rt)).rejects.toThrow(/does not hold the expected rules/);
    await runner.del(c.list, c.rt);
  }, 60_000);

  test("200 mappings: ADD well under a second, one restore", async () => {
    const mappings = Array.from({ length: 200 }, (_, i) => ({ hostPort: 20000 + i, containerPort: 80, protocol: i % 2 ? "udp" : "tcp" }));
    const prevResult = { cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: "/x" }], ips: [{ address: "10.99.0.2/24", interface: 0 }] };
    const config = { cniVersion: "1.0.0", name: "pm-bulk", type: "portmap", runtimeConfig: { portMappings: mappings }, prevResult };
    const ns = await createContainerNetns();
    const t0 = performance.now();
    const add = await execPlugin("portmap", { command: "ADD", containerID: "pm-bulk", netns: ns.path, ifName: "eth0", config });
    const addMs = performance.now() - t0;
    expect(add.stdout).toContain("10.99.0.2");
    expect(add.status).toBe(0);
    console.log(`portmap 200 mappings ADD: ${addMs.toFixed(0)} ms (incl. process start)`);
    expect(addMs).toBeLessThan(1000);
    expect(natSave().split("\n").filter((l) => l.includes("-j DNAT")).length).toBe(200);
    const t1 = performance.now();
    const del = await execPlugin("portmap", { command: "DEL", containerID: "pm-bulk", netns: ns.path, ifName: "eth0", config });
    console.log(`portmap 200 mappings DEL: ${(performance.now() - t1).toFixed(0)} ms`);
    expect(del.status).toBe(0);
    expect(natSave()).not.toContain(dnatChainName("pm-bulk", "pm-bulk"));
  }, 60_000);

  test.skipIf(!hasGoPlugin("portmap"))("interop with Go portmap 1.1.1: Go ADD → our CHECK + DEL; our ADD → Go DEL", async () => {
    const ns = await createContainerNetns();
    const l = list("iptables", dataDir);
    const bridgeOnly = { ...l, plugins: [l.plugins[0]!] };
    const rt = { containerID: "pm-go", netns: ns.path, ifName: "eth0" };
    const result = await runner.add(bridgeOnly, rt);
    const mappings = [
      { hostPort: 8585, containerPort: 80, protocol: "tcp" },
      { hostPort: 8586, containerPort: 53, protocol: "udp" },
    ];
    const conf = { cniVersion: "1.0.0", name: "pm-net", type: "portmap", runtimeConfig: { portMappings: mappings }, prevResult: result };
    const inv = { containerID: "pm-go", netns: ns.path, ifName: "eth0", config: conf };
    const chain = dnatChainName("pm-net", "pm-go");

    const goAdd = await execGoPlugin("portmap", { ...inv, command: "ADD" });
    expect(goAdd.status).toBe(0);
    expect(natSave()).toContain(chain);
    expect((await execPlugin("portmap", { ...inv, command: "CHECK" })).status).toBe(0);
    expect((await execPlugin("portmap", { ...inv, command: "DEL" })).status).toBe(0);
    expect(natSave()).not.toContain(chain);

    expect((await execPlugin("portmap", { ...inv, command: "ADD" })).status).toBe(0);
    expect(natSave()).toContain(chain);
    expect((await execGoPlugin("portmap", { ...inv, command: "DEL" })).status).toBe(0);
    expect(natSave()).not.toContain(chain);
    await runner.del(bridgeOnly, rt);
    await ns.destroy();
  }, 60_000);
});
