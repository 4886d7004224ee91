/**
 * loopback: `lo` up on ADD, down on DEL, CHECK, STATUS/GC, and the
 * result shape for every spec version — including upstream's quirk that a 0.x config gets the 1.x
 * result shape with a 0.x label, and the real 0.1.0 shape when cniVersion is missing.
 */
import { describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execGoPlugin, execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { addrsOf, findLink, ipJson, isUp } from "../harness/ip-oracle.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { ALL_SPEC_VERSIONS, GO_REFERENCE_VERSIONS, hasCheck } from "../harness/versions.ts";

const conf = (cniVersion?: string): Record<string, unknown> =>
  cniVersion === undefined ? { name: "lo-net", type: "loopback" } : { name: "lo-net", type: "loopback", cniVersion };

function inv(netns: string, command: string, cniVersion?: string, extra: Partial<PluginInvocation> = {}): PluginInvocation {
  return { command, containerID: "ctr-lo", netns, ifName: "eth0", config: conf(cniVersion), ...extra };
}

/** The 1.x-shaped loopback result (HEAD's sorted keys; `"dns": {}` as Go 1.1.1, for iSulad) labelled `label`. */
function oneX(label: string, netns: string, addrs: string[]): Record<string, unknown> {
  return {
    cniVersion: label,
    dns: {},
    interfaces: [{ name: "lo", mac: "00:00:00:00:00:00", sandbox: netns }],
    ips: addrs.map((address) => ({ address, interface: 0 })),
  };
}

describe.skipIf(!sandboxed())("loopback", () => {
  useFixtureCleanup();

  for (const v of ALL_SPEC_VERSIONS) {
    test(`[${v}] loopback ADD sets lo UP and reports it in the 1.x shape labelled ${v}`, async () => {
      const ns = await createContainerNetns();
      expect(isUp(findLink(ns.path, "lo"))).toBe(false);
      const result = expectResult(await execPlugin("loopback", inv(ns.path, "ADD", v)));
      expect(isUp(findLink(ns.path, "lo"))).toBe(true);
      const addrs = addrsOf(ns.path, "lo");
      expect(addrs).toContain("127.0.0.1/8");
      const firstV4 = addrs.find((a) => !a.includes(":"))!;
      const firstV6 = addrs.find((a) => a.includes(":"));
      expect(result).toEqual(oneX(v, ns.path, firstV6 ? [firstV4, firstV6] : [firstV4]));
      for (const ip of result.ips) expect(ip).not.toHaveProperty("version");
      expect(result.dns).toEqual({}); // iSulad's libcni refuses a result without it
    });

    test(`[${v}] loopback DEL sets lo DOWN`, async () => {
      const ns = await createContainerNetns();
      expectResult(await execPlugin("loopback", inv(ns.path, "ADD", v)));
      expectSuccess(await execPlugin("loopback", inv(ns.path, "DEL", v)), { silent: true });
      expect(isUp(findLink(ns.path, "lo"))).toBe(false);
    });

    if (hasCheck(v)) {
      test(`[${v}] loopback CHECK succeeds when lo is up and fails when it is down`, async () => {
        const ns = await createContainerNetns();
        const result = expectResult(await execPlugin("loopback", inv(ns.path, "ADD", v)));
        const withPrev = { ...conf(v), prevResult: result };
        expectSuccess(await execPlugin("loopback", inv(ns.path, "CHECK", v, { config: withPrev })), { silent: true });
        ipJson(ns.path, "link", "set", "lo", "down");
        expectCniError(await execPlugin("loopback", inv(ns.path, "CHECK", v, { config: withPrev })), {
          code: 999,
          msg: "loopback interface is down",
        });
      });
    } else {
      test(`[${v}] loopback CHECK is refused by the config version (code 1)`, async () => {
        const ns = await createContainerNetns();
        expectCniError(await execPlugin("loopback", inv(ns.path, "CHECK", v)), {
          code: 1,
          msg: "config version does not allow CHECK",
        });
      });
    }
  }

  test("loopback ADD without cniVersion prints the real 0.1.0 shape", async () => {
    const ns = await createContainerNetns();
    const result = expectResult(await execPlugin("loopback", inv(ns.path, "ADD")));
    const addrs = addrsOf(ns.path, "lo");
    const v6 = addrs.find((a) => a.includes(":"));
    const expected: Record<string, unknown> = { cniVersion: "0.1.0", ip4: { ip: "127.0.0.1/8" }, dns: {} };
    if (v6) expected.ip6 = { ip: v6 };
    expect(result).toEqual(expected);
  });

  test("loopback ADD with a prevResult passes it through, converted to the config version", async () => {
    const ns = await createContainerNetns();
    const prevResult = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", mac: "0a:58:0a:01:02:03", sandbox: ns.path }],
      ips: [{ address: "10.1.2.3/24", gateway: "10.1.2.1", interface: 0 }],
      routes: [{ dst: "0.0.0.0/0", gw: "10.1.2.1" }],
      dns: { nameservers: ["10.1.2.1"] },
    };
    const result = expectResult(
      await execPlugin("loopback", inv(ns.path, "ADD", "1.0.0", { config: { ...conf("1.0.0"), prevResult } })),
    );
    expect(result).toEqual(prevResult);
    expect(isUp(findLink(ns.path, "lo"))).toBe(true);
  });

  test("loopback DEL succeeds when the netns is gone", async () => {
    const ns = await createContainerNetns();
    expectResult(await execPlugin("loopback", inv(ns.path, "ADD", "1.0.0")));
    await ns.destroy();
    expectSuccess(await execPlugin("loopback", inv(ns.path, "DEL", "1.0.0")), { silent: true });
  });

  test("loopback DEL succeeds without CNI_NETNS", async () => {
    expectSuccess(await execPlugin("loopback", { command: "DEL", containerID: "c", ifName: "eth0", config: conf("1.0.0") }), {
      silent: true,
    });
  });

  test("loopback DEL twice and DEL of a never-added container succeed", async () => {
    const ns = await createContainerNetns();
    expectSuccess(await execPlugin("loopback", inv(ns.path, "DEL", "1.0.0")));
    expectResult(await execPlugin("loopback", inv(ns.path, "ADD", "1.0.0")));
    expectSuccess(await execPlugin("loopback", inv(ns.path, "DEL", "1.0.0")));
    expectSuccess(await execPlugin("loopback", inv(ns.path, "DEL", "1.0.0")));
    expect(isUp(findLink(ns.path, "lo"))).toBe(false);
  });

  test("[1.1.0] loopback STATUS and GC succeed and print nothing", async () => {
    for (const command of ["STATUS", "GC"]) {
      const run = await execPlugin("loopback", {
        command,
        containerID: "",
        netns: "",
        ifName: "",
        args: "",
        config: { ...conf("1.1.0"), "cni.dev/valid-attachments": [] },
      });
      expectSuccess(run, { silent: true });
    }
  });

  test("[1.0.0] loopback STATUS and GC are refused by the config version (code 1)", async () => {
    for (const command of ["STATUS", "GC"]) {
      expectCniError(await execPlugin("loopback", { command, config: conf("1.0.0") }), {
        code: 1,
        msg: `config version does not allow ${command}`,
      });
    }
  });

  test("loopback ADD accepts CNI_ARGS=none (never parsed)", async () => {
    const ns = await createContainerNetns();
    expectResult(await execPlugin("loopback", inv(ns.path, "ADD", "1.0.0", { args: "none" })));
    expect(isUp(findLink(ns.path, "lo"))).toBe(true);
  });

  test("loopback ADD refuses a lo carrying a non-loopback address", async () => {
    const ns = await createContainerNetns();
    ipJson(ns.path, "addr", "add", "192.0.2.1/32", "dev", "lo");
    expectCniError(await execPlugin("loopback", inv(ns.path, "ADD", "1.0.0")), {
      code: 999,
      msg: 'loopback interface found with non-loopback address "192.0.2.1"',
    });
  });

  test("loopback ADD ignores CNI_IFNAME and always uses lo", async () => {
    const ns = await createContainerNetns();
    const result = expectResult(await execPlugin("loopback", inv(ns.path, "ADD", "1.0.0", { ifName: "whatever0" })));
    expect(result.interfaces[0].name).toBe("lo");
  });

  describe.skipIf(!hasGoPlugin("loopback"))("against the Go reference", () => {
    for (const v of GO_REFERENCE_VERSIONS) {
      test(`[${v}] loopback ADD result equals the Go reference's`, async () => {
        const ours = await createContainerNetns();
        const theirs = await createContainerNetns();
        const a = expectResult(await execPlugin("loopback", inv(ours.path, "ADD", v)));
        const b = expectResult(await execGoPlugin("loopback", inv(theirs.path, "ADD", v)));
        b.interfaces[0].sandbox = ours.path;
        expect(a).toEqual(b);
      });
    }
  });
});
