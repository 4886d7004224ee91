/**
 * bridge delegating IPAM DEL to host-local when the store cannot be written (issue 15.1): bridge
 * still tears down its own links, then reports host-local's failure (shared/undo/teardown.ts), and
 * a DEL after the disk recovers releases the address.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { registerCleanup, useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { bridgeConfig, bridgePorts, ipOf, ours, reservationFiles } from "../harness/bridge-helpers.ts";
import { findLink } from "../harness/ip-oracle.ts";
import { PrivateMountNs } from "../harness/mount-ns.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

describe.skipIf(!sandboxed())("bridge with a failing IPAM store", () => {
  useFixtureCleanup();

  test("bridge DEL on a read-only host-local dataDir removes its links, fails with host-local's code 999 naming the file; a later DEL releases it", async () => {
    const dataDir = makeTempDir();
    const conf = bridgeConfig({ cniVersion: "1.0.0", bridge: "tbrro", dataDir, subnets: ["10.78.1.0/24"] });
    const netns = await createContainerNetns();
    registerCleanup("bridge tbrro", () => void Bun.spawnSync(["ip", "link", "del", "tbrro"], { stderr: "ignore" }));
    const inv = (command: string, wrap?: string[]) => ({ command, containerID: "ctr-ro", netns: netns.path, ifName: "eth0", config: conf, ...(wrap ? { wrap } : {}) });
    const result = expectResult(await ours("bridge", inv("ADD")));
    const ip = ipOf(result.ips[0].address);
    expect(reservationFiles(join(dataDir, "brnet"))).toEqual([ip]);
    expect(bridgePorts("tbrro")).toHaveLength(1);

    const ns = await PrivateMountNs.start();
    ns.setReadOnly(dataDir, true);
    const failed = await ours("bridge", inv("DEL", ns.prefix));
    expectCniError(failed, { code: 999, msg: `remove ${join(dataDir, "brnet", ip)}: read-only file system` });
    // bridge's own teardown went ahead: the container interface and its host veth are gone.
    expect(findLink(netns.path, "eth0")).toBeUndefined();
    expect(bridgePorts("tbrro")).toEqual([]);
    expect(reservationFiles(join(dataDir, "brnet"))).toEqual([ip]);

    ns.setReadOnly(dataDir, false);
    expectSuccess(await ours("bridge", inv("DEL", ns.prefix)), { silent: true });
    expect(reservationFiles(join(dataDir, "brnet"))).toEqual([]);
    ns.close();
  });
});
