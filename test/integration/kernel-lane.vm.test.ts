/**
 * Proof that the VM lane works (test/vm/README.md): this file runs only there (`*.vm.test.ts`),
 * inside Debian's stock kernel, and checks that the kernel features the build host lacks are
 * really usable — a vlan-filtering bridge with a VLAN on a port, ipvlan, 8021q vlan and dummy links
 * — and that our build in dist/ runs in the guest. Every kernel object lives in a fresh container
 * namespace that is removed after each test.
 */
import { describe, expect, test } from "bun:test";
import { expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execPlugin } from "../harness/exec-plugin.ts";
import { findLink, isUp } from "../harness/ip-oracle.ts";
import { KERNEL_FEATURES, kernelProbe, requireKernel } from "../harness/kernel.ts";
import { detailedLink, ipIn } from "../harness/macvlan-helpers.ts";
import { describeVm, vmPluginCalls } from "../harness/vm-lane.ts";

const { setUp, inv } = vmPluginCalls("vml", "eth0");

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

describeVm("VM lane", { onlyInVm: true }, () => {
  // A feature missing here makes requireKernel() register a failing test; these say it directly.
  for (const feature of KERNEL_FEATURES) {
    test(`the guest kernel supports ${feature}`, () => {
      expect(kernelProbe(feature)).toEqual({ supported: true, detail: "" });
    });
  }

  describe.skipIf(requireKernel("bridge_vlan_filtering") !== undefined)("bridge vlan_filtering", () => {
    test("a vlan-filtering bridge accepts VLAN 100 on a port (bridge -j vlan show)", async () => {
      const { ns } = await setUp("links");
      ipIn(ns.path, "link", "add", "br0", "type", "bridge", "vlan_filtering", "1");
      ipIn(ns.path, "link", "add", "p0", "type", "veth", "peer", "name", "p0peer");
      ipIn(ns.path, "link", "set", "p0", "master", "br0");
      ipIn(ns.path, "link", "set", "br0", "up");
      ipIn(ns.path, "link", "set", "p0", "up");
      const run = Bun.spawnSync(["nsenter", `--net=${ns.path}`, "--", "bridge", "vlan", "add", "dev", "p0", "vid", "100", "pvid", "untagged"]);
      expect(run.exitCode).toBe(0);

      const bridge = detailedLink(ns.path, "br0");
      expect(bridge?.linkinfo?.info_kind).toBe("bridge");
      expect(bridge?.linkinfo?.info_data?.["vlan_filtering"]).toBe(1);
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
      const { ns } = await setUp("links");
      ipIn(ns.path, "link", "add", "dm0", "type", "dummy");
      ipIn(ns.path, "link", "add", "ipv0", "link", "dm0", "type", "ipvlan", "mode", "l2");
      ipIn(ns.path, "link", "add", "vl42", "link", "dm0", "type", "vlan", "id", "42");

      const dummy = detailedLink(ns.path, "dm0");
      expect(dummy?.linkinfo?.info_kind).toBe("dummy");
      const ipvlan = detailedLink(ns.path, "ipv0");
      expect(ipvlan?.linkinfo?.info_kind).toBe("ipvlan");
      expect(ipvlan?.linkinfo?.info_data?.["mode"]).toBe("l2");
      expect(ipvlan?.["link"]).toBe("dm0");
      const vlan = detailedLink(ns.path, "vl42");
      expect(vlan?.linkinfo?.info_kind).toBe("vlan");
      expect(vlan?.linkinfo?.info_data?.["protocol"]).toBe("802.1Q");
      expect(vlan?.linkinfo?.info_data?.["id"]).toBe(42);
      expect(vlan?.["link"]).toBe("dm0");
    });
  });

  test("our dist/bin/loopback runs in the guest: ADD sets lo UP in a container netns", async () => {
    const { cid, ns } = await setUp("loopback");
    expect(isUp(findLink(ns.path, "lo"))).toBe(false);
    const config = { cniVersion: "1.0.0", name: "vm-lane", type: "loopback" };
    const result = expectResult(await execPlugin("loopback", inv(ns.path, "ADD", config, cid)));
    expect(result["interfaces"]).toEqual([{ name: "lo", mac: "00:00:00:00:00:00", sandbox: ns.path }]);
    expect(isUp(findLink(ns.path, "lo"))).toBe(true);
    expectSuccess(await execPlugin("loopback", inv(ns.path, "DEL", config, cid)), { silent: true });
    expect(isUp(findLink(ns.path, "lo"))).toBe(false);
  });
});
