/**
 * The resident agent never grants a caller more privilege than a fresh process of that caller would
 * have (agent/peer.ts; docs/resident.md, "When the agent serves a call"). A root caller without
 * capabilities, under no_new_privs or a seccomp filter, in a user namespace of its own, or
 * chrooted into a bind mount of / is refused (the agent's log says why), and its shim's standalone
 * call answers exactly what it answers without an agent; a plain root caller is still served.
 */
import { describe, expect, test } from "bun:test";
import { startAgent, type RunningAgent } from "../harness/agent.ts";
import { bridgeConfig } from "../harness/bridge-helpers.ts";
import { registerCleanup, useFixtureCleanup } from "../harness/cleanup.ts";
import { describeRun, execPlugin, type PluginInvocation, type PluginRun } from "../harness/exec-plugin.ts";
import { findLink } from "../harness/ip-oracle.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { pluginPath } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

/** A socket path where nothing listens: the shim runs standalone. */
const NO_AGENT = "/run/cni/no-agent-here.sock";

/**
 * python3 as a seccomp-confined caller: installs a filter that allows every system call
 * (PR_SET_SECCOMP, SECCOMP_MODE_FILTER; as root, so without no_new_privs), then execs argv[1:].
 */
const SECCOMP_ALLOW_ALL = `import ctypes, os, sys
class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]
class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]
allow = (SockFilter * 1)(SockFilter(0x06, 0, 0, 0x7FFF0000))  # BPF_RET|BPF_K, SECCOMP_RET_ALLOW
prog = SockFprog(1, allow)
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
if libc.prctl(ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
    sys.exit("prctl PR_SET_SECCOMP: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])`;

function via(socket: string, inv: PluginInvocation): PluginInvocation {
  return { ...inv, env: { ...inv.env, CNI_PLUGINS_SOCKET: socket } };
}

/** The parts of a run that must not depend on how it was served. */
function answer(r: PluginRun): { status: number | null; signal: string | null; stdout: string } {
  return { status: r.status, signal: r.signal, stdout: r.stdout };
}

/** A bridge ADD (host-local IPAM) into a fresh container netns; the bridge is removed after the test. */
async function bridgeAdd(bridge: string, subnet: string): Promise<PluginInvocation> {
  const ns = await createContainerNetns();
  registerCleanup(`bridge ${bridge}`, () => void Bun.spawnSync(["ip", "link", "del", bridge]));
  const config = bridgeConfig({ name: `net-${bridge}`, cniVersion: "1.0.0", bridge, dataDir: makeTempDir(), subnets: [subnet] });
  return { command: "ADD", containerID: `c-${bridge}`, netns: ns.path, ifName: "eth0", config };
}

/** The agent refused exactly one call, for `reason`, and served none. */
function expectOneRefusal(agent: RunningAgent, reason: string): void {
  const refused = agent.refused();
  expect(refused).toHaveLength(1);
  expect(refused[0]).toContain(reason);
  expect(agent.served()).toBe(0);
}

describe.skipIf(!sandboxed())("the agent serves no caller that a fresh process would give less privilege", () => {
  useFixtureCleanup();

  test("root without capabilities (setpriv): the same EPERM as standalone, no bridge", async () => {
    const agent = await startAgent();
    const add = { ...(await bridgeAdd("agpriv0", "10.86.0.0/24")), wrap: ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"] };
    const standalone = await execPlugin("bridge", via(NO_AGENT, add));
    expect(standalone.json).toMatchObject({ code: 999 });
    expect(standalone.json.msg).toContain('RTM_NEWLINK name="agpriv0": operation not permitted (EPERM)');
    const resident = await execPlugin("bridge", via(agent.socket, add));
    expect(answer(resident)).toEqual(answer(standalone));
    expect(findLink(undefined, "agpriv0")).toBeUndefined();
    expectOneRefusal(agent, "has fewer capabilities than the agent (CapEff 0000000000000000, the agent ");
  });

  test("no_new_privs (setpriv), which the agent has not: refused; the call runs standalone and succeeds", async () => {
    const agent = await startAgent();
    const add = await bridgeAdd("agpriv1", "10.86.1.0/24");
    const r = await execPlugin("bridge", via(agent.socket, { ...add, wrap: ["setpriv", "--no-new-privs", "--"] }));
    expect(describeRun(r)).toStartWith("exit=0");
    expect(findLink(undefined, "agpriv1")).toBeDefined();
    expectOneRefusal(agent, "runs with no_new_privs, the agent does not");
  });

  test("a seccomp filter (allowing everything, no no_new_privs): refused; the call runs standalone and succeeds", async () => {
    const wrap = ["python3", "-c", SECCOMP_ALLOW_ALL];
    const confined = Bun.spawnSync([...wrap, "/bin/grep", "-E", "^(NoNewPrivs|Seccomp):", "/proc/self/status"]);
    expect(confined.stdout.toString()).toBe("NoNewPrivs:\t0\nSeccomp:\t2\n");
    const agent = await startAgent();
    const add = await bridgeAdd("agpriv2", "10.86.2.0/24");
    const r = await execPlugin("bridge", via(agent.socket, { ...add, wrap }));
    expect(describeRun(r)).toStartWith("exit=0");
    expect(findLink(undefined, "agpriv2")).toBeDefined();
    expectOneRefusal(agent, "is confined by seccomp (mode 2)");
  });

  test("root of a user namespace of its own (uid 0 mapped to 0, every capability there): the same EPERM as standalone", async () => {
    const agent = await startAgent();
    const add = { ...(await bridgeAdd("agpriv3", "10.86.3.0/24")), wrap: ["unshare", "--user", "--map-user=0", "--map-group=0", "--"] };
    const standalone = await execPlugin("bridge", via(NO_AGENT, add));
    expect(standalone.json?.msg).toContain('RTM_NEWLINK name="agpriv3": operation not permitted (EPERM)');
    const resident = await execPlugin("bridge", via(agent.socket, add));
    expect(answer(resident)).toEqual(answer(standalone));
    expect(findLink(undefined, "agpriv3")).toBeUndefined();
    expectOneRefusal(agent, "is in another user namespace");
  });

  test("a chroot into a bind mount of / (same device and inode, no /proc): refused; it fails as standalone does", async () => {
    // The agent and the caller share a mount namespace of their own, made for the agent, where the
    // bind mount is: the caller shares the agent's namespaces, and only its root's mount differs.
    // The bind is recursive (the socket's and the shim's directories stay visible wherever they
    // are mounted) but for /proc, which the chroot lacks, as in the case.
    const root = makeTempDir("cni-bind-root-");
    const agent = await startAgent([], {
      argvPrefix: ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", 'mount --rbind / "$0" && umount -R "$0/proc" && exec "$@"', root],
    });
    const add = { ...(await bridgeAdd("agpriv4", "10.86.4.0/24")), wrap: ["nsenter", `--mount=/proc/${agent.pid}/ns/mnt`, "--", "chroot", root] };
    const standalone = await execPlugin("bridge", via(NO_AGENT, add));
    expect(describeRun(standalone)).not.toStartWith("exit=0"); // the standalone executable cannot run without /proc
    const resident = await execPlugin("bridge", via(agent.socket, add));
    expect(answer(resident)).toEqual(answer(standalone));
    expect(findLink(undefined, "agpriv4")).toBeUndefined();
    expectOneRefusal(agent, "has another root directory (mount ");
  });

  test("a plain root caller is served, and its ADD succeeds", async () => {
    const agent = await startAgent();
    const add = await bridgeAdd("agpriv5", "10.86.5.0/24");
    const r = await execPlugin("bridge", via(agent.socket, add));
    expect(describeRun(r)).toStartWith("exit=0");
    expect(findLink(undefined, "agpriv5")).toBeDefined();
    expect(agent.refused()).toEqual([]);
    expect(agent.served()).toBe(1);
    expect(agent.log()).toContain(`served ${pluginPath("bridge")} ADD c-agpriv5 `);
  });
});
