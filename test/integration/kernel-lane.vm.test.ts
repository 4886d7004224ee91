/**
 * Proof that the VM lane works (test/vm/README.md): this file runs only there (`*.vm.test.ts`),
 * inside Debian's stock kernel, and checks that the kernel features the build host lacks are
 * really usable — a vlan-filtering bridge with a VLAN on a port, ipvlan, 8021q vlan and dummy links
 * — and that our build in dist/ runs in the guest. Every kernel object lives in a fresh container
 * namespace that is removed after each test.
 */
import { describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execPlugin } from "../harness/exec-plugin.ts";
import { findLink, ipJson, isUp, type IpLink } from "../harness/ip-oracle.ts";
import { inVmLane, KERNEL_FEATURES, kernelProbe, requireKernel } from "../harness/kernel.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";

/** `ip -d link show dev <name>` as JSON: with linkinfo (info_kind, info_data). */
function linkDetails(netnsPath: string, name: string): IpLink & { linkinfo?: { info_kind?: string; info_data?: Record<string, unknown> } } {
  const [link] = ipJson<IpLink[]>(netnsPath, "-d", "link", "show", "dev", name);
  if (link === undefined) throw new Error(`no link ${name}`);
  return link;
}

/** Runs `ip <args>` in the namespace (no JSON expected). */
function ip(netnsPath: string, ...args: string[]): void {
  ipJson(netnsPath, ...args);
}

interface BridgeVlanEntry {
  ifname: string;
  vlans: { vlan: number; flags?: string[] }[];
}

/** `bridge -j vlan show` in the namespace. */
function bridgeVlans(netnsPath: string): BridgeVlanEntry[] {
  const run = Bun.spawnSync(["nsenter", `--net=${netnsPath}`, "--", "bridge", "-j", "vlan", "show"], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (run.exitCode !== 0) throw new Error(`bridge -j vlan show failed: ${run.stderr.toString().trim()}`);
  const text = run.stdout.toString().trim();
  return (text === "" ? [] : JSON.parse(text)) as BridgeVlanEntry[];
}

describe.skipIf(!sandboxed() || !inVmLane())("VM lane", () => {
  useFixtureCleanup();

  // A feature missing here makes requireKernel() register a failing test; these say it directly.
  for (const feature of KERNEL_FEATURES) {
    test(`the guest kernel supports ${feature}`, () => {
      expect(kernelProbe(feature)).toEqual({ supported: true, detail: "" });
    });
  }

  describe.skipIf(requireKernel("bridge_vlan_filtering") !== undefined)("bridge vlan_filtering", () => {
    test("a vlan-filtering bridge accepts VLAN 100 on a port (bridge -j vlan show)", async () => {
      const ns = await createContainerNetns();
      ip(ns.path, "link", "add", "br0", "type", "bridge", "vlan_filtering", "1");
      ip(ns.path, "link", "add", "p0", "type", "veth", "peer", "name", "p0peer");
      ip(ns.path, "link", "set", "p0", "master", "br0");
      ip(ns.path, "link", "set", "br0", "up");
      ip(ns.path, "link", "set", "p0", "up");
      const run = Bun.spawnSync(["nsenter", `--net=${ns.path}`, "--", "bridge", "vlan", "add", "dev", "p0", "vid", "100", "pvid", "untagged"]);
      expect(run.exitCode).toBe(0);

      const bridge = linkDetails(ns.path, "br0");
      expect(bridge.linkinfo?.info_kind).toBe("bridge");
      expect(bridge.linkinfo?.info_data?.["vlan_filtering"]).toBe(1);
      const port = bridgeVlans(ns.path).find((e) => e.ifname === "p0");
      expect(port).toBeDefined();
      const vid100 = port!.vlans.find((v) => v.vlan === 100);
      expect(vid100?.flags).toEqual(expect.arrayContaining(["PVID", "Egress Untagged"]));
      // The default VLAN 1 is still there, no longer the PVID.
      expect(port!.vlans.find((v) => v.vlan === 1)?.flags ?? []).not.toContain("PVID");
    });
  });

  describe.skipIf(requireKernel("ipvlan", "vlan", "dummy") !== undefined)("ipvlan, 8021q vlan and dummy links", () => {
    test("a dummy master carries an ipvlan l2 and an 802.1Q VLAN 42 link (ip -j -d link)", async () => {
      const ns = await createContainerNetns();
      ip(ns.path, "link", "add", "dm0", "type", "dummy");
      ip(ns.path, "link", "add", "ipv0", "link", "dm0", "type", "ipvlan", "mode", "l2");
      ip(ns.path, "link", "add", "vl42", "link", "dm0", "type", "vlan", "id", "42");

      const dummy = linkDetails(ns.path, "dm0");
      expect(dummy.linkinfo?.info_kind).toBe("dummy");
      const ipvlan = linkDetails(ns.path, "ipv0");
      expect(ipvlan.linkinfo?.info_kind).toBe("ipvlan");
      expect(ipvlan.linkinfo?.info_data?.["mode"]).toBe("l2");
      expect(ipvlan["link"]).toBe("dm0");
      const vlan = linkDetails(ns.path, "vl42");
      expect(vlan.linkinfo?.info_kind).toBe("vlan");
      expect(vlan.linkinfo?.info_data?.["protocol"]).toBe("802.1Q");
      expect(vlan.linkinfo?.info_data?.["id"]).toBe(42);
      expect(vlan["link"]).toBe("dm0");
    });
  });

  test("our dist/bin/loopback runs in the guest: ADD sets lo UP in a container netns", async () => {
    const ns = await createContainerNetns();
    expect(isUp(findLink(ns.path, "lo"))).toBe(false);
    const inv = { containerID: "ctr-vm-lane", netns: ns.path, ifName: "eth0" };
    const config = { cniVersion: "1.0.0", name: "vm-lane", type: "loopback" };
    const result = expectResult(await execPlugin("loopback", { ...inv, command: "ADD", config }));
    expect(result["interfaces"]).toEqual([{ name: "lo", mac: "00:00:00:00:00:00", sandbox: ns.path }]);
    expect(isUp(findLink(ns.path, "lo"))).toBe(true);
    expectSuccess(await execPlugin("loopback", { ...inv, command: "DEL", config }), { silent: true });
    expect(isUp(findLink(ns.path, "lo"))).toBe(false);
  });
});
