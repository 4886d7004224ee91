/**
 * Trust in the agent's socket, both ways (docs/resident.md, "Security"), with the real shim and
 * agent: a listener another user planted on the socket's path gets not a byte from a root shim,
 * whose call runs standalone and gives the real answer; an agent of the shim's own user is used;
 * the agent refuses a socket directory others could write to, own or swap (and a path through a
 * link), and its socket is born 0600 with no chmod; a frozen agent holds no shim up: each falls
 * back within the shim's 2 s budget (connect, request and acceptance), those that find its backlog
 * full at once, and one whose request does not fit the socket's buffer at the deadline.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startAgent } from "../harness/agent.ts";
import { registerCleanup, useFixtureCleanup } from "../harness/cleanup.ts";
import { describeRun, execPlugin, type PluginInvocation, type PluginRun } from "../harness/exec-plugin.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { DIST_BIN, MULTI_CALL_BINARY, SHIM_NAME } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

/** The unprivileged user of these tests (nobody). */
const NOBODY = 65534;
const AS_NOBODY = ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"];
/** The shim's budget from connect to acceptance (shim/cni-shim.c REQUEST_BUDGET_MS). */
const BUDGET_MS = 2000;

function via(socket: string, inv: PluginInvocation): PluginInvocation {
  return { ...inv, env: { ...inv.env, CNI_PLUGINS_SOCKET: socket } };
}

/** A loopback ADD in `netns` (what every case calls: its answer is known and needs no host state). */
function loopbackAdd(netns: string, containerID: string): PluginInvocation {
  return { command: "ADD", containerID, netns, ifName: "lo", config: { cniVersion: "1.0.0", name: "lo", type: "loopback" } };
}

/** The real answer of loopbackAdd, as the standalone executable gives it. */
function expectRealLoopbackAnswer(r: PluginRun): void {
  expect(describeRun(r)).toStartWith("exit=0");
  expect(r.json.ips.map((ip: { address: string }) => ip.address)).toContain("127.0.0.1/8");
  expect(r.stdout).not.toContain("6.6.6.6");
}

/** Polls `cond` every 20 ms for up to `ms`. */
async function eventually(cond: () => boolean, ms = 10_000): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await Bun.sleep(20)) if (cond()) return true;
  return cond();
}

/**
 * What the attacker ran (as `nobody`): listens on `socket`, and for each connection records
 * how many bytes the caller sent before it closed (one line each in `record`) while answering what
 * the agent answers to a call it accepts: 'K', 'S', then a forged result and exit status 0.
 */
const PLANTED_LISTENER = `import os, socket, struct, sys
path, record, ready = sys.argv[1:4]
def frame(kind, payload=b""):
    return struct.pack("<I", len(payload)) + kind + payload
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o666)
s.listen(64)
open(ready, "w").write(str(os.getuid()))
while True:
    c, _ = s.accept()
    c.settimeout(0.5)
    got = b""
    answered = False
    while True:
        try:
            data = c.recv(65536)
        except socket.timeout:
            if not answered:
                answered = True
                try:
                    c.sendall(frame(b"K") + frame(b"S") + frame(b"O", b'{"cniVersion":"1.0.0","ips":[{"address":"6.6.6.6/32"}]}') + frame(b"X", struct.pack("<I", 0)))
                except OSError:
                    break
                continue
            break
        except OSError:
            break
        if not data:
            break
        got += data
    c.close()
    with open(record, "a") as f:
        f.write("%d\\n" % len(got))
`;

describe.skipIf(!sandboxed())("the shim trusts only a listener of root or its own user", () => {
  useFixtureCleanup();

  test("a listener planted by another user on the socket's path gets nothing from a root shim, even once the file is root's; the call runs standalone with the real answer", async () => {
    // The set-up: a socket directory anyone may write to, where another user listens.
    const dir = makeTempDir("cni-planted-");
    chmodSync(dir, 0o777);
    const socket = join(dir, "plugins.sock");
    const record = join(dir, "received");
    const ready = join(dir, "ready");
    const listener = Bun.spawn([...AS_NOBODY, "/usr/bin/python3", "-c", PLANTED_LISTENER, socket, record, ready], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    registerCleanup(`planted listener pid ${listener.pid}`, () => listener.kill("SIGKILL"));
    expect(await eventually(() => existsSync(ready))).toBe(true);
    expect(readFileSync(ready, "utf8")).toBe(String(NOBODY));
    const received = () => (existsSync(record) ? readFileSync(record, "utf8").split("\n").filter((l) => l !== "") : []);
    const ns = await createContainerNetns();

    const first = await execPlugin("loopback", via(socket, loopbackAdd(ns.path, "planted-1")));
    expect(await eventually(() => received().length === 1)).toBe(true); // the shim did reach the listener
    expect(received()).toEqual(["0"]); // and sent it not a byte
    expectRealLoopbackAnswer(first);

    // The socket file's owner proves nothing: the kernel says who listens.
    chownSync(socket, 0, 0);
    expect(lstatSync(socket).uid).toBe(0);
    const second = await execPlugin("loopback", via(socket, loopbackAdd(ns.path, "planted-2")));
    expect(await eventually(() => received().length === 2)).toBe(true);
    expect(received()).toEqual(["0", "0"]);
    expectRealLoopbackAnswer(second);
  });

  test("an agent run by an unprivileged user serves that user's shims; a root shim sends it nothing and runs standalone", async () => {
    const base = makeTempDir("cni-nobody-agent-");
    chmodSync(base, 0o755);
    const dir = join(base, "run");
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, NOBODY, NOBODY);
    const agent = await startAgent([], { dir, argvPrefix: AS_NOBODY });
    expect(statSync(`/proc/${agent.pid}`).uid).toBe(NOBODY);

    const own = await execPlugin("bridge", via(agent.socket, { command: "VERSION", wrap: AS_NOBODY }));
    expect(describeRun(own)).toStartWith("exit=0");
    expect(agent.served()).toBe(1);

    // A root shim does not send it the call (the agent would log a refusal once it had the request:
    // it cannot look into a root process's namespaces).
    const root = await execPlugin("bridge", via(agent.socket, { command: "VERSION" }));
    expect(describeRun(root)).toStartWith("exit=0");
    expect(JSON.parse(root.stdout).supportedVersions).toContain("1.1.0");
    expect(agent.served()).toBe(1);
    expect(agent.refused()).toEqual([]);
    expect(await agent.stop()).toBe(0);
    expect(agent.log()).toContain("served 1 call(s), refused 0");
  });
});

describe.skipIf(!sandboxed())("the agent listens only in a socket directory no one else controls", () => {
  useFixtureCleanup();

  /** `cni-plugins serve --socket <dir>/plugins.sock`: its exit status and what it logged (killed after 15 s). */
  function serveIn(dir: string): { status: number | null; log: string; socket: string } {
    const socket = join(dir, "plugins.sock");
    const r = Bun.spawnSync([MULTI_CALL_BINARY, "serve", "--socket", socket], { stdin: "ignore", timeout: 15_000, killSignal: "SIGKILL" });
    return { status: r.exitCode, log: `${r.stdout}${r.stderr}`, socket };
  }

  /** A directory below a fresh temp dir, made with `mode`. */
  function dirWithMode(name: string, mode: number): string {
    const p = join(makeTempDir("cni-sockdir-"), name);
    mkdirSync(p);
    chmodSync(p, mode);
    return p;
  }

  const refusals: [string, () => { dir: string; reason: string }][] = [
    ["writable by its group", () => ({ dir: dirWithMode("g", 0o770), reason: "it is writable by group or others (mode 0770)" })],
    ["writable by others", () => ({ dir: dirWithMode("o", 0o777), reason: "it is writable by group or others (mode 0777)" })],
    [
      "owned by another user",
      () => {
        const dir = dirWithMode("theirs", 0o700);
        chownSync(dir, NOBODY, NOBODY);
        return { dir, reason: `it is owned by uid ${NOBODY}, not by this process's uid 0` };
      },
    ],
    [
      "reached through a symbolic link",
      () => {
        const real = dirWithMode("real", 0o700);
        symlinkSync(real, `${real}-link`);
        return { dir: `${real}-link`, reason: `${real}-link is a symbolic link` };
      },
    ],
    [
      "below a directory others may write to without the sticky bit",
      () => {
        const open = dirWithMode("open", 0o777);
        mkdirSync(join(open, "run"), { mode: 0o700 });
        return { dir: join(open, "run"), reason: `${open} on the way to it is writable by group or others without the sticky bit (mode 0777)` };
      },
    ],
  ];
  for (const [what, setUp] of refusals) {
    test(`a socket directory ${what}: the agent exits 1 naming it, and makes no socket`, () => {
      const { dir, reason } = setUp();
      const r = serveIn(dir);
      expect(r.status).toBe(1);
      expect(r.log).toContain(`cni-plugins serve: unsafe socket directory ${JSON.stringify(dir)}: ${reason}`);
      expect(existsSync(r.socket)).toBe(false);
    });
  }

  test("in a proper directory (made 0700) the socket is born 0600: nothing chmods it (strace), and the agent serves", async () => {
    const dir = join(makeTempDir("cni-sockdir-"), "made");
    const trace = join(makeTempDir("cni-strace-"), "trace");
    // bind is traced too: its line shows the trace sees the socket's path at all.
    const strace = ["strace", "-f", "-qq", "-o", trace, "-e", "trace=bind,chmod,fchmodat", "--"];
    const traced = await startAgent([], { dir, argvPrefix: strace });
    // strace's child; stopped by its pid when the test fails (a killed strace leaves its tracee running).
    const agentPid = Number(readFileSync(`/proc/${traced.pid}/task/${traced.pid}/children`, "utf8").trim().split(" ")[0]);
    expect(agentPid).toBeGreaterThan(0);
    const stopAgent = registerCleanup(`traced agent pid ${agentPid}`, () => {
      if (existsSync(`/proc/${agentPid}`)) process.kill(agentPid, "SIGKILL");
    });
    expect(statSync(dir).mode & 0o7777).toBe(0o700);
    expect(statSync(traced.socket).mode & 0o7777).toBe(0o600);
    expect(describeRun(await execPlugin("bridge", via(traced.socket, { command: "VERSION" })))).toStartWith("exit=0");
    expect(traced.served()).toBe(1);
    // Stop the agent itself: it drains and exits, then strace does.
    process.kill(agentPid, "SIGTERM");
    expect(await traced.exited).toBe(0);
    stopAgent();
    const lines = readFileSync(trace, "utf8").split("\n").filter((l) => l.includes(traced.socket));
    expect(lines.filter((l) => / bind\(/.test(l)).length).toBeGreaterThanOrEqual(1);
    expect(lines.filter((l) => / (chmod|fchmodat)\(/.test(l))).toEqual([]);
  });
});

describe.skipIf(!sandboxed())("a frozen agent holds no shim up", () => {
  useFixtureCleanup();

  test("SIGSTOPped agent, backlog 8, 40 concurrent ADDs: all fall back and succeed, in the backlog after 2 s, beyond it at once", async () => {
    // The agent runs in a network namespace of its own, where somaxconn (per namespace, read by
    // listen(2)) is 8; its callers join it. The calls' own netns is another.
    const agentNs = await createContainerNetns();
    const inAgentNs = ["nsenter", `--net=${agentNs.path}`, "--"];
    expect(Bun.spawnSync([...inAgentNs, "sysctl", "-qw", "net.core.somaxconn=8"]).exitCode).toBe(0);
    const agent = await startAgent([], { argvPrefix: inAgentNs });
    process.kill(agent.pid, "SIGSTOP");
    const resume = registerCleanup(`SIGCONT agent pid ${agent.pid}`, () => process.kill(agent.pid, "SIGCONT"));

    // A bin dir whose `cni-plugins` notes when each shim fell back to it (then runs the real one).
    const bin = makeTempDir("cni-frozen-bin-");
    chmodSync(bin, 0o755);
    copyFileSync(join(DIST_BIN, SHIM_NAME), join(bin, "loopback"));
    chmodSync(join(bin, "loopback"), 0o755);
    const fellBack = join(bin, "fell-back");
    writeFileSync(fellBack, "");
    const note = `t=$EPOCHREALTIME; echo "$CNI_CONTAINERID \${t/,/.}" >>${fellBack}`; // the decimal point may be the locale's
    writeFileSync(join(bin, "cni-plugins"), `#!/bin/bash\n${note}\nexec -a loopback ${MULTI_CALL_BINARY} "$@"\n`, { mode: 0o755 });

    const ns = await createContainerNetns();
    const calls = Array.from({ length: 40 }, (_, i) => `frozen-${i}`);
    const started = new Map<string, number>();
    const runs = await Promise.all(
      calls.map((id) => {
        started.set(id, Date.now());
        return execPlugin("loopback", via(agent.socket, { ...loopbackAdd(ns.path, id), binDir: bin, wrap: inAgentNs, timeoutMs: 15_000 }));
      }),
    );
    // One more, alone: the queue is still full (of the connections of shims that gave up), and a shim
    // that finds it so falls back with no wait at all, whatever the load was.
    started.set("frozen-alone", Date.now());
    const alone = await execPlugin("loopback", via(agent.socket, { ...loopbackAdd(ns.path, "frozen-alone"), binDir: bin, wrap: inAgentNs, timeoutMs: 15_000 }));
    const fellBackAt = new Map(
      readFileSync(fellBack, "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => l.split(" ") as [string, string]),
    );
    /** From the spawn to the shim's execve of the standalone executable (undefined: it never did). */
    const fallbackMs = (id: string): number | undefined => (fellBackAt.has(id) ? Number(fellBackAt.get(id)) * 1000 - started.get(id)! : undefined);
    // A shim's budget starts after its spawn: one that waited for its deadline took at least the budget.
    const waited = calls.filter((id) => (fallbackMs(id) ?? 0) >= BUDGET_MS);
    const atOnce = calls.filter((id) => (fallbackMs(id) ?? BUDGET_MS) < BUDGET_MS);
    const sorted = (ids: string[], of: (id: string) => number) => ids.map(of).sort((a, b) => a - b).map((t) => Math.round(t));
    process.stderr.write(
      `NOTE frozen agent: ${waited.length} shims waited in the backlog, fell back after ${JSON.stringify(sorted(waited, (id) => fallbackMs(id)!))} ms; ` +
        `${atOnce.length} fell back at once, after ${JSON.stringify(sorted(atOnce, (id) => fallbackMs(id)!))} ms; ` +
        `whole calls took ${JSON.stringify(sorted(calls, (id) => runs[calls.indexOf(id)]!.ms))} ms; ` +
        `one more alone fell back after ${Math.round(fallbackMs("frozen-alone") ?? -1)} ms, took ${Math.round(alone.ms)} ms\n`,
    );

    // None hung: a shim still waiting after 15 s is killed, and its call has no answer. (How long the
    // standalone calls then take is the machine's load, not the agent's: only the fallbacks are timed.)
    for (const r of runs) expectRealLoopbackAnswer(r);
    expect(calls.filter((id) => fallbackMs(id) === undefined)).toEqual([]); // every call ran standalone
    // Those queued (at most backlog + 1 on a unix socket) gave up at the deadline, not much after.
    expect(waited.length).toBeGreaterThanOrEqual(1);
    expect(waited.length).toBeLessThanOrEqual(9);
    for (const id of waited) expect(fallbackMs(id)!).toBeLessThan(BUDGET_MS + 2000);
    // The others found the backlog full and did not wait for the deadline (EAGAIN, at once).
    expect(atOnce.length).toBe(calls.length - waited.length);
    expectRealLoopbackAnswer(alone);
    expect(fallbackMs("frozen-alone")).toBeLessThan(BUDGET_MS / 4);
    expect(agent.served()).toBe(0);

    resume();
    expect(await agent.stop()).toBe(0);
  }, 60_000);

  test("a request larger than the socket's buffer, to a frozen agent with room in its backlog: sending it waits only until the deadline", async () => {
    const agent = await startAgent();
    process.kill(agent.pid, "SIGSTOP");
    const resume = registerCleanup(`SIGCONT agent pid ${agent.pid}`, () => process.kill(agent.pid, "SIGCONT"));
    // 1.2 MiB of environment (each variable under execve's 128 KiB and the protocol's 256 KiB),
    // several times what a unix socket buffers: the shim connects and sends until the buffer is full.
    const big = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`CNI_TEST_PAD_${i}`, "x".repeat(100 * 1024)]));
    const ns = await createContainerNetns();
    const r = await execPlugin("loopback", via(agent.socket, { ...loopbackAdd(ns.path, "frozen-big"), env: big, timeoutMs: 15_000 }));
    process.stderr.write(`NOTE frozen agent, 1.2 MiB request: the call took ${Math.round(r.ms)} ms\n`);
    expectRealLoopbackAnswer(r);
    expect(r.ms).toBeGreaterThanOrEqual(BUDGET_MS); // it did wait for the agent, as long as the budget
    expect(r.ms).toBeLessThan(BUDGET_MS + 3000);
    expect(agent.served()).toBe(0);
    resume();
    expect(await agent.stop()).toBe(0);
  }, 30_000);
});

/** The shim's cap on waiting for the acceptance while the agent says the call waits (shim/cni-shim.c QUEUED_BUDGET_MS). */
const QUEUED_BUDGET_MS = 12_000;

/**
 * An agent (of root, so the shim talks to it) that answers each request as `mode` says:
 * "queue-then-serve": QUEUED every 0.5 s for 4 s, then accepts, reads stdin and answers a result
 * of 7.7.7.7; "queue-forever": QUEUED every 0.5 s until the shim hangs up; "queue-once": one
 * QUEUED after 1.5 s, then silence until the shim hangs up.
 */
const SCRIPTED_AGENT = `import socket, struct, sys, threading, time
path, mode, ready = sys.argv[1:4]
def frame(kind, payload=b""):
    return struct.pack("<I", len(payload)) + kind + payload
def read_frame(c):
    head = b""
    while len(head) < 5:
        got = c.recv(5 - len(head))
        if not got:
            return None
        head += got
    n, kind = struct.unpack("<IB", head)
    body = b""
    while len(body) < n:
        got = c.recv(n - len(body))
        if not got:
            return None
        body += got
    return bytes([kind])
def serve(c):
    try:
        while read_frame(c) not in (b"Q", None):
            pass
        if mode == "queue-once":
            time.sleep(1.5)
            c.sendall(frame(b"P"))
            c.recv(1)
            return
        started = time.monotonic()
        while mode == "queue-forever" or time.monotonic() - started < 4:
            c.sendall(frame(b"P"))
            time.sleep(0.5)
        c.sendall(frame(b"K") + frame(b"S"))
        while read_frame(c) not in (b"Z", None):
            pass
        c.sendall(frame(b"O", b'{"cniVersion":"1.0.0","ips":[{"address":"7.7.7.7/32"}]}') + frame(b"X", struct.pack("<I", 0)))
    except OSError:
        pass
    finally:
        c.close()
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
open(ready, "w").write("ok")
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`;

describe.skipIf(!sandboxed())("an agent that says the call waits for a thread", () => {
  useFixtureCleanup();

  async function scriptedAgent(mode: "queue-then-serve" | "queue-forever" | "queue-once"): Promise<string> {
    const dir = makeTempDir("cni-queued-");
    const socket = join(dir, "plugins.sock");
    const ready = join(dir, "ready");
    const agent = Bun.spawn(["/usr/bin/python3", "-c", SCRIPTED_AGENT, socket, mode, ready], { stdin: "ignore", stdout: "ignore", stderr: "inherit" });
    registerCleanup(`scripted agent pid ${agent.pid}`, () => agent.kill("SIGKILL"));
    expect(await eventually(() => existsSync(ready))).toBe(true);
    return socket;
  }

  test("each QUEUED renews the shim's budget (the agent's answer after 4 s of them); only QUEUED loses the call at the cap; silence after one, 2 s after it", async () => {
    // The three at once: the cap alone is 12 s.
    const [served, forever, once] = await Promise.all(
      (["queue-then-serve", "queue-forever", "queue-once"] as const).map(async (mode) => {
        const socket = await scriptedAgent(mode);
        const ns = await createContainerNetns();
        return execPlugin("loopback", via(socket, { ...loopbackAdd(ns.path, mode), timeoutMs: 30_000 }));
      }),
    );
    process.stderr.write(`NOTE QUEUED: answered by the agent after ${Math.round(served!.ms)} ms; only QUEUED: standalone after ${Math.round(forever!.ms)} ms; silent after one at 1.5 s: standalone after ${Math.round(once!.ms)} ms\n`);
    expect(describeRun(served!)).toStartWith("exit=0");
    expect(served!.json.ips).toEqual([{ address: "7.7.7.7/32" }]); // the agent's answer, not a fallback's
    expect(served!.ms).toBeGreaterThanOrEqual(4000);
    expect(served!.ms).toBeLessThan(QUEUED_BUDGET_MS);
    expectRealLoopbackAnswer(forever!);
    expect(forever!.ms).toBeGreaterThanOrEqual(QUEUED_BUDGET_MS);
    expect(forever!.ms).toBeLessThan(QUEUED_BUDGET_MS + 3000);
    expectRealLoopbackAnswer(once!);
    expect(once!.ms).toBeGreaterThanOrEqual(1500 + BUDGET_MS);
    expect(once!.ms).toBeLessThan(1500 + BUDGET_MS + 2500);
  }, 40_000);
});
