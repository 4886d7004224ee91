/**
 * The agent in this process (agent/serve.ts `Agent`) on a socket of its own, with worker threads
 * whose "plugin" is scripted (agent/testing.ts), driven by a TypeScript client of the protocol: what
 * it serves and refuses, isolation between concurrent calls, a call's cwd and umask, calls that
 * crash their thread, draining, and a fuzzer that must never take the agent down. (The real shim
 * and plugins through a real agent: test/integration/agent.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { callAgent, exchange, requestFrames } from "../test/harness/agent-client.ts";
import { seededRandom } from "../test/harness/fuzz.ts";
import { suiteTempDir } from "../test/harness/tempdir.ts";
import { RELEASE_DELAY_MS } from "./deferred-close.ts";
import { parseServeFlags } from "./flags.ts";
import { createListener } from "./listeners.ts";
import { encodeFrame, Frame, MAX_PAYLOAD } from "./protocol.ts";
import { pluginNameOf } from "../registry/registry.ts";
import { Agent } from "./serve.ts";

const BUILD = "test-build";
const logLines: string[] = [];

/** An agent on `dir`/agent.sock; with `dhcpSocket`, also a listener for the dhcp daemon there (as systemd passes it). */
async function startAgent(dir: string, extra: string[] = [], dhcpSocket?: string): Promise<{ agent: Agent; path: string }> {
  const path = join(dir, "agent.sock");
  const flags = parseServeFlags(["--socket", path, "--min-workers", "2", "--max-workers", "8", ...extra]);
  const listeners = [await createListener("agent", path, (l) => logLines.push(l))];
  if (dhcpSocket !== undefined) listeners.push(await createListener("dhcp", dhcpSocket, (l) => logLines.push(l)));
  const agent = new Agent(flags, {}, listeners, pluginNameOf, {
    buildId: BUILD,
    spawnWorker: () => new Worker(new URL("./testing.ts", import.meta.url).href),
    log: (l) => logLines.push(l),
  });
  agent.start();
  return { agent, path };
}

/** A call of the scripted plugin "loopback" (a plugin name: the agent serves only those). */
function call(env: Record<string, string>, stdin = "") {
  return { buildId: BUILD, argv: ["/opt/cni/bin/loopback"], env, stdin };
}

describe("Agent", () => {
  const dir = suiteTempDir("cni-agent-test-");
  let agent: Agent;
  let path: string;
  beforeAll(async () => {
    ({ agent, path } = await startAgent(dir));
  });
  afterAll(async () => {
    await agent.end(false, "test over");
    agent.close();
  });

  test("serves a call: stdin asked for with the acceptance; stdout, stderr and the exit status relayed", async () => {
    const answer = await callAgent(path, call({ CNI_TEST_MODE: "echo", CNI_TEST_MARK: "m1", CNI_TEST_STATUS: "3" }, '{"name":"x"}'));
    expect(answer).toEqual({ accepted: true, stdout: '{"name":"x"}|m1', stderr: "to stderr", status: 3, stdinAsked: true, closedEarly: false });
  });

  test("a NETLINK_NETFILTER socket a call closes is closed by its thread after the call (deferred-close.ts)", async () => {
    const answer = await callAgent(path, call({ CNI_TEST_MODE: "netfilter" }));
    expect(answer).toMatchObject({ accepted: true, status: 0 });
    const link = `/proc/self/fd/${Number((answer as { stdout: string }).stdout)}`;
    const socketInode = readlinkSync(link); // kept open: its close would wait for the kernel
    expect(socketInode).toStartWith("socket:");
    await Bun.sleep(RELEASE_DELAY_MS + 300);
    expect(existsSync(link) ? readlinkSync(link) : "closed").not.toBe(socketInode); // (the number may be reused)
  });

  test("a call that does not read stdin is answered while its stdin never ends", async () => {
    const answer = await callAgent(path, { ...call({ CNI_TEST_MODE: "env" }), holdStdin: true });
    expect(answer).toMatchObject({ accepted: true, status: 0, stdinAsked: true, closedEarly: false });
  });

  test("refuses what a fresh process would not be: another build, not a plugin, a pid the kernel denies", async () => {
    expect(await callAgent(path, { ...call({}), buildId: "other" })).toEqual({ accepted: false, reason: "shim of build other, the agent is test-build" });
    expect(await callAgent(path, { ...call({}), argv: ["/opt/cni/bin/cni-plugins", "gc"] })).toEqual({ accepted: false, reason: "not a plugin call: /opt/cni/bin/cni-plugins" });
    expect(await callAgent(path, { ...call({}), argv: ["/opt/cni/bin/dhcp", "daemon"] })).toMatchObject({ accepted: false });
    const lying = await callAgent(path, { ...call({}), pid: process.pid + 1 });
    expect(lying).toEqual({ accepted: false, reason: `the caller says pid ${process.pid + 1}, the kernel says ${process.pid}` });
  });

  test("concurrent calls never see each other's environment or stdin", async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => callAgent(path, call({ CNI_TEST_MODE: i % 2 ? "sleep" : "echo", CNI_TEST_MS: "30", CNI_TEST_MARK: `mark-${i}` }, `stdin-${i}`))),
    );
    answers.forEach((a, i) => expect(a).toMatchObject({ accepted: true, status: 0, stdout: i % 2 ? `slept|mark-${i}` : `stdin-${i}|mark-${i}` }));
    const env = await callAgent(path, call({ CNI_TEST_MODE: "env", ONLY: "this" }));
    expect(JSON.parse((env as { stdout: string }).stdout)).toEqual({ CNI_TEST_MODE: "env", ONLY: "this" });
  });

  test("calls of one attachment run one after another in arrival order; other attachments overlap them", async () => {
    const span = (command: string, containerID: string, ms: number) =>
      callAgent(path, call({ CNI_TEST_MODE: "span", CNI_TEST_MS: String(ms), CNI_COMMAND: command, CNI_CONTAINERID: containerID, CNI_IFNAME: "eth0" })).then(
        (a) => JSON.parse((a as { stdout: string }).stdout) as { start: number; end: number },
      );
    const add = span("ADD", "c-order", 300);
    await Bun.sleep(50);
    // The runtime gave up on the ADD and sends DEL; meanwhile another pod's ADD.
    const [del, other] = await Promise.all([span("DEL", "c-order", 10), span("ADD", "c-other", 10)]);
    const added = await add;
    expect(del.start).toBeGreaterThanOrEqual(added.end);
    expect(other.end).toBeLessThan(added.end);
  });

  test("a call runs in its caller's working directory with its caller's umask; the thread goes back after", async () => {
    const first = await callAgent(path, { ...call({ CNI_TEST_MODE: "cwd" }), umask: 0o077 });
    expect(JSON.parse((first as { stdout: string }).stdout)).toEqual({ cwd: process.cwd(), umask: 0o077 });
    const second = await callAgent(path, { ...call({ CNI_TEST_MODE: "cwd" }), umask: 0o002 });
    expect(JSON.parse((second as { stdout: string }).stdout).umask).toBe(0o002);
    // The agent's own (main thread's) umask is untouched by its calls.
    expect(process.umask()).not.toBe(0o002);
  });

  for (const mode of ["throw", "reject", "exit"]) {
    test(`a call whose thread sees "${mode}" ends with an internal error (999); the agent serves on`, async () => {
      const answer = await callAgent(path, call({ CNI_TEST_MODE: mode }));
      expect(answer).toMatchObject({ accepted: true, status: 1 });
      expect(JSON.parse((answer as { stdout: string }).stdout)).toMatchObject({ code: 999 });
      expect(await callAgent(path, call({ CNI_TEST_MODE: "echo", CNI_TEST_MARK: "after" }, "ok"))).toMatchObject({ status: 0, stdout: "ok|after" });
    });
  }

  test("fuzz: malformed, oversized, truncated and random frames close that connection only", async () => {
    const rnd = seededRandom(0xc0ffee);
    const valid = requestFrames(call({ CNI_TEST_MODE: "env" }));
    const oversized = new Uint8Array(5);
    new DataView(oversized.buffer).setUint32(0, MAX_PAYLOAD + 1, true);
    oversized[4] = Frame.ENV;
    const cases: Uint8Array[][] = [
      [oversized],
      [encodeFrame(Frame.END)], // END before HELLO
      [encodeFrame(Frame.HELLO, new Uint8Array(4))], // malformed HELLO
      [...valid.slice(0, 1), encodeFrame(Frame.STDIN, "early")], // stdin inside the request
      [...valid.slice(0, 2), encodeFrame(Frame.EXIT, new Uint8Array(4))], // an agent frame from the client
    ];
    for (let i = 0; i < 60; i++) {
      const len = Math.floor(rnd() * 64);
      const junk = new Uint8Array(len).map(() => Math.floor(rnd() * 256));
      // Random bytes, or a valid prefix with random bytes after it.
      cases.push(rnd() < 0.5 ? [junk] : [...valid.slice(0, 1 + Math.floor(rnd() * valid.length)), junk]);
    }
    for (const bytes of cases) {
      const { frames, closed } = await exchange(path, bytes, undefined, 200);
      // Either the agent closed on a protocol error, or the bytes were an incomplete request it is
      // still waiting for; it never served or crashed on them.
      expect(frames.filter((f) => f.type === Frame.EXIT)).toEqual([]);
      if (!closed) expect(frames).toEqual([]);
    }
    expect(await callAgent(path, call({ CNI_TEST_MODE: "echo", CNI_TEST_MARK: "alive" }, "x"))).toMatchObject({ status: 0, stdout: "x|alive" });
    expect(logLines.some((l) => l.startsWith("connection dropped: frame of"))).toBe(true);
  }, 60_000);

  test("a caller gone mid-call: its call is dropped, nothing else is affected", async () => {
    const { closed } = await exchange(path, requestFrames(call({ CNI_TEST_MODE: "echo" }, "never sent")), undefined, 300);
    expect(closed).toBe(false); // we hung up ourselves while the agent waited for stdin
    expect(await callAgent(path, call({ CNI_TEST_MODE: "echo", CNI_TEST_MARK: "next" }, "y"))).toMatchObject({ status: 0, stdout: "y|next" });
  });
});

describe("Agent lifecycle", () => {
  const dir = suiteTempDir("cni-agent-life-");

  test("a stop drains: the call in flight finishes, new calls are refused (their shims fall back)", async () => {
    const { agent, path } = await startAgent(dir);
    const slow = callAgent(path, call({ CNI_TEST_MODE: "sleep", CNI_TEST_MS: "400", CNI_TEST_MARK: "slow" }));
    await Bun.sleep(100);
    const ending = agent.end(false, "test");
    expect(await callAgent(path, call({ CNI_TEST_MODE: "echo" }))).toEqual({ accepted: false, reason: "the agent is stopping" });
    expect(await slow).toMatchObject({ accepted: true, status: 0, stdout: "slept|slow" });
    await ending;
    expect(await agent.ended).toEqual({ restart: false, reason: "test" });
    agent.close();
  });

  test("--max-requests ends the agent with a restart once the limit is served", async () => {
    const { agent, path } = await startAgent(dir, ["--max-requests", "3"]);
    for (let i = 0; i < 3; i++) expect(await callAgent(path, call({ CNI_TEST_MODE: "env" }))).toMatchObject({ accepted: true });
    expect(await agent.ended).toEqual({ restart: true, reason: "3 calls served (--max-requests 3)" });
    agent.close();
  });

  test("--idle-exit ends an idle agent", async () => {
    const { agent } = await startAgent(dir, ["--idle-exit", "1"]);
    expect(await agent.ended).toEqual({ restart: false, reason: "idle for 1 s" });
    agent.close();
  });

  test("--idle-exit leaves an agent that runs the dhcp daemon running: the daemon renews leases between calls", async () => {
    const dhcpArgs = ["--dhcp", "--", "-leasedir", join(dir, "leases")];
    const { agent } = await startAgent(dir, ["--idle-exit", "1", ...dhcpArgs], join(dir, "dhcp.sock"));
    const outcome = await Promise.race([agent.ended.then(() => "ended"), Bun.sleep(2_500).then(() => "still serving")]);
    expect(outcome).toBe("still serving");
    await agent.end(false, "test");
    expect(await agent.ended).toEqual({ restart: false, reason: "test" });
    agent.close();
  });
});
