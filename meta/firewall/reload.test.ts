/**
 * The firewall plugin's parts for `cni-plugins reload` (reload.ts): the backend ADD used (the
 * config's, else ADD's record, else the automatic choice), the ingress policy's isolation rules
 * checked too, the firewalld zone membership as an asynchronous part with its undo.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CmdArgs, Result } from "../../shared/cni/types.ts";
import { FakeIptables } from "../../shared/firewall/iptables/fake.ts";
import { FakeNft } from "../../shared/firewall/nftables/fake.ts";
import type { AnyFirewallPart } from "../../shared/firewall/reapply.ts";
import type { FirewalldRules, FirewallTarget } from "./backend.ts";
import { makeFirewallPlugin, type FirewallDeps } from "./firewall.ts";
import { firewallPartsWith } from "./reload.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

const RESULT = {
  cniVersion: "1.0.0",
  interfaces: [{ name: "cni-br0" }, { name: "veth1234" }, { name: "eth0", sandbox: "/var/run/netns/x" }],
  ips: [{ address: "10.88.0.5/16", gateway: "10.88.0.1", interface: 2 }],
};

function args(conf: Record<string, unknown>): CmdArgs {
  const config = { cniVersion: "1.0.0", name: "net1", type: "firewall", prevResult: RESULT, ...conf };
  return withDelegate({ command: "ADD", containerID: "ctr1", netns: "/var/run/netns/x", ifName: "eth0", args: "", path: "", stdinData: new TextEncoder().encode(JSON.stringify(config)), config, cniVersion: "1.0.0", env: {}, stderr: () => {}, scope: PROCESS_SCOPE });
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function deps(running: boolean) {
  const ipt = new FakeIptables();
  const nft = new FakeNft();
  const zone = new Set<string>();
  const calls: string[] = [];
  const fwd: FirewalldRules = {
    backend: "firewalld",
    available: () => true,
    setup: async (t: FirewallTarget) => t.addrs.forEach((a) => zone.add(a.host)),
    check: async (t: FirewallTarget) => t.addrs.filter((a) => !zone.has(a.host)).map((a) => `failed to find the address ${a.host} in ${t.conf.zone} zone`),
    teardown: async (t: FirewallTarget) => t.addrs.forEach((a) => void (calls.push(`remove ${a.host}`), zone.delete(a.host))),
    gc: async () => {},
  };
  const stateDir = mkdtempSync(join(tmpdir(), "fw-reload-"));
  dirs.push(stateDir);
  const d: FirewallDeps = { drivers: () => ({ iptables: ipt, nftables: nft }), firewalld: () => fwd, firewalldRunning: async () => running, stateDir, nodeAddresses: () => new Map() };
  return { ipt, nft, zone, calls, d };
}

const what = (parts: AnyFirewallPart[]): string[] => parts.map((p) => p.what);

describe("firewall reload parts", () => {
  test("iptables with an ingress policy: the isolation rules are checked too; setup is ADD's", async () => {
    const f = deps(false);
    const parts = await firewallPartsWith(f.d)(args({ backend: "iptables", ingressPolicy: "isolated" }), RESULT as Result, { iptables: f.ipt, nftables: f.nft });
    expect(what(parts)).toEqual(["firewall (iptables)"]);
    const part = parts[0]!;
    if (!part.sync) throw new Error("sync expected");
    expect(part.check().length).toBeGreaterThan(0);
    part.setup();
    expect(part.check()).toEqual([]);
    const added = new FakeIptables();
    await makeFirewallPlugin({ ...f.d, drivers: () => ({ iptables: added, nftables: new FakeNft() }) }).add(args({ backend: "iptables", ingressPolicy: "isolated" }));
    expect(f.ipt.dump(4)).toBe(added.dump(4));
    f.ipt.restore(4, "*filter\n-F CNI-ISOLATION-STAGE-2\nCOMMIT\n");
    expect(part.check()).toEqual([
      "IPv4: expected CNI-ISOLATION-STAGE-2 rule [-o cni-br0 -m comment --comment CNI firewall plugin rules (ingressPolicy: same-bridge|isolated) -j DROP] not found",
      "IPv4: expected CNI-ISOLATION-STAGE-2 rule [-m comment --comment CNI firewall plugin rules (ingressPolicy: same-bridge|isolated) -j RETURN] not found",
    ]);
  });

  test("nftables: the policy's rules are checked as well", async () => {
    const f = deps(false);
    const parts = await firewallPartsWith(f.d)(args({ backend: "nftables", ingressPolicy: "same-bridge" }), RESULT as Result, { iptables: f.ipt, nftables: f.nft });
    const part = parts[0]!;
    if (!part.sync) throw new Error("sync expected");
    part.setup();
    expect(part.check()).toEqual([]);
  });

  test("the backend ADD recorded wins over the automatic choice (a firewalld that is down stays firewalld)", async () => {
    const f = deps(true);
    await makeFirewallPlugin(f.d).add(args({}));
    expect([...f.zone]).toEqual(["10.88.0.5/32"]);
    const down = { ...f.d, firewalldRunning: async () => false };
    const parts = await firewallPartsWith(down)(args({}), RESULT as Result, { iptables: f.ipt, nftables: f.nft });
    expect(what(parts)).toEqual(["firewall (firewalld zone trusted)"]);
    const part = parts[0]!;
    if (part.sync) throw new Error("async expected");
    f.zone.clear();
    expect(await part.check()).toEqual(["failed to find the address 10.88.0.5/32 in trusted zone"]);
    await part.setup();
    expect(await part.check()).toEqual([]);
    await part.undo();
    expect(f.calls).toEqual(["remove 10.88.0.5/32"]);
  });

  test("firewalld with an ingress policy: the zone part and the iptables isolation part", async () => {
    const f = deps(true);
    const parts = await firewallPartsWith(f.d)(args({ ingressPolicy: "same-bridge" }), RESULT as Result, { iptables: f.ipt, nftables: f.nft });
    expect(what(parts)).toEqual(["firewall (firewalld zone trusted)", "ingress policy (iptables)"]);
  });
});
