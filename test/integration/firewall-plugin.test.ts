/**
 * The firewall plugin against the real tools, in the test runner's throwaway "host" netns:
 * bridge + host-local + firewall chained through ConflistRunner (as libcni drives them); rules
 * per backend (iptables-save, `nft -j list ruleset`); ingressPolicy same-bridge / isolated
 * proven with real pings between containers on one bridge and across two bridges; admin chain;
 * CHECK; DEL twice; GC; interop with the Go firewall 1.1.1 in both directions; and the firewalld
 * backend against a real firewalld on a private D-Bus system bus.
 */
import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test";
import { rmdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { ConflistRunner, type NetworkConfigList } from "../harness/conflist.ts";
import { describeRun, execGoPlugin, execPlugin } from "../harness/exec-plugin.ts";
import { bothGcKeys, olderGcKey } from "../harness/gc-keys.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { ping } from "../harness/bridge-helpers.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { FIREWALL_STATE_DIR } from "../../meta/firewall/records.ts";
import { firewalldInstalled, startPrivateBus, startPrivateFirewalld, zoneSources } from "../harness/firewall-firewalld.ts";

function sh(argv: string[], env?: Record<string, string>): { status: number; stdout: string; stderr: string } {
  const p = Bun.spawnSync({ cmd: argv, stdout: "pipe", stderr: "pipe", ...(env ? { env: { ...process.env, ...env } } : {}) });
  return { status: p.exitCode ?? -1, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}
const filter = (v6 = false): string => sh([v6 ? "ip6tables-save" : "iptables-save", "-t", "filter"]).stdout;
// portmap's route_localnet guard (CNI-HOSTPORT-LOCALNET, jumped from INPUT) is global and may be
// left in the shared test netns by an earlier file: it is not the firewall plugin's.
const ruleLines = (dump: string): string[] =>
  dump.split("\n").filter((l) => (l.startsWith("-A") || /^:CNI/.test(l)) && !l.includes("CNI-HOSTPORT-LOCALNET"));
function nftTable(): { rules: { chain: string; comment?: string }[]; present: boolean } {
  const r = sh(["nft", "-j", "list", "table", "inet", "cni_plugins_firewall"]);
  if (r.status !== 0) return { rules: [], present: false };
  const objs = (JSON.parse(r.stdout) as { nftables: any[] }).nftables;
  return { rules: objs.filter((o) => o.rule).map((o) => o.rule), present: true };
}

/** Resets the netns's firewall between tests: both iptables variants and our nft table. */
function resetFirewall(): void {
  for (const tool of ["iptables", "ip6tables", "iptables-legacy", "ip6tables-legacy"]) {
    sh([tool, "-w", "-t", "filter", "-F"]);
    sh([tool, "-w", "-t", "filter", "-X"]);
    sh([tool, "-w", "-t", "nat", "-F"]);
    sh([tool, "-w", "-t", "nat", "-X"]);
  }
  sh(["nft", "delete", "table", "inet", "cni_plugins_firewall"]);
  sh(["nft", "delete", "table", "inet", "firewalld"]);
}

const PREV = {
  cniVersion: "1.0.0",
  interfaces: [{ name: "fwtest0" }, { name: "vethx" }, { name: "eth0", sandbox: "/var/run/netns/fwtest" }],
  ips: [
    { address: "10.230.0.5/24", gateway: "10.230.0.1", interface: 2 },
    { address: "fd30::5/64", interface: 2 },
  ],
};

function network(name: string, bridge: string, subnet: string, dataDir: string, firewall: Record<string, unknown>): NetworkConfigList {
  return {
    name,
    cniVersion: "1.0.0",
    plugins: [
      {
        type: "bridge",
        bridge,
        isGateway: true,
        ipam: { type: "host-local", dataDir, ranges: [[{ subnet }]], routes: [{ dst: "0.0.0.0/0" }] },
      },
      { type: "firewall", ...firewall },
    ],
  };
}

const ipOf = (result: Record<string, unknown>): string => ((result.ips as { address: string }[])[0]!.address).split("/")[0]!;

describe.skipIf(!sandboxed())("firewall plugin (real iptables / nft / firewalld)", () => {
  useFixtureCleanup();
  // The records ADD keeps for this netns (meta/firewall/records.ts; Go's DEL in the interop tests leaves ours).
  afterAll(() => {
    rmSync(join(FIREWALL_STATE_DIR, String(statSync("/proc/self/ns/net").ino)), { recursive: true, force: true });
    try {
      rmdirSync(FIREWALL_STATE_DIR);
    } catch {
      // other namespaces' records are still there
    }
  });
  const bridges: string[] = [];
  // The firewall plugin never enters CNI_NETNS, but skel validates it: a fresh netns per test.
  let cns = "";
  beforeEach(async () => {
    cns = (await createContainerNetns()).path;
  });
  afterEach(() => {
    for (const b of bridges.splice(0)) sh(["ip", "link", "del", b]);
    resetFirewall();
  });

  test("iptables: exact rules in both families, admin chain, CHECK, DEL twice leaves only the shared chains", async () => {
    const conf = { cniVersion: "1.0.0", name: "fwnet", type: "firewall", backend: "iptables", iptablesAdminChainName: "CNI-MYADMIN", prevResult: PREV };
    const inv = { containerID: "fw-ipt-1", netns: cns, ifName: "eth0", config: conf };
    const add = await execPlugin("firewall", { ...inv, command: "ADD" });
    expect(add.status, describeRun(add)).toBe(0);
    expect(add.json.ips).toEqual(PREV.ips);
    expect(ruleLines(filter())).toEqual([
      ":CNI-FORWARD - [0:0]",
      ":CNI-MYADMIN - [0:0]",
      '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
      '-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-MYADMIN',
      "-A CNI-FORWARD -d 10.230.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
      "-A CNI-FORWARD -s 10.230.0.5/32 -j ACCEPT",
    ]);
    expect(ruleLines(filter(true))).toContain("-A CNI-FORWARD -d fd30::5/128 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT");
    const check = await execPlugin("firewall", { ...inv, command: "CHECK" });
    expect(check.status, describeRun(check)).toBe(0);
    sh(["iptables", "-w", "-D", "CNI-FORWARD", "-s", "10.230.0.5/32", "-j", "ACCEPT"]);
    const broken = await execPlugin("firewall", { ...inv, command: "CHECK" });
    expect(broken.status).not.toBe(0);
    expect(broken.json.msg).toContain("-s 10.230.0.5/32 -j ACCEPT");
    for (let i = 0; i < 2; i++) {
      const del = await execPlugin("firewall", { ...inv, command: "DEL" });
      expect(del.status, describeRun(del)).toBe(0);
    }
    expect(filter()).not.toContain("10.230.0.5");
    expect(filter(true)).not.toContain("fd30::5");
    expect(ruleLines(filter())).toContain('-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-MYADMIN');
  });

  test("DEL is not blocked by a bad ingressPolicy or backend; ADD refuses them; prevResult required", async () => {
    const base = { cniVersion: "1.0.0", name: "fwnet", type: "firewall" };
    const inv = { containerID: "fw-p24", netns: cns, ifName: "eth0" };
    const bad = await execPlugin("firewall", { ...inv, command: "ADD", config: { ...base, ingressPolicy: "bogus", prevResult: PREV } });
    expect(bad.json?.msg).toBe('unknown ingress policy: "bogus"');
    const badBackend = await execPlugin("firewall", { ...inv, command: "ADD", config: { ...base, backend: "bogus", prevResult: PREV } });
    expect(badBackend.json?.code).toBe(7);
    const noPrev = await execPlugin("firewall", { ...inv, command: "ADD", config: base });
    expect(noPrev.json?.msg).toBe("missing prevResult from earlier plugin");
    const del = await execPlugin("firewall", { ...inv, command: "DEL", config: { ...base, ingressPolicy: "bogus", backend: "bogus", prevResult: PREV } });
    expect(del.status, describeRun(del)).toBe(0);
    const old = await execPlugin("firewall", { ...inv, command: "ADD", config: { ...base, cniVersion: "0.3.1", prevResult: PREV } });
    expect(old.json?.code).toBe(1);
  });

  for (const backend of ["iptables", "nftables"] as const) {
    for (const policy of ["same-bridge", "isolated"] as const) {
      test(`${backend}: ingressPolicy ${policy} blocks traffic between bridges${policy === "isolated" ? " and within one" : ", allows it within one"} (pings)`, async () => {
        const dataDir = makeTempDir();
        const runner = new ConflistRunner({ cacheDir: makeTempDir() });
        const tag = backend === "iptables" ? "i" : "n";
        const foo = network(`fwfoo${tag}`, `fwfoo${tag}0`, "10.231.1.0/24", dataDir, { backend, ingressPolicy: policy });
        const bar = network(`fwbar${tag}`, `fwbar${tag}0`, "10.231.2.0/24", dataDir, { backend, ingressPolicy: policy });
        bridges.push(`fwfoo${tag}0`, `fwbar${tag}0`);
        const ns: ContainerNetns[] = [];
        for (let i = 0; i < 3; i++) ns.push(await createContainerNetns());
        const rt = (i: number) => ({ containerID: `fw-ping-${i}`, netns: ns[i]!.path, ifName: "eth0" });
        const a1 = await runner.add(foo, rt(0));
        const a2 = await runner.add(foo, rt(1));
        const b1 = await runner.add(bar, rt(2));
        // the host side (bridge gateway) is always reachable
        expect(ping(ns[0]!.path, "10.231.1.1")).toBe(true);
        expect(ping(ns[0]!.path, ipOf(a2), policy === "isolated" ? 2 : 4)).toBe(policy === "same-bridge");
        expect(ping(ns[0]!.path, ipOf(b1), 2)).toBe(false);
        expect(ping(ns[2]!.path, ipOf(a1), 2)).toBe(false);
        if (backend === "iptables") {
          expect(filter()).toContain(`-A CNI-ISOLATION-STAGE-2 -o fwfooi0 -m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)" -j DROP`);
          expect(filter().includes(`-i fwfooi0 -o fwfooi0`)).toBe(policy === "isolated");
        } else {
          const t = nftTable();
          expect(t.rules.filter((r) => r.chain === "isolation-stage-2").map((r) => r.comment).sort()).toEqual(["stage-2 fwbarn0", "stage-2 fwfoon0"]);
          expect(ruleLines(sh(["iptables-save", "-t", "filter"]).stdout).join("\n")).not.toContain("CNI-");
        }
        await runner.check(foo, rt(0));
        for (const [list, i] of [[foo, 0], [foo, 1], [bar, 2]] as const) {
          await runner.del(list, rt(i));
          await runner.del(list, rt(i));
        }
        expect(filter()).not.toMatch(/10\.231\.[12]\.\d+\/32/);
        expect(nftTable().rules.filter((r) => r.chain === "cni-forward" && !(r.comment ?? "").startsWith("admin"))).toEqual([]);
      }, 60_000);
    }
  }

  test("nftables: GC removes the rules of attachments that are not valid any more", async () => {
    const base = { cniVersion: "1.1.0", name: "fwgc", type: "firewall", backend: "nftables" };
    const prev = { ...PREV, cniVersion: "1.1.0" };
    for (const id of ["gc-keep", "gc-stale"]) {
      const r = await execPlugin("firewall", { command: "ADD", containerID: id, netns: cns, ifName: "eth0", config: { ...base, prevResult: prev } });
      expect(r.status, describeRun(r)).toBe(0);
    }
    expect(nftTable().rules.filter((r) => r.chain === "cni-forward").length).toBe(9);
    const keep = { containerID: "gc-keep", ifname: "eth0" };
    const first = await execPlugin("firewall", { command: "GC", config: { ...base, ...bothGcKeys([keep, { containerID: "gc-stale", ifname: "eth0" }], []) } });
    expect(first.status, describeRun(first)).toBe(0);
    expect(nftTable().rules.filter((r) => r.chain === "cni-forward").length).toBe(9); // the newer key wins
    const gc = await execPlugin("firewall", { command: "GC", config: { ...base, ...olderGcKey([keep]) } });
    expect(gc.status, describeRun(gc)).toBe(0);
    expect(nftTable().rules.filter((r) => r.chain === "cni-forward").length).toBe(5);
    const check = await execPlugin("firewall", { command: "CHECK", containerID: "gc-keep", netns: cns, ifName: "eth0", config: { ...base, prevResult: prev } });
    expect(check.status, describeRun(check)).toBe(0);
  });

  for (const variant of ["nft", "legacy"] as const) {
    test(`iptables-${variant}: GC removes the address rules ADD recorded for stale attachments; valid ones, reused addresses, other networks' and foreign rules stay byte-identical`, async () => {
      // kubelet's hint chain in legacy mangle makes the plugin pick the legacy variant.
      if (variant === "legacy") expect(sh(["iptables-legacy", "-w", "-t", "mangle", "-N", "KUBE-IPTABLES-HINT"]).status).toBe(0);
      try {
        const lines = (): string[] => [false, true].flatMap((v6) => ruleLines(sh([`ip${v6 ? "6" : ""}tables-${variant}-save`, "-t", "filter"]).stdout));
        const conf = (network: string, extra: Record<string, unknown> = {}) => ({ cniVersion: "1.1.0", name: network, type: "firewall", backend: "iptables", ...extra });
        const add = async (network: string, cid: string, ...ips: string[]): Promise<void> => {
          const prevResult = { cniVersion: "1.1.0", interfaces: [{ name: "eth0", sandbox: cns }], ips: ips.map((address) => ({ address, interface: 0 })) };
          const r = await execPlugin("firewall", { command: "ADD", containerID: cid, netns: cns, ifName: "eth0", config: conf(network, { prevResult }) });
          expect(r.status, describeRun(r)).toBe(0);
        };
        await add("fwgc", "gc-keep", "10.232.0.2/24", "fd32::2/64");
        await add("fwgc", "gc-stale", "10.232.0.3/24", "fd32::3/64");
        await add("fwgc", "gc-stale-reused", "10.232.0.4/24");
        await add("fwgc2", "gc-live", "10.232.0.4/24");
        await add("fwgc2", "gc-other", "10.232.0.5/24");
        expect(sh([`iptables-${variant}`, "-w", "-A", "CNI-FORWARD", "-s", "10.232.0.9/32", "-j", "ACCEPT"]).status).toBe(0);
        const before = lines();
        const gone = (l: string): boolean => l.includes("10.232.0.3/32") || l.includes("fd32::3/128");
        expect(before.filter(gone)).toHaveLength(4);
        const gc = await execPlugin("firewall", { command: "GC", config: conf("fwgc", { "cni.dev/valid-attachments": [{ containerID: "gc-keep", ifname: "eth0" }] }) });
        expect(gc.status, describeRun(gc)).toBe(0);
        expect(lines()).toEqual(before.filter((l) => !gone(l)));
        // DEL without prevResult removes what ADD recorded.
        for (const [network, cid] of [["fwgc", "gc-keep"], ["fwgc2", "gc-live"], ["fwgc2", "gc-other"]] as const) {
          const del = await execPlugin("firewall", { command: "DEL", containerID: cid, netns: cns, ifName: "eth0", config: conf(network) });
          expect(del.status, describeRun(del)).toBe(0);
        }
        expect(lines().filter((l) => l.includes("10.232.0.") || l.includes("fd32::"))).toEqual(["-A CNI-FORWARD -s 10.232.0.9/32 -j ACCEPT"]);
      } finally {
        if (variant === "legacy") {
          for (const table of ["filter", "mangle"]) {
            sh(["iptables-legacy", "-w", "-t", table, "-F"]);
            sh(["iptables-legacy", "-w", "-t", table, "-X"]);
          }
        }
      }
    });
  }

  describe.skipIf(!firewalldInstalled())("firewalld GC", () => {
  test("firewalld: GC removes the zone sources ADD recorded for stale attachments; valid ones and sources not ours stay", async () => {
    const fwd = await startPrivateFirewalld();
    try {
      const env = { DBUS_SYSTEM_BUS_ADDRESS: fwd.busAddress };
      const conf = (extra: Record<string, unknown> = {}) => ({ cniVersion: "1.1.0", name: "fwdgc", type: "firewall", backend: "firewalld", ...extra });
      const add = async (cid: string, ip: string, zone?: string): Promise<void> => {
        const prevResult = { cniVersion: "1.1.0", interfaces: [{ name: "eth0", sandbox: cns }], ips: [{ address: ip, interface: 0 }] };
        const r = await execPlugin("firewall", { command: "ADD", containerID: cid, netns: cns, ifName: "eth0", env, config: conf({ prevResult, ...(zone ? { firewalldZone: zone } : {}) }) });
        expect(r.status, describeRun(r)).toBe(0);
      };
      await add("gcd-keep", "10.233.0.2/24");
      await add("gcd-stale", "10.233.0.3/24");
      await add("gcd-stale-zoned", "10.233.0.4/24", "internal");
      const foreign = ["dbus-send", "--system", "--print-reply", "--dest=org.fedoraproject.FirewallD1", "/org/fedoraproject/FirewallD1", "org.fedoraproject.FirewallD1.zone.addSource", "string:trusted", "string:10.233.0.9/32"];
      expect(sh(foreign, env).status).toBe(0);
      expect(zoneSources(fwd.busAddress, "trusted").sort()).toEqual(["10.233.0.2/32", "10.233.0.3/32", "10.233.0.9/32"]);
      const gc = await execPlugin("firewall", { command: "GC", env, config: conf({ "cni.dev/valid-attachments": [{ containerID: "gcd-keep", ifname: "eth0" }] }) });
      expect(gc.status, describeRun(gc)).toBe(0);
      expect(zoneSources(fwd.busAddress, "trusted").sort()).toEqual(["10.233.0.2/32", "10.233.0.9/32"]);
      expect(zoneSources(fwd.busAddress, "internal")).toEqual([]);
      const del = await execPlugin("firewall", { command: "DEL", containerID: "gcd-keep", netns: cns, ifName: "eth0", env, config: conf() });
      expect(del.status, describeRun(del)).toBe(0);
      expect(zoneSources(fwd.busAddress, "trusted")).toEqual(["10.233.0.9/32"]);
    } finally {
      await fwd.stop();
    }
  }, 120_000);
  });

  describe.skipIf(!hasGoPlugin("firewall"))("interop with Go firewall 1.1.1", () => {
    const conf = { cniVersion: "1.0.0", name: "fwgo", type: "firewall", backend: "iptables", prevResult: PREV };
    const inv = (): { containerID: string; netns: string; ifName: string; config: typeof conf } => ({ containerID: "fw-go-1", netns: cns, ifName: "eth0", config: conf });

    test("Go ADD → our CHECK + DEL leave no per-address rule", async () => {
      const add = await execGoPlugin("firewall", { ...inv(), command: "ADD" });
      expect(add.status, describeRun(add)).toBe(0);
      const goRules = ruleLines(filter());
      expect(goRules).toContain("-A CNI-FORWARD -s 10.230.0.5/32 -j ACCEPT");
      const check = await execPlugin("firewall", { ...inv(), command: "CHECK" });
      expect(check.status, describeRun(check)).toBe(0);
      // our ADD on top of Go's is a no-op
      const again = await execPlugin("firewall", { ...inv(), command: "ADD" });
      expect(again.status, describeRun(again)).toBe(0);
      expect(ruleLines(filter())).toEqual(goRules);
      const del = await execPlugin("firewall", { ...inv(), command: "DEL" });
      expect(del.status, describeRun(del)).toBe(0);
      expect(filter()).not.toContain("10.230.0.5");
      expect(filter(true)).not.toContain("fd30::5");
    });

    test("our ADD → Go CHECK + DEL leave no per-address rule", async () => {
      const add = await execPlugin("firewall", { ...inv(), command: "ADD" });
      expect(add.status, describeRun(add)).toBe(0);
      const check = await execGoPlugin("firewall", { ...inv(), command: "CHECK" });
      expect(check.status, describeRun(check)).toBe(0);
      const del = await execGoPlugin("firewall", { ...inv(), command: "DEL" });
      expect(del.status, describeRun(del)).toBe(0);
      expect(filter()).not.toContain("10.230.0.5");
      expect(filter(true)).not.toContain("fd30::5");
    });
  });

  describe.skipIf(!firewalldInstalled())("firewalld backend (real firewalld on a private system bus)", () => {
    test("auto-detected; addSource to the zone, CHECK, DEL twice; ZONE_ALREADY_SET tolerated", async () => {
      const fwd = await startPrivateFirewalld();
      try {
        const env = { DBUS_SYSTEM_BUS_ADDRESS: fwd.busAddress };
        const conf = { cniVersion: "1.0.0", name: "fwd", type: "firewall", prevResult: PREV };
        const inv = { containerID: "fw-fwd-1", netns: cns, ifName: "eth0", config: conf, env };
        for (let i = 0; i < 2; i++) {
          const add = await execPlugin("firewall", { ...inv, command: "ADD" });
          expect(add.status, describeRun(add)).toBe(0);
        }
        expect(zoneSources(fwd.busAddress, "trusted").sort()).toEqual(["10.230.0.5/32", "fd30::5/128"]);
        expect(filter()).not.toContain("CNI-FORWARD");
        const check = await execPlugin("firewall", { ...inv, command: "CHECK" });
        expect(check.status, describeRun(check)).toBe(0);
        // a custom zone, and CHECK failing once the source is gone
        const prev2 = { ...PREV, ips: [{ address: "10.230.0.6/24", interface: 2 }] };
        const zoned = { ...conf, firewalldZone: "internal", prevResult: prev2 };
        const add2 = await execPlugin("firewall", { ...inv, command: "ADD", config: zoned, containerID: "fw-fwd-2" });
        expect(add2.status, describeRun(add2)).toBe(0);
        expect(zoneSources(fwd.busAddress, "internal")).toEqual(["10.230.0.6/32"]);
        // an address already bound to another zone is an error (firewalld's ZONE_CONFLICT), as upstream
        const conflict = await execPlugin("firewall", { ...inv, command: "ADD", config: { ...zoned, firewalldZone: "trusted" }, containerID: "fw-fwd-2" });
        expect(conflict.json?.msg).toContain("ZONE_CONFLICT");
        const del2 = await execPlugin("firewall", { ...inv, command: "DEL", config: zoned, containerID: "fw-fwd-2" });
        expect(del2.status, describeRun(del2)).toBe(0);
        expect(zoneSources(fwd.busAddress, "internal")).toEqual([]);
        expect(zoneSources(fwd.busAddress, "trusted").sort()).toEqual(["10.230.0.5/32", "fd30::5/128"]);
        for (let i = 0; i < 2; i++) {
          const del = await execPlugin("firewall", { ...inv, command: "DEL" });
          expect(del.status, describeRun(del)).toBe(0);
        }
        expect(zoneSources(fwd.busAddress, "trusted")).toEqual([]);
        const gone = await execPlugin("firewall", { ...inv, command: "CHECK" });
        expect(gone.status).not.toBe(0);
        expect(gone.json.msg).toContain("failed to find the address 10.230.0.5/32 in trusted zone");
      } finally {
        await fwd.stop();
      }
    }, 120_000);

    test("explicit firewalld backend without firewalld: ADD fails, DEL succeeds; auto → iptables", async () => {
      const bus = await startPrivateBus();
      try {
        const env = { DBUS_SYSTEM_BUS_ADDRESS: bus.busAddress };
        const inv = { containerID: "fw-nofwd", netns: cns, ifName: "eth0", env };
        const conf = { cniVersion: "1.0.0", name: "fwd", type: "firewall", prevResult: PREV };
        const add = await execPlugin("firewall", { ...inv, command: "ADD", config: { ...conf, backend: "firewalld" } });
        expect(add.status).not.toBe(0);
        expect(add.json.msg).toContain("failed to add the address 10.230.0.5/32 to trusted zone");
        const del = await execPlugin("firewall", { ...inv, command: "DEL", config: { ...conf, backend: "firewalld" } });
        expect(del.status, describeRun(del)).toBe(0);
        const auto = await execPlugin("firewall", { ...inv, command: "ADD", config: conf });
        expect(auto.status, describeRun(auto)).toBe(0);
        expect(filter()).toContain("-A CNI-FORWARD -s 10.230.0.5/32 -j ACCEPT");
      } finally {
        await bus.stop();
      }
    });
  });
});
