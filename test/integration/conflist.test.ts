/**
 * The libcni-style conflist runner (test/harness/conflist.ts), exercised with the plugins that exist
 * now: host-local (or static) followed by loopback, which passes its prevResult through. Later
 * issues drive bridge/portmap chains with the same runner.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { ConflistPluginError, ConflistRunner, listBytes, type NetworkConfigList } from "../harness/conflist.ts";
import { findLink, isUp } from "../harness/ip-oracle.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { reservationContent, reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";

function hostLocalThenLoopback(dataDir: string, cniVersion: string): NetworkConfigList {
  return {
    cniVersion,
    name: "chain-net",
    plugins: [
      {
        type: "host-local",
        capabilities: { ips: true },
        ipam: { type: "host-local", dataDir, ranges: [[{ subnet: "10.77.0.0/24" }]], routes: [{ dst: "0.0.0.0/0" }] },
      },
      { type: "loopback" },
    ],
  };
}

describe.skipIf(!sandboxed())("conflist runner", () => {
  useFixtureCleanup();

  test("conflist ADD chains prevResult, injects name/cniVersion/runtimeConfig and writes libcni's cache file", async () => {
    const dataDir = makeTempDir();
    const cacheDir = makeTempDir();
    const ns = await createContainerNetns();
    const list = hostLocalThenLoopback(dataDir, "1.0.0");
    const runner = new ConflistRunner({ cacheDir });
    const rt = { containerID: "chain-1", netns: ns.path, ifName: "eth0", capabilityArgs: { ips: ["10.77.0.42/24"], mac: "x" } };
    const result = await runner.add(list, rt);

    expect(result).toEqual({
      cniVersion: "1.0.0",
      dns: {},
      ips: [{ address: "10.77.0.42/24", gateway: "10.77.0.1" }],
      routes: [{ dst: "0.0.0.0/0" }],
    });
    expect(runner.calls.map((c) => `${c.type}:${c.command}`)).toEqual(["host-local:ADD", "loopback:ADD"]);
    const [first, second] = runner.calls;
    expect(first!.config).toMatchObject({ name: "chain-net", cniVersion: "1.0.0", runtimeConfig: { ips: ["10.77.0.42/24"] } });
    expect(first!.config).not.toHaveProperty("prevResult");
    expect((first!.config.runtimeConfig as Record<string, unknown>).mac).toBeUndefined();
    expect(second!.config).toMatchObject({ name: "chain-net", cniVersion: "1.0.0", prevResult: first!.run.json });
    expect(second!.config).not.toHaveProperty("runtimeConfig");
    expect(isUp(findLink(ns.path, "lo"))).toBe(true);

    const cacheFile = join(cacheDir, "results", "chain-net-chain-1-eth0");
    expect(statSync(cacheFile).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(cacheFile)).mode & 0o777).toBe(0o700);
    const raw = readFileSync(cacheFile, "utf8");
    expect(Object.keys(JSON.parse(raw))).toEqual(["kind", "containerId", "config", "ifName", "networkName", "netns", "capabilityArgs", "result"]);
    const cached = JSON.parse(raw);
    expect(cached).toMatchObject({ kind: "cniCacheV1", containerId: "chain-1", ifName: "eth0", networkName: "chain-net", netns: ns.path });
    expect(Buffer.from(cached.config, "base64")).toEqual(Buffer.from(listBytes(list)));
    expect(cached.result).toEqual(result);
  });

  test("conflist CHECK runs every plugin in order with the cached result", async () => {
    const dataDir = makeTempDir();
    const ns = await createContainerNetns();
    const list = hostLocalThenLoopback(dataDir, "1.0.0");
    const runner = new ConflistRunner({ cacheDir: makeTempDir() });
    const rt = { containerID: "chain-2", netns: ns.path, ifName: "eth0" };
    const result = await runner.add(list, rt);
    await runner.check(list, rt);
    const checks = runner.calls.filter((c) => c.command === "CHECK");
    expect(checks.map((c) => c.type)).toEqual(["host-local", "loopback"]);
    for (const c of checks) expect(c.config.prevResult).toEqual(result);
  });

  test("conflist CHECK surfaces the failing plugin's CNI error", async () => {
    const ns = await createContainerNetns();
    const list = hostLocalThenLoopback(makeTempDir(), "1.0.0");
    const runner = new ConflistRunner({ cacheDir: makeTempDir() });
    const rt = { containerID: "chain-3", netns: ns.path, ifName: "eth0" };
    await runner.add(list, rt);
    Bun.spawnSync(["nsenter", `--net=${ns.path}`, "ip", "link", "set", "lo", "down"]);
    const err = await runner.check(list, rt).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConflistPluginError);
    expect((err as ConflistPluginError).type).toBe("loopback");
    expect((err as ConflistPluginError).cniMsg).toContain("loopback interface is down");
  });

  test("conflist CHECK is refused for a list version below 0.4.0", async () => {
    const runner = new ConflistRunner({ cacheDir: makeTempDir() });
    await expect(runner.check(hostLocalThenLoopback(makeTempDir(), "0.3.1"), { containerID: "c", netns: "", ifName: "eth0" })).rejects.toThrow(
      "does not support the CHECK command",
    );
    expect(runner.calls).toHaveLength(0);
  });

  for (const [cniVersion, withPrev] of [
    ["1.0.0", true],
    ["0.4.0", true],
    ["0.3.1", false],
  ] as const) {
    test(`[${cniVersion}] conflist DEL runs the plugins in reverse ${withPrev ? "with" : "without"} the cached prevResult and drops the cache`, async () => {
      const dataDir = makeTempDir();
      const cacheDir = makeTempDir();
      const ns = await createContainerNetns();
      const list = hostLocalThenLoopback(dataDir, cniVersion);
      const runner = new ConflistRunner({ cacheDir });
      const rt = { containerID: "chain-del", netns: ns.path, ifName: "eth0" };
      const result = await runner.add(list, rt);
      expect(reservations(join(dataDir, "chain-net"))).toEqual({ "10.77.0.2": reservationContent("chain-del", "eth0") });
      await runner.del(list, rt);
      const dels = runner.calls.filter((c) => c.command === "DEL");
      expect(dels.map((c) => c.type)).toEqual(["loopback", "host-local"]);
      for (const d of dels) {
        if (withPrev) expect(d.config.prevResult).toEqual(result);
        else expect(d.config).not.toHaveProperty("prevResult");
      }
      expect(reservations(join(dataDir, "chain-net"))).toEqual({});
      expect(isUp(findLink(ns.path, "lo"))).toBe(false);
      expect(existsSync(runner.cacheFilePath("chain-net", rt))).toBe(false);
    });
  }

  test("[1.1.0] conflist GC deletes stale cached attachments, then GCs each plugin with valid-attachments", async () => {
    const dataDir = makeTempDir();
    const list = hostLocalThenLoopback(dataDir, "1.1.0");
    const runner = new ConflistRunner({ cacheDir: makeTempDir() });
    const keep = { containerID: "keep", netns: (await createContainerNetns()).path, ifName: "eth0" };
    const stale = { containerID: "stale", netns: (await createContainerNetns()).path, ifName: "eth0" };
    await runner.add(list, keep);
    await runner.add(list, stale);
    expect(Object.keys(reservations(join(dataDir, "chain-net")))).toHaveLength(2);
    runner.calls.length = 0;
    await runner.gc(list, [{ containerID: "keep", ifname: "eth0" }]);
    expect(runner.calls.map((c) => `${c.type}:${c.command}`)).toEqual(["loopback:DEL", "host-local:DEL", "host-local:GC", "loopback:GC"]);
    const gcCall = runner.calls.find((c) => c.command === "GC")!;
    expect(gcCall.config["cni.dev/valid-attachments"]).toEqual([{ containerID: "keep", ifname: "eth0" }]);
    expect(gcCall.config["cni.dev/attachments"]).toEqual([{ containerID: "keep", ifname: "eth0" }]);
    expect(gcCall.run.status).toBe(0);
    expect(reservations(join(dataDir, "chain-net"))).toEqual({ "10.77.0.2": reservationContent("keep", "eth0") });
    expect(runner.cachedAttachments().map((a) => a.containerId)).toEqual(["keep"]);
  });

  test("[1.1.0] conflist STATUS runs every plugin", async () => {
    const runner = new ConflistRunner({ cacheDir: makeTempDir() });
    await runner.status(hostLocalThenLoopback(makeTempDir(), "1.1.0"));
    expect(runner.calls.map((c) => `${c.type}:${c.command}:${c.run.status}`)).toEqual(["host-local:STATUS:0", "loopback:STATUS:0"]);
  });

  test("conflist ADD with static then loopback passes static's result through unchanged", async () => {
    const ns = await createContainerNetns();
    const list: NetworkConfigList = {
      cniVersion: "0.4.0",
      name: "static-chain",
      plugins: [{ type: "static", ipam: { type: "static", addresses: [{ address: "10.66.0.5/24", gateway: "10.66.0.1" }] } }, { type: "loopback" }],
    };
    const runner = new ConflistRunner({ cacheDir: makeTempDir() });
    const result = await runner.add(list, { containerID: "s1", netns: ns.path, ifName: "eth0" });
    expect(result).toEqual({
      cniVersion: "0.4.0",
      ips: [{ version: "4", address: "10.66.0.5/24", gateway: "10.66.0.1" }],
      dns: {},
    });
  });

  test("conflist runner reports a plugin missing from the path like libcni", () => {
    const runner = new ConflistRunner({ cacheDir: makeTempDir(), path: ["/nonexistent"] });
    expect(() => runner.findInPath("bridge")).toThrow('failed to find plugin "bridge" in path [/nonexistent]');
    expect(() => runner.findInPath("../bridge")).toThrow("invalid plugin name");
  });
});
