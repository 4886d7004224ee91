/**
 * Resident mode for real: the shim in dist/bin under every plugin name and `cni-plugins serve` (the
 * built executable) in the test's own namespaces. A call through the agent answers exactly what the
 * standalone executable answers; the agent serves only callers that share its namespaces and build
 * (the others run standalone and still succeed); the shim falls back when there is no agent or a
 * stale socket; an agent killed in the middle of a 50-pod ADD burst costs at worst code 11, and DEL
 * leaves nothing; restarts and SIGTERM drain without failing a call; socket activation, the socket's
 * modes, the caller's cwd and umask, and the dhcp daemon in the agent.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { startAgent, waitForSocket } from "../harness/agent.ts";
import { bridgeConfig, bridgePorts, iptablesNat, ours, reservationFiles } from "../harness/bridge-helpers.ts";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { describeRun, execPlugin, type PluginInvocation, type PluginRun } from "../harness/exec-plugin.ts";
import { findLink, listLinks } from "../harness/ip-oracle.ts";
import { createContainerNetns, type ContainerNetns } from "../harness/netns.ts";
import { DIST_BIN, MULTI_CALL_BINARY, REPO_ROOT } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { ptpConf } from "../harness/ptp-helpers.ts";

/** A socket path where nothing listens: the shim runs standalone. */
const NO_AGENT = "/run/cni/no-agent-here.sock";

function via(socket: string, inv: PluginInvocation): PluginInvocation {
  return { ...inv, env: { ...inv.env, CNI_PLUGINS_SOCKET: socket } };
}

/** The parts of a run that must not depend on how it was served. */
function answer(r: PluginRun): { status: number | null; stdout: string; stderr: string } {
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe.skipIf(!sandboxed())("resident agent and exec shim", () => {
  useFixtureCleanup();

  test("dist/bin: every plugin name is the static shim; cni-plugins is the standalone executable", () => {
    const shim = statSync(join(DIST_BIN, "cni-plugins-shim"));
    for (const name of ["bridge", "loopback", "host-local", "portmap"]) expect(statSync(join(DIST_BIN, name)).ino).toBe(shim.ino);
    expect(statSync(MULTI_CALL_BINARY).ino).not.toBe(shim.ino);
    expect(shim.size).toBeLessThan(1024 * 1024);
    const ldd = Bun.spawnSync(["ldd", join(DIST_BIN, "bridge")]);
    expect(`${ldd.stdout}${ldd.stderr}`).toContain("not a dynamic executable");
  });

  test("answers through the agent equal the standalone answers: VERSION, loopback, bridge+host-local ADD/CHECK/DEL, errors", async () => {
    const agent = await startAgent();
    /** One sequence of calls; the answers with what differs per run (MACs, addresses, paths) masked. */
    const sequence = async (socket: string): Promise<ReturnType<typeof answer>[]> => {
      const ns = await createContainerNetns();
      const dataDir = makeTempDir();
      const conf = bridgeConfig({ name: "agent-eq", cniVersion: "1.1.0", bridge: "agbr0", dataDir, subnets: ["10.81.0.0/24"], extra: { isGateway: true } });
      const add = { command: "ADD", containerID: "eq1", netns: ns.path, ifName: "eth0", config: conf } as const;
      const calls: [string, PluginInvocation][] = [
        ["bridge", { command: "VERSION" }],
        ["bridge", {}], // no CNI_COMMAND: the about text on stderr
        ["loopback", { command: "ADD", containerID: "lo1", netns: ns.path, ifName: "lo", config: { cniVersion: "1.0.0", name: "lo", type: "loopback" } }],
        ["bridge", add],
        ["bridge", add], // exists already: an error
        ["bridge", { ...add, command: "DEL" }],
        ["bridge", add],
        ["bridge", { ...add, config: { ...conf, mtu: "abc" } }], // code 7
        ["bridge", { ...add, ifName: undefined }], // no CNI_IFNAME: code 4
        ["bridge", { ...add, config: "{not json" }], // code 6
      ];
      const out = [];
      let result: unknown;
      for (const [type, inv] of calls) {
        const r = await execPlugin(type, via(socket, inv));
        if (inv === calls[6]![1]) result = r.json;
        out.push(answer(r));
      }
      out.push(answer(await execPlugin("bridge", via(socket, { ...add, command: "CHECK", config: { ...conf, prevResult: result } }))));
      out.push(answer(await execPlugin("bridge", via(socket, { ...add, command: "DEL" }))));
      expect(reservationFiles(join(dataDir, "agent-eq"))).toEqual([]);
      const mask = (text: string) =>
        text
          .replace(/"mac": "[0-9a-f:]+"/g, '"mac": "M"')
          .replace(/10\.81\.0\.\d+/g, "10.81.0.X")
          .replaceAll(ns.path, "NETNS")
          .replace(/veth[0-9a-f]{8}/g, "vethX");
      return out.map((a) => ({ ...a, stdout: mask(a.stdout), stderr: mask(a.stderr) }));
    };
    const standalone = await sequence(NO_AGENT);
    const resident = await sequence(agent.socket);
    expect(resident).toEqual(standalone);
    expect(standalone.map((a) => a.status)).toEqual([0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 0, 0]);
    expect(agent.served()).toBe(standalone.length);
    expect(agent.refused()).toEqual([]);
  }, 120_000);

  test("callers in another network or mount namespace are not served; their calls run standalone and succeed", async () => {
    const agent = await startAgent();
    const host = await createContainerNetns();
    const ns = await createContainerNetns();
    const lo = { command: "ADD", containerID: "lo-ns", netns: ns.path, ifName: "lo", config: { cniVersion: "1.0.0", name: "lo", type: "loopback" } } as const;
    const otherNet = await execPlugin("loopback", via(agent.socket, { ...lo, hostNetns: host.path }));
    expect(otherNet.status).toBe(0);
    const otherMnt = await execPlugin("loopback", via(agent.socket, { ...lo, wrap: ["unshare", "--mount", "--propagation", "private", "--"] }));
    expect(otherMnt.status).toBe(0);
    const refused = agent.refused();
    expect(refused).toHaveLength(2);
    expect(refused[0]).toContain("is in another network namespace");
    expect(refused[1]).toContain("is in another mount namespace");
    expect(agent.served()).toBe(0);
  });

  test("VERSION answers while the caller's stdin stays open (a terminal): through the agent and standalone", async () => {
    const agent = await startAgent();
    for (const socket of [agent.socket, NO_AGENT]) {
      const proc = Bun.spawn([join(DIST_BIN, "bridge")], { env: { CNI_COMMAND: "VERSION", CNI_PLUGINS_SOCKET: socket }, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
      const status = await Promise.race([proc.exited, Bun.sleep(10_000).then(() => "hung")]);
      if (status === "hung") proc.kill("SIGKILL");
      expect(status).toBe(0);
      expect(JSON.parse(await new Response(proc.stdout).text()).supportedVersions).toContain("1.1.0");
      proc.stdin.end();
    }
    expect(agent.served()).toBe(1);
  });

  test("a call that ends before reading its stdin answers while the shim is still sending a large one (not 'try again later')", async () => {
    const agent = await startAgent();
    // An environment error (code 4) comes before stdin is read; 8 MiB of stdin fill the socket meanwhile.
    const inv: PluginInvocation = { command: "DEL", containerID: "/starts-with-a-slash", netns: "/proc/self/ns/net", ifName: "eth0", config: `{"pad":"${"x".repeat(8 << 20)}"}` };
    const standalone = await execPlugin("static", via(NO_AGENT, inv));
    expect(standalone.json).toMatchObject({ code: 4 });
    for (let i = 0; i < 5; i++) expect(answer(await execPlugin("static", via(agent.socket, inv)))).toEqual(answer(standalone));
    expect(agent.served()).toBe(5);
    expect(await agent.stop()).toBe(0);
  });

  test("a shim of another build runs standalone (an upgrade before the agent restarts)", async () => {
    const agent = await startAgent();
    const dir = makeTempDir("cni-other-build-");
    const cc = Bun.spawnSync(["cc", "-static", "-Os", "-DCNI_BUILD_ID=\"0000other0000\"", "-o", join(dir, "loopback"), join(REPO_ROOT, "shim", "cni-shim.c")]);
    expect(cc.exitCode).toBe(0);
    symlinkSync(MULTI_CALL_BINARY, join(dir, "cni-plugins"));
    const r = await execPlugin("loopback", via(agent.socket, { command: "VERSION", binDir: dir }));
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).supportedVersions).toContain("1.1.0");
    expect(agent.refused()[0]).toContain("shim of build 0000other0000");
  });

  test("no agent: a missing socket, a stale socket file and a path that is not a socket all run standalone", async () => {
    const dir = makeTempDir();
    const stale = await startAgent([], { dir });
    expect(await stale.stop("SIGKILL")).toBeNull();
    expect(existsSync(stale.socket)).toBe(true); // left by the killed agent
    const notSocket = join(dir, "plain-file");
    Bun.write(notSocket, "");
    for (const socket of [join(dir, "missing.sock"), stale.socket, notSocket, "/" + "x".repeat(200)]) {
      const r = await execPlugin("bridge", via(socket, { command: "VERSION" }));
      expect(describeRun(r)).toStartWith("exit=0");
    }
  });

  test("the socket's directory is made 0700 and the socket 0600; a second agent on a live socket refuses to start", async () => {
    const dir = join(makeTempDir(), "private");
    const agent = await startAgent([], { dir });
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(agent.socket).mode & 0o777).toBe(0o600);
    const second = Bun.spawnSync([MULTI_CALL_BINARY, "serve", "--socket", agent.socket]);
    expect(second.exitCode).toBe(1);
    expect(second.stderr.toString()).toContain(`another process is already listening on ${agent.socket}`);
  });

  test("a call runs in its caller's working directory with its caller's umask (host-local's relative dataDir)", async () => {
    const agent = await startAgent();
    const ns = await createContainerNetns();
    const cwd = makeTempDir("cni-agent-cwd-");
    const ipam = { cniVersion: "1.0.0", name: "relnet", type: "bridge", ipam: { type: "host-local", subnet: "10.82.0.0/24", dataDir: "relative-store" } };
    for (const [socket, id] of [
      [agent.socket, "viaagent"],
      [NO_AGENT, "standalone"],
    ] as const) {
      const r = await execPlugin("host-local", via(socket, { command: "ADD", containerID: id, netns: ns.path, ifName: "eth0", config: ipam, cwd, wrap: ["sh", "-c", 'umask 077 && exec "$@"', "sh"] }));
      expect(describeRun(r)).toStartWith("exit=0");
    }
    const store = join(cwd, "relative-store", "relnet");
    const files = readdirSync(store).filter((f) => f.startsWith("10.82."));
    expect(files).toHaveLength(2);
    for (const f of files) expect(statSync(join(store, f)).mode & 0o777).toBe(0o600);
    expect(agent.served()).toBe(1);
  });

  test("kill -9 of the agent during a 50-pod ADD burst: every ADD succeeds or says 'try again later' (11); DEL leaves nothing", async () => {
    const agent = await startAgent(["--max-workers", "8"]);
    const bridge = "agkill0";
    const dataDir = makeTempDir();
    const conf = bridgeConfig({ name: "agent-kill", cniVersion: "1.0.0", bridge, dataDir, subnets: ["10.83.0.0/24"], extra: { isGateway: true, ipMasq: true } });
    const nss: ContainerNetns[] = [];
    for (let i = 0; i < 50; i++) nss.push(await createContainerNetns());
    const inv = (i: number, command: "ADD" | "DEL") => via(agent.socket, { command, containerID: `kill-${i}`, netns: nss[i]!.path, ifName: "eth0", config: conf, timeoutMs: 120_000 });
    const adds = nss.map((_, i) => ours("bridge", inv(i, "ADD")));
    // Kill once the agent has served a few of them.
    for (let waited = 0; agent.served() < 5 && waited < 20_000; waited += 10) await Bun.sleep(10);
    process.kill(agent.pid, "SIGKILL");
    const results = await Promise.all(adds);
    const lost = results.filter((r) => r.status !== 0);
    for (const r of lost) {
      expect(r.json).toMatchObject({ code: 11 });
      expect(r.json.msg).toContain(`try again later: the resident agent at ${agent.socket}`);
    }
    process.stderr.write(`NOTE agent kill: ${results.length - lost.length} ADDs succeeded (${agent.served()} through the agent), ${lost.length} got code 11\n`);
    const dels = await Promise.all(nss.map((_, i) => ours("bridge", inv(i, "DEL"))));
    expect(dels.filter((r) => r.status !== 0).map(describeRun)).toEqual([]);
    expect(bridgePorts(bridge)).toEqual([]);
    expect(reservationFiles(join(dataDir, "agent-kill"))).toEqual([]);
    expect(iptablesNat()).not.toContain("agent-kill");
    for (const ns of nss) expect(findLink(ns.path, "eth0")).toBeUndefined();
  }, 300_000);

  test("shims killed mid-ADD (a runtime's timeout), DEL sent at once: the DEL waits for the ADD it follows and leaves nothing", async () => {
    const agent = await startAgent(["--max-workers", "32"]);
    const dataDir = makeTempDir();
    const conf = ptpConf({ name: "agent-timeout", dataDir, subnets: ["10.84.0.0/24"] });
    const store = join(dataDir, "agent-timeout");
    mkdirSync(store, { recursive: true });
    const nss: ContainerNetns[] = [];
    for (let i = 0; i < 10; i++) nss.push(await createContainerNetns());
    const linksBefore = listLinks(undefined).map((l) => l.ifname);
    // ptp ADD asks host-local first, and host-local waits for its store's lock, held here for 1.5 s:
    // each ADD is still waiting when its shim is killed at 300 ms, and goes on in the agent; its DEL
    // follows at once and must leave nothing once both have ended. (That the agent runs the DEL
    // after the ADD, not beside it, agent/agent.test.ts checks with calls it controls.)
    const holder = Bun.spawn(["flock", join(store, "lock"), "sleep", "1.5"]);
    await Bun.sleep(100);
    const inv = (i: number, command: "ADD" | "DEL", timeoutMs: number) =>
      via(agent.socket, { command, containerID: `tmo-${i}`, netns: nss[i]!.path, ifName: "eth0", config: conf, timeoutMs });
    const runs = await Promise.all(
      nss.map(async (_, i) => {
        const add = await ours("ptp", inv(i, "ADD", 300));
        return { add, del: await ours("ptp", inv(i, "DEL", 120_000)) };
      }),
    );
    await holder.exited;
    expect(runs.filter((r) => r.add.signal === null).map((r) => describeRun(r.add))).toEqual([]); // every ADD was still waiting
    expect(runs.filter((r) => r.del.status !== 0).map((r) => describeRun(r.del))).toEqual([]);
    expect(agent.served()).toBe(20);
    await agent.stop();
    expect(listLinks(undefined).map((l) => l.ifname).filter((n) => !linksBefore.includes(n))).toEqual([]);
    expect(reservationFiles(store)).toEqual([]);
    for (const ns of nss) expect(findLink(ns.path, "eth0")).toBeUndefined();
  }, 300_000);

  test("graceful restarts (--max-requests, SIGHUP) keep the pid and the socket, and fail no call", async () => {
    const agent = await startAgent(["--max-requests", "7"]);
    const runs: Promise<PluginRun>[] = [];
    for (let i = 0; i < 30; i++) {
      runs.push(execPlugin("bridge", via(agent.socket, { command: "VERSION" })));
      if (i % 3 === 0) await Bun.sleep(15);
    }
    // The restart by --max-requests first (on a busy machine the 30 calls may not all be answered yet), then one by SIGHUP.
    for (let i = 0; i < 500 && !agent.log().includes("restarting: 7 calls served"); i++) await Bun.sleep(10);
    process.kill(agent.pid, "SIGHUP");
    for (let i = 0; i < 10; i++) runs.push(execPlugin("loopback", via(agent.socket, { command: "VERSION" })));
    const results = await Promise.all(runs);
    expect(results.filter((r) => r.status !== 0).map(describeRun)).toEqual([]);
    await waitForSocket(agent.socket);
    const after = await execPlugin("bridge", via(agent.socket, { command: "VERSION" }));
    expect(after.status).toBe(0);
    expect(agent.log()).toContain("restarting: 7 calls served (--max-requests 7)");
    expect(agent.log().match(/serving on /g)?.length).toBeGreaterThanOrEqual(2);
    expect(Bun.spawnSync(["kill", "-0", String(agent.pid)]).exitCode).toBe(0); // the same process
    expect(await agent.stop()).toBe(0);
    expect(existsSync(agent.socket)).toBe(false); // the final stop removes the socket it made
  }, 60_000);

  test("SIGHUPs in quick succession, some while the new image starts: the agent restarts and lives on", async () => {
    const agent = await startAgent();
    for (let i = 0; i < 40; i++) {
      process.kill(agent.pid, "SIGHUP");
      await Bun.sleep(i % 10);
    }
    await Bun.sleep(300);
    const r = await execPlugin("bridge", via(agent.socket, { command: "VERSION" }));
    expect(describeRun(r)).toStartWith("exit=0");
    expect(Bun.spawnSync(["kill", "-0", String(agent.pid)]).exitCode).toBe(0);
    expect(agent.log()).toContain("restarting: SIGHUP");
    expect(await agent.stop()).toBe(0);
  }, 60_000);

  test("the agent runs with its JavaScriptCore options (FTL off: agent/runtime-options.ts); an operator's value stands", async () => {
    const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    const defaults = await startAgent();
    expect(environ(defaults.pid)).toContain("BUN_JSC_useFTLJIT=0");
    expect(describeRun(await execPlugin("bridge", via(defaults.socket, { command: "VERSION" })))).toStartWith("exit=0");
    expect(defaults.served()).toBe(1);
    process.kill(defaults.pid, "SIGHUP"); // a restart keeps them
    await Bun.sleep(300);
    await waitForSocket(defaults.socket);
    expect(environ(defaults.pid)).toContain("BUN_JSC_useFTLJIT=0");
    expect(await defaults.stop()).toBe(0);
    const chosen = await startAgent([], { env: { BUN_JSC_useFTLJIT: "1" } });
    expect(environ(chosen.pid).filter((v) => v.startsWith("BUN_JSC_"))).toEqual(["BUN_JSC_useFTLJIT=1"]);
    expect(await chosen.stop()).toBe(0);
  });

  test("socket activation: the agent serves on the socket it is passed, and leaves the file to its owner", async () => {
    const dir = makeTempDir();
    const socket = join(dir, "activated.sock");
    // What systemd does: bind and listen, then exec the service with fd 3 and LISTEN_* set.
    const activate = `import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(64)
os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)  # dup2(3, 3) would leave close-on-exec set
os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES="agent")
os.execv(sys.argv[2], sys.argv[2:])`;
    const agent = await startAgent([], { dir, argvPrefix: ["python3", "-c", activate, socket], waitFor: socket });
    const r = await execPlugin("bridge", via(socket, { command: "VERSION" }));
    expect(r.status).toBe(0);
    expect(agent.served()).toBe(1);
    expect(agent.log()).toContain("serving on inherited fd 3");
    expect(await agent.stop()).toBe(0);
    expect(existsSync(socket)).toBe(true); // systemd's, not the agent's
  });

  test("--dhcp: the same process serves the dhcp daemon's socket", async () => {
    const dir = makeTempDir();
    const dhcpSocket = join(dir, "dhcp.sock");
    const leases = makeTempDir();
    const agent = await startAgent(["--dhcp", "--", "-socketpath", dhcpSocket, "-leasedir", leases], { dir, waitFor: dhcpSocket });
    const conf = { cniVersion: "1.1.0", name: "dhcpnet", type: "macvlan", master: "lo", ipam: { type: "dhcp", daemonSocketPath: dhcpSocket } };
    const status = await execPlugin("dhcp", via(agent.socket, { command: "STATUS", config: { ...conf, type: "dhcp" } }));
    expect(describeRun(status)).toStartWith("exit=0");
    expect(statSync(dhcpSocket).mode & 0o777).toBe(0o600);
    expect(await agent.stop()).toBe(0);
    expect(existsSync(dhcpSocket)).toBe(false);
    expect(agent.log()).toContain("listening on the socket of the process it runs in");
  });
});

describe.skipIf(!sandboxed())("the exec shim on its own", () => {
  test("--namespaces-of PID runs a program in that process's mount namespace; other uses say how to use it", async () => {
    const shim = join(DIST_BIN, "cni-plugins-shim");
    const usage = Bun.spawnSync([shim]);
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr.toString()).toContain("usage: cni-plugins-shim --namespaces-of PID PROGRAM");
    expect(Bun.spawnSync([shim, "--namespaces-of", "1;x", "/bin/true"]).exitCode).toBe(2);
    // A process in a mount namespace of its own (as the host's PID 1 is to a container).
    const other = Bun.spawn(["unshare", "--mount", "--propagation", "private", "--", "sleep", "30"]);
    try {
      const theirs = () => Bun.spawnSync(["readlink", `/proc/${other.pid}/ns/mnt`]).stdout.toString().trim();
      const ours = Bun.spawnSync(["readlink", "/proc/self/ns/mnt"]).stdout.toString().trim();
      for (let i = 0; theirs() === ours && i < 100; i++) await Bun.sleep(10);
      expect(theirs()).not.toBe(ours);
      const r = Bun.spawnSync([shim, "--namespaces-of", String(other.pid), "/usr/bin/readlink", "/proc/self/ns/mnt"]);
      expect(r.stderr.toString()).toBe("");
      expect(r.stdout.toString().trim()).toBe(theirs());
    } finally {
      other.kill("SIGKILL");
    }
  });

  test("a plugin name copied (not linked) elsewhere without cni-plugins beside it gives a CNI error, not a crash", () => {
    const dir = makeTempDir();
    copyFileSync(join(DIST_BIN, "cni-plugins-shim"), join(dir, "bridge"));
    chmodSync(join(dir, "bridge"), 0o755);
    mkdirSync(join(dir, "sub"));
    const r = Bun.spawnSync([join(dir, "bridge")], { env: { CNI_COMMAND: "VERSION", CNI_PLUGINS_SOCKET: NO_AGENT } });
    expect(r.exitCode).toBe(1);
    expect(JSON.parse(r.stdout.toString())).toMatchObject({ code: 999 });
    expect(JSON.parse(r.stdout.toString()).msg).toContain("cannot run the standalone executable cni-plugins next to bridge");
  });
});
