/**
 * The test harness itself: namespace fixtures, their cleanup, and the plugin runner (argv[0], env,
 * stdin, exit status), checked with a stand-in plugin script so a harness bug cannot hide a plugin bug.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pendingCleanups, runAllCleanups, useFixtureCleanup } from "../harness/cleanup.ts";
import { execPlugin } from "../harness/exec-plugin.ts";
import { addrsOf, findLink, ipJson, isUp, listLinks, listRoutes } from "../harness/ip-oracle.ts";
import { createContainerNetns, createPersistentNetns } from "../harness/netns.ts";
import { netnsIdOf, sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

describe.skipIf(!sandboxed())("harness", () => {
  useFixtureCleanup();

  test("sandbox runs the tests in a throwaway host netns with lo up", () => {
    expect(netnsIdOf("self")).not.toBe(netnsIdOf(1));
    expect(isUp(findLink(undefined, "lo"))).toBe(true);
  });

  test("createContainerNetns makes a fresh namespace with only lo, down", async () => {
    const ns = await createContainerNetns();
    expect(ns.path).toBe(`/proc/${ns.pid}/ns/net`);
    expect(ns.id).not.toBe(netnsIdOf("self"));
    const links = listLinks(ns.path);
    expect(links.map((l) => l.ifname)).toEqual(["lo"]);
    expect(isUp(links[0])).toBe(false);
  });

  test("createContainerNetns destroy removes the namespace path", async () => {
    const ns = await createContainerNetns();
    expect(existsSync(ns.path)).toBe(true);
    await ns.destroy();
    expect(existsSync(ns.path)).toBe(false);
  });

  test("fixture cleanup kills namespace holders and removes temp dirs", async () => {
    const ns = await createContainerNetns();
    const dir = makeTempDir();
    const persistent = createPersistentNetns();
    expect(pendingCleanups()).toBeGreaterThanOrEqual(3);
    runAllCleanups();
    expect(pendingCleanups()).toBe(0);
    await Bun.sleep(50);
    expect(existsSync(`/proc/${ns.pid}/ns/net`)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(persistent.path)).toBe(false);
  });

  test("createPersistentNetns bind-mounts a namespace that ip can enter", () => {
    const ns = createPersistentNetns();
    expect(listLinks(ns.path).map((l) => l.ifname)).toEqual(["lo"]);
    ns.destroy();
    expect(existsSync(ns.path)).toBe(false);
  });

  test("ip oracle reads links, addresses and routes inside a namespace, not ours", async () => {
    const ns = await createContainerNetns();
    ipJson(ns.path, "link", "set", "lo", "up");
    ipJson(ns.path, "addr", "add", "10.9.0.1/24", "dev", "lo");
    ipJson(ns.path, "route", "add", "10.8.0.0/16", "dev", "lo");
    expect(isUp(findLink(ns.path, "lo"))).toBe(true);
    expect(addrsOf(ns.path, "lo")).toContain("10.9.0.1/24");
    expect(listRoutes(ns.path).map((r) => r.dst)).toEqual(["10.8.0.0/16"]);
    expect(addrsOf(undefined, "lo")).not.toContain("10.9.0.1/24");
    expect(() => ipJson(ns.path, "link", "show", "no-such-link")).toThrow("no-such-link");
  });

  test("execPlugin runs the plugin like a runtime: argv0 = full path, CNI_* env, config on stdin", async () => {
    const dir = makeTempDir();
    const script = join(dir, "echo-plugin");
    writeFileSync(
      script,
      [
        "#!/bin/sh",
        'stdin=$(cat)',
        'printf \'{"argv0":"%s","command":"%s","cid":"%s","netns":"%s","ifname":"%s","args":"%s","path":"%s","unset":"%s","stdin":%s}\' \\',
        '  "$0" "$CNI_COMMAND" "$CNI_CONTAINERID" "$CNI_NETNS" "$CNI_IFNAME" "$CNI_ARGS" "$CNI_PATH" "${CNI_UNSET-unset}" "$stdin"',
        "exit 3",
      ].join("\n"),
    );
    chmodSync(script, 0o755);
    const run = await execPlugin("echo-plugin", {
      command: "ADD",
      containerID: "c1",
      netns: "/proc/1/ns/net",
      ifName: "eth0",
      args: "IP=10.0.0.2",
      config: { name: "n", cniVersion: "1.0.0" },
      binDir: dir,
    });
    expect(run.status).toBe(3);
    expect(run.json).toEqual({
      argv0: script,
      command: "ADD",
      cid: "c1",
      netns: "/proc/1/ns/net",
      ifname: "eth0",
      args: "IP=10.0.0.2",
      path: dir,
      unset: "unset",
      stdin: { name: "n", cniVersion: "1.0.0" },
    });
  });

  test("execPlugin leaves a variable unset when undefined and sends raw string stdin verbatim", async () => {
    const dir = makeTempDir();
    const script = join(dir, "env-plugin");
    writeFileSync(script, '#!/bin/sh\nprintf "%s|%s|" "${CNI_COMMAND-UNSET}" "${CNI_IFNAME-UNSET}"; cat\n');
    chmodSync(script, 0o755);
    const run = await execPlugin("env-plugin", { ifName: "", config: "{not json", binDir: dir });
    expect(run.status).toBe(0);
    expect(run.stdout).toBe("UNSET||{not json");
    expect(run.json).toBeUndefined();
  });
});
