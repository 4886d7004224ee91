/**
 * vrf chained after ptp + host-local: runs only in the VM lane (the
 * build host's kernel has no VRF). Asserted with `ip -j -d link` and `ip -j route show vrf`.
 */
import { expect, test } from "bun:test";
import { expectCniError, expectSuccess } from "../harness/cni-expect.ts";
import { ConflistRunner, type NetworkConfigList, type RuntimeConf } from "../harness/conflist.ts";
import { execPlugin } from "../harness/exec-plugin.ts";
import { ipJson } from "../harness/ip-oracle.ts";
import { detailedLink, ipIn } from "../harness/macvlan-helpers.ts";
import { ptpChain } from "../harness/meta-tuning-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { describeVm, vmPluginCalls } from "../harness/vm-lane.ts";

const { ids, inv } = vmPluginCalls("vrf", "eth0");

interface VrfAttachment {
  runner: ConflistRunner;
  list: NetworkConfigList;
  rt: RuntimeConf;
}

/** ptp + host-local then vrf (`vrf`: the plugin's own keys) as `ifName` in `netns`, ADDed. */
async function attach(version: string, netns: string, ifName: string, vrf: Record<string, unknown>, subnets: string[]): Promise<VrfAttachment> {
  const { cid, net } = ids(ifName);
  const list = ptpChain({ name: net, cniVersion: version, dataDir: makeTempDir("vrf-ipam-"), subnets, meta: [{ type: "vrf", ...vrf }] });
  const rt: RuntimeConf = { containerID: cid, netns, ifName };
  const runner = new ConflistRunner({ cacheDir: makeTempDir("vrf-cache-") });
  await runner.add(list, rt);
  return { runner, list, rt };
}

describeVm("vrf (chained after ptp)", { kernel: ["vrf"] }, () => {
  for (const v of ["0.3.1", "0.4.0", "1.0.0", "1.1.0"]) {
    test(`[${v}] creates the VRF, enslaves the interface, moves routes (IPv4 + IPv6 kept); DEL removes the VRF`, async () => {
      const ns = await createContainerNetns();
      const a = await attach(v, ns.path, "eth0", { vrfname: "blue" }, ["10.73.0.0/24", "fd73::/64"]);
      const vrf = detailedLink(ns.path, "blue");
      expect(vrf?.linkinfo?.info_kind).toBe("vrf");
      expect(vrf?.linkinfo?.info_data?.table).toBe(1);
      expect(detailedLink(ns.path, "eth0")?.master).toBe("blue");
      const addrs = ipJson<{ addr_info: { local: string; scope: string }[] }[]>(ns.path, "addr", "show", "dev", "eth0")[0]!.addr_info;
      expect(addrs.some((x) => x.local.startsWith("fd73::"))).toBe(true);
      const inVrf = ipJson<{ dst: string; gateway?: string }[]>(ns.path, "route", "show", "vrf", "blue");
      expect(inVrf).toContainEqual(expect.objectContaining({ dst: "default", gateway: "10.73.0.1" }));
      const inVrf6 = ipJson<{ dst: string; gateway?: string }[]>(ns.path, "-6", "route", "show", "vrf", "blue");
      expect(inVrf6).toContainEqual(expect.objectContaining({ dst: "default", gateway: "fd73::1" }));
      // vrf's own CHECK (ptp's CHECK looks for the routes in main, which vrf moved into the VRF).
      const conf = a.runner.buildPluginConfig(a.list, a.list.plugins[1]!, a.runner.cachedResult(a.list, a.rt), a.rt);
      if (v !== "0.3.1") {
        expectSuccess(await execPlugin("vrf", inv(ns.path, "CHECK", conf, a.rt.containerID)), { silent: true });
      }
      await a.runner.del(a.list, a.rt);
      expect(detailedLink(ns.path, "blue")).toBeUndefined();
    });
  }

  test("[1.0.0] two interfaces in one VRF: the VRF goes only with the last; different VRFs get tables 1 and 2", async () => {
    const ns = await createContainerNetns();
    const a = await attach("1.0.0", ns.path, "eth0", { vrfname: "red" }, ["10.74.0.0/24"]);
    const b = await attach("1.0.0", ns.path, "eth1", { vrfname: "red" }, ["10.75.0.0/24"]);
    const c = await attach("1.0.0", ns.path, "eth2", { vrfname: "green" }, ["10.76.0.0/24"]);
    expect(detailedLink(ns.path, "eth1")?.master).toBe("red");
    expect(detailedLink(ns.path, "green")?.linkinfo?.info_data?.table).toBe(2);
    await a.runner.del(a.list, a.rt);
    expect(detailedLink(ns.path, "red")).toBeDefined();
    await b.runner.del(b.list, b.rt);
    expect(detailedLink(ns.path, "red")).toBeUndefined();
    await c.runner.del(c.list, c.rt);
    expect(detailedLink(ns.path, "green")).toBeUndefined();
  });

  test("[1.0.0] table conflicts: same VRF with another table is refused; custom table is used", async () => {
    const ns = await createContainerNetns();
    const a = await attach("1.0.0", ns.path, "eth0", { vrfname: "blue", table: 42 }, ["10.77.0.0/24"]);
    expect(detailedLink(ns.path, "blue")?.linkinfo?.info_data?.table).toBe(42);
    await expect(attach("1.0.0", ns.path, "eth1", { vrfname: "blue", table: 43 }, ["10.78.0.0/24"])).rejects.toThrow(
      "VRF blue already exist with different routing table 43",
    );
    await a.runner.del(a.list, a.rt);
  });

  test("validation: missing vrfname, missing prevResult, interface that already has a master", async () => {
    const ns = await createContainerNetns();
    const add = (config: unknown) => execPlugin("vrf", inv(ns.path, "ADD", config, "vrf-val"));
    expectCniError(await add({ cniVersion: "1.0.0", name: "v", type: "vrf", prevResult: { cniVersion: "1.0.0" } }), {
      code: 7,
      msg: "configuration is expected to have a valid vrf name",
    });
    expectCniError(await add({ cniVersion: "1.0.0", name: "v", type: "vrf", vrfname: "x" }), {
      code: 999,
      msg: "missing prevResult from earlier plugin",
    });
    ipIn(ns.path, "link", "add", "br0", "type", "bridge");
    ipIn(ns.path, "link", "add", "eth0", "type", "dummy");
    ipIn(ns.path, "link", "set", "eth0", "master", "br0");
    expectCniError(await add({ cniVersion: "1.0.0", name: "v", type: "vrf", vrfname: "x", prevResult: { cniVersion: "1.0.0" } }), {
      code: 999,
      msg: "interface eth0 has already a master set: br0",
    });
  });
});
