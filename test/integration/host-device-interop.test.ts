/**
 * host-device interop with the Go reference (Debian 1.1.1, /usr/lib/cni/host-device): both keep the
 * host name in the link alias, so an attachment made by one is returned by the other. Go ADD → our
 * CHECK and DEL; our ADD → Go CHECK and DEL; with host-local IPAM the reservation goes too.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execGoPlugin, execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { hostDeviceConf, hostVeth, linkDetails, uniqueName } from "../harness/host-device-helpers.ts";
import { addrsOf } from "../harness/ip-oracle.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { DIST_BIN, hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";

let seq = 0;
function inv(command: string, netns: string, config: unknown, containerID: string): PluginInvocation {
  // IPAM is always ours (host-local), whichever host-device runs.
  return { command, containerID, netns, ifName: "net1", config, path: DIST_BIN };
}

type Runner = typeof execPlugin;
const sides: [string, Runner, string, Runner][] = [
  ["Go", execGoPlugin, "ours", execPlugin],
  ["ours", execPlugin, "Go", execGoPlugin],
];

describe.skipIf(!sandboxed() || !hasGoPlugin("host-device"))("host-device interop with the Go reference", () => {
  useFixtureCleanup();

  for (const [addName, add, otherName, other] of sides) {
    test(`${addName} ADD → ${otherName} CHECK and DEL return the device (name, MAC) and release the IP`, async () => {
      seq++;
      const dev = hostVeth(uniqueName("hdg"));
      const mac = linkDetails(undefined, dev.name)!.address!;
      const ns = await createContainerNetns();
      const dataDir = makeTempDir("hostdev-interop-");
      const net = `hd-interop-${seq}`;
      const cid = `hd-interop-${process.pid}-${seq}`;
      const conf = hostDeviceConf({ cniVersion: "1.0.0", name: net, top: { device: dev.name }, ipam: { dataDir, subnet: "10.84.0.0/24" } });

      const result = expectResult(await add("host-device", inv("ADD", ns.path, conf, cid)));
      expect(result.interfaces).toEqual([{ name: "net1", mac, sandbox: ns.path }]);
      expect(linkDetails(ns.path, "net1")).toMatchObject({ address: mac, ifalias: dev.name });
      expect(linkDetails(ns.path, "net1")!.flags).toContain("UP");
      expect(addrsOf(ns.path, "net1")).toContain("10.84.0.2/24");

      expectSuccess(await other("host-device", inv("CHECK", ns.path, { ...conf, prevResult: result }, cid)));
      expectSuccess(await other("host-device", inv("DEL", ns.path, conf, cid)));
      expect(linkDetails(ns.path, "net1")).toBeUndefined();
      expect(linkDetails(undefined, dev.name)).toMatchObject({ address: mac });
      expect(reservations(join(dataDir, net))).toEqual({});
    });
  }

  test("without IPAM, 1.0.0: Go and ours print the same result for the same device", async () => {
    const dev = hostVeth(uniqueName("hdh"));
    const ns = await createContainerNetns();
    const conf = hostDeviceConf({ cniVersion: "1.0.0", top: { device: dev.name } });
    const goResult = expectResult(await execGoPlugin("host-device", inv("ADD", ns.path, conf, "go")));
    expectSuccess(await execPlugin("host-device", inv("DEL", ns.path, conf, "go")));
    const ours = expectResult(await execPlugin("host-device", inv("ADD", ns.path, conf, "ours")));
    expectSuccess(await execGoPlugin("host-device", inv("DEL", ns.path, conf, "ours")));
    expect(ours).toEqual(goResult);
  });
});
