/**
 * static: the result for every spec version (also compared with the Go
 * reference), CNI_ARGS IP/GATEWAY, the runtimeConfig > args > CNI_ARGS precedence, the CIDR error
 * messages, CHECK against prevResult, and a DEL that never fails.
 */
import { describe, expect, test } from "bun:test";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { staticConfig, type StaticOptions } from "../harness/configs.ts";
import { execGoPlugin, execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { ipamResultFor } from "../harness/expected-results.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { ALL_SPEC_VERSIONS, GO_REFERENCE_VERSIONS, hasCheck, resultFamily } from "../harness/versions.ts";

const FULL: StaticOptions = {
  addresses: [
    { address: "10.10.0.1/24", gateway: "10.10.0.254" },
    { address: "3ffe:ffff:0:01ff::1/64", gateway: "3ffe:ffff:0::1" },
  ],
  routes: [{ dst: "0.0.0.0/0" }, { dst: "192.168.0.0/16", gw: "10.10.5.1" }, { dst: "3ffe:ffff:0:01ff::1/64" }],
  dns: { nameservers: ["8.8.8.8"], domain: "example.com", search: ["example.com"] },
};

const FULL_RESULT = {
  ips: [
    { address: "10.10.0.1/24", gateway: "10.10.0.254" },
    { address: "3ffe:ffff:0:1ff::1/64", gateway: "3ffe:ffff::1" },
  ],
  routes: [{ dst: "0.0.0.0/0" }, { dst: "192.168.0.0/16", gw: "10.10.5.1" }, { dst: "3ffe:ffff:0:1ff::1/64" }],
  dns: { nameservers: ["8.8.8.8"], domain: "example.com", search: ["example.com"] },
};

function inv(command: string, config: Record<string, unknown>, extra: Partial<PluginInvocation> = {}): PluginInvocation {
  return { command, containerID: "ctr-static", netns: "/nonexistent/netns", ifName: "eth0", config, ...extra };
}

const addrs = (r: Record<string, any>): string[] => (r.ips ?? []).map((i: { address: string }) => i.address);

describe.skipIf(!sandboxed())("static", () => {
  useFixtureCleanup();

  for (const v of ALL_SPEC_VERSIONS) {
    test(`[${v}] static ADD returns the configured addresses, routes and ipam dns`, async () => {
      const result = expectResult(await execPlugin("static", inv("ADD", staticConfig({ ...FULL, cniVersion: v }))));
      expect(result).toEqual(ipamResultFor(v, FULL_RESULT));
    });

    test(`[${v}] static DEL succeeds and prints nothing, also for a never-added container`, async () => {
      expectSuccess(await execPlugin("static", inv("DEL", staticConfig({ ...FULL, cniVersion: v }), { containerID: "never" })), {
        silent: true,
      });
    });

    if (hasCheck(v)) {
      test(`[${v}] static CHECK accepts its own result and rejects a prevResult with another gateway`, async () => {
        const conf = staticConfig({ ...FULL, cniVersion: v });
        const result = expectResult(await execPlugin("static", inv("ADD", conf)));
        expectSuccess(await execPlugin("static", inv("CHECK", { ...conf, prevResult: result })), { silent: true });
        const tampered = structuredClone(result);
        tampered.ips[0].gateway = "10.10.0.253";
        expectCniError(await execPlugin("static", inv("CHECK", { ...conf, prevResult: tampered })), {
          code: 999,
          msg: "static: Failed to match addr 10.10.0.1 on interface eth0",
        });
      });
    }

    if (resultFamily(v) === "0.2") {
      test(`[${v}] static ADD refuses two addresses of one family with code 7 (Go: 999)`, async () => {
        const conf = staticConfig({ cniVersion: v, addresses: [{ address: "10.10.0.1/24" }, { address: "10.10.1.1/24" }] });
        expectCniError(await execPlugin("static", inv("ADD", conf)), {
          code: 7,
          msg: `CNI version ${v} does not support more than 1 address per family`,
        });
      });
    }
  }

  describe.skipIf(!hasGoPlugin("static"))("against the Go reference", () => {
    for (const v of GO_REFERENCE_VERSIONS) {
      test(`[${v}] static ADD result equals the Go reference's`, async () => {
        const conf = staticConfig({ ...FULL, cniVersion: v });
        const ours = expectResult(await execPlugin("static", inv("ADD", conf)));
        const theirs = expectResult(await execGoPlugin("static", inv("ADD", conf)));
        expect(ours).toEqual(theirs);
      });
    }
  });

  test("static ADD appends CNI_ARGS IP addresses to the config and gives GATEWAY to the addresses in its subnet", async () => {
    const conf = staticConfig({ cniVersion: "1.0.0", addresses: [{ address: "10.10.0.1/24" }] });
    const r = expectResult(
      await execPlugin("static", inv("ADD", conf, { args: "IP=10.20.0.5/24, fd00:20::5/64;GATEWAY=10.20.0.1,fd00:20::1" })),
    );
    expect(r.ips).toEqual([
      { address: "10.10.0.1/24" },
      { address: "10.20.0.5/24", gateway: "10.20.0.1" },
      { address: "fd00:20::5/64", gateway: "fd00:20::1" },
    ]);
  });

  test("static ADD lets args.cni.ips replace CNI_ARGS and config addresses", async () => {
    const conf = staticConfig({
      cniVersion: "1.0.0",
      addresses: [{ address: "10.10.0.1/24" }],
      top: { args: { cni: { ips: ["10.30.0.3/24"] } } },
    });
    const r = expectResult(await execPlugin("static", inv("ADD", conf, { args: "IP=10.20.0.5/24" })));
    expect(addrs(r)).toEqual(["10.30.0.3/24"]);
  });

  test("static ADD lets runtimeConfig.ips win over args.cni.ips and CNI_ARGS", async () => {
    const conf = staticConfig({
      cniVersion: "1.0.0",
      addresses: [{ address: "10.10.0.1/24" }],
      top: { args: { cni: { ips: ["10.30.0.3/24"] } }, runtimeConfig: { ips: ["10.40.0.4/24", "fd00:40::4/64"] } },
    });
    const r = expectResult(await execPlugin("static", inv("ADD", conf, { args: "IP=10.20.0.5/24" })));
    expect(addrs(r)).toEqual(["10.40.0.4/24", "fd00:40::4/64"]);
  });

  test("static ADD keeps two routes to the same destination with different gateways (ECMP)", async () => {
    const conf = staticConfig({
      cniVersion: "1.0.0",
      addresses: [{ address: "10.10.0.1/24" }],
      routes: [
        { dst: "0.0.0.0/0", gw: "10.10.0.253" },
        { dst: "0.0.0.0/0", gw: "10.10.0.254" },
      ],
    });
    const r = expectResult(await execPlugin("static", inv("ADD", conf)));
    expect(r.routes).toEqual([
      { dst: "0.0.0.0/0", gw: "10.10.0.253" },
      { dst: "0.0.0.0/0", gw: "10.10.0.254" },
    ]);
  });

  test("static ADD with no addresses succeeds with no ips for 1.0.0", async () => {
    const r = expectResult(await execPlugin("static", inv("ADD", staticConfig({ cniVersion: "1.0.0" }))));
    expect(r.ips ?? []).toEqual([]);
  });

  test("static CHECK without prevResult fails with code 7 naming prevResult (Go: 999)", async () => {
    expectCniError(await execPlugin("static", inv("CHECK", staticConfig({ ...FULL, cniVersion: "1.0.0" }))), {
      code: 7,
      msg: "Required prevResult missing",
    });
  });
});
