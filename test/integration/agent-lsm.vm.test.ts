/**
 * The resident agent and AppArmor — VM lane only: it loads profiles into the kernel, which a test
 * may do to a throwaway VM and never to the host (Debian's stock kernel has AppArmor; the tools
 * come from the host's apparmor package, test/setup-host.sh). A caller confined by a profile the
 * agent is not under is refused, and its call runs standalone, confined as it is; an unconfined
 * caller holds every profile, so an agent under a profile serves it (agent/peer.ts, lsmRefusal).
 */
import { beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startAgent } from "../harness/agent.ts";
import { registerCleanup } from "../harness/cleanup.ts";
import { describeRun, execPlugin, type PluginRun } from "../harness/exec-plugin.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { describeVm, vmPluginCalls } from "../harness/vm-lane.ts";

/** A socket path where nothing listens: the shim runs standalone. */
const NO_AGENT = "/run/cni/no-agent-here.sock";
const SECURITYFS = "/sys/kernel/security";

/**
 * Profiles in complain mode: what they do not allow is allowed and logged, except for what AppArmor
 * denies even then. The caller's has no rules: a name of a namespace file (/proc/<pid>/ns/net, a
 * "disconnected path") then fails with EACCES, so its standalone call fails where an unconfined
 * agent's would succeed: the confused deputy. The agent's allows those (attach_disconnected) and
 * keeps its profile across exec (ix), as the agent executes itself again once it starts.
 */
const CALLER_PROFILE = { name: "cni-test-caller", text: "profile cni-test-caller flags=(complain) {\n}\n" };
const AGENT_PROFILE = { name: "cni-test-agent", text: "profile cni-test-agent flags=(complain,attach_disconnected) {\n  /** ix,\n}\n" };

const { setUp, inv } = vmPluginCalls("aa", "lo");

function run(argv: string[]): string {
  const r = Bun.spawnSync(argv);
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: exit ${r.exitCode}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

/** Loads a profile into the kernel (apparmor_parser); removed again after the test. */
function loadProfile(profile: { name: string; text: string }): void {
  const file = join(makeTempDir("cni-aa-"), profile.name);
  writeFileSync(file, `abi <abi/3.0>,\n${profile.text}`);
  run(["apparmor_parser", "--replace", file]);
  registerCleanup(`AppArmor profile ${profile.name}`, () => void Bun.spawnSync(["apparmor_parser", "--remove", file]));
}

/** A loopback ADD into a fresh container netns through `socket`, run under `wrap` (one container id for all: answers are compared). */
async function loopbackAdd(socket: string, wrap: string[] = []): Promise<PluginRun> {
  const { ns } = await setUp("add");
  const config = { cniVersion: "1.0.0", name: "lo", type: "loopback" };
  return execPlugin("loopback", { ...inv(ns.path, "ADD", config, "aa"), wrap, env: { CNI_PLUGINS_SOCKET: socket } });
}

/** The parts of a run that must not depend on how it was served (the netns path masked). */
function answer(r: PluginRun): { status: number | null; stdout: string } {
  return { status: r.status, stdout: r.stdout.replace(/\/proc\/\d+\//g, "/proc/PID/") };
}

const underProfile = (name: string) => ["aa-exec", "-p", name, "--"];

describeVm("the agent and AppArmor (VM lane)", { onlyInVm: true }, () => {
  beforeAll(() => {
    if (!existsSync(join(SECURITYFS, "apparmor"))) run(["mount", "-t", "securityfs", "securityfs", SECURITYFS]);
  });

  test("AppArmor is enabled in the VM's kernel", () => {
    expect(readFileSync("/sys/module/apparmor/parameters/enabled", "utf8").trim()).toBe("Y");
    expect(readFileSync(join(SECURITYFS, "lsm"), "utf8").split(",")).toContain("apparmor");
    expect(readFileSync("/proc/self/attr/apparmor/current", "utf8").trim()).toBe("unconfined");
  });

  test("a caller under a profile the agent is not under is refused, and gets its standalone answer (EACCES)", async () => {
    loadProfile(CALLER_PROFILE);
    expect(run([...underProfile(CALLER_PROFILE.name), "cat", "/proc/self/attr/current"]).trim()).toBe(`${CALLER_PROFILE.name} (complain)`);
    const standalone = await loopbackAdd(NO_AGENT, underProfile(CALLER_PROFILE.name));
    expect(standalone.json?.msg).toContain("permission denied (EACCES)");
    const agent = await startAgent();
    expect(answer(await loopbackAdd(agent.socket, underProfile(CALLER_PROFILE.name)))).toEqual(answer(standalone));
    const refused = agent.refused();
    expect(refused).toHaveLength(1);
    expect(refused[0]).toContain(`has another LSM context in attr/current ("${CALLER_PROFILE.name} (complain)", the agent "unconfined")`);
    expect(agent.served()).toBe(0);
  });

  test("an agent under a profile serves unconfined callers and callers under its profile, and refuses another profile", async () => {
    loadProfile(CALLER_PROFILE);
    loadProfile(AGENT_PROFILE);
    const agent = await startAgent([], { argvPrefix: underProfile(AGENT_PROFILE.name) });
    expect(readFileSync(`/proc/${agent.pid}/attr/current`, "utf8").trim()).toBe(`${AGENT_PROFILE.name} (complain)`);
    expect(describeRun(await loopbackAdd(agent.socket))).toStartWith("exit=0");
    expect(describeRun(await loopbackAdd(agent.socket, underProfile(AGENT_PROFILE.name)))).toStartWith("exit=0");
    expect(agent.served()).toBe(2);
    expect(agent.refused()).toEqual([]);
    await loopbackAdd(agent.socket, underProfile(CALLER_PROFILE.name));
    expect(agent.refused()).toHaveLength(1);
    expect(agent.refused()[0]).toContain(`("${CALLER_PROFILE.name} (complain)", the agent "${AGENT_PROFILE.name} (complain)")`);
  });
});
