/**
 * A resident agent (`cni-plugins serve`, the built executable) run by a test in the test's own
 * namespaces, on a socket of its own; stopped (by its pid) when the test ends.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { registerCleanup } from "./cleanup.ts";
import { DIST_BIN, MULTI_CALL_BINARY, SHIM_NAME } from "./paths.ts";
import { makeTempDir } from "./tempdir.ts";

/** Where an agent lane collects the logs of the agents of its tests' nodes (unset outside agent lanes). */
export const NODE_AGENT_LOG_ENV = "CNI_TEST_NODE_AGENT_LOG";

/** The node agents of this test process, by the network namespace they serve. */
const nodeAgents = new Map<string, Promise<RunningAgent>>();

/**
 * In an agent lane, the socket of the agent serving `exe` (a shim of the build under test, DIST_BIN)
 * run in network namespace `netns` (a node's host namespace): started there on first use, as a real
 * node runs its own (an agent serves only callers in its own network namespace); the namespace's
 * destroy stops it (stopNodeAgent). Undefined outside agent lanes and for executables that are not
 * the tested build's shims (the Go reference; the host's build that the arm64 lane compares with).
 */
export async function nodeAgentSocket(netns: string, exe: string): Promise<string | undefined> {
  if (process.env[NODE_AGENT_LOG_ENV] === undefined || resolve(dirname(exe)) !== resolve(DIST_BIN) || !existsSync(join(dirname(exe), SHIM_NAME))) return undefined;
  let agent = nodeAgents.get(netns);
  if (agent === undefined) {
    agent = startAgent([], { argvPrefix: ["nsenter", `--net=${netns}`, "--"] });
    nodeAgents.set(netns, agent);
  }
  return (await agent).socket;
}

/** Stops the agent of `netns` (if any) and adds its log to the lane's (NODE_AGENT_LOG_ENV). */
export async function stopNodeAgent(netns: string): Promise<void> {
  const agent = nodeAgents.get(netns);
  if (agent === undefined) return;
  nodeAgents.delete(netns);
  const a = await agent.catch(() => undefined);
  if (a === undefined) return;
  await a.stop();
  const logFile = process.env[NODE_AGENT_LOG_ENV];
  if (logFile !== undefined) appendFileSync(logFile, a.log());
}

export interface RunningAgent {
  /** The socket; pass it to shims as CNI_PLUGINS_SOCKET. */
  socket: string;
  pid: number;
  /** What the agent has logged so far (it runs with --verbose). */
  log(): string;
  /** How many calls it logged as served / refused so far. */
  served(): number;
  refused(): string[];
  /** Sends `signal` and waits for the exit status. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number>;
}

/** Waits until `path` accepts connections. */
export async function waitForSocket(path: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (existsSync(path)) {
      try {
        const s = await Bun.connect({ unix: path, socket: { data() {} } });
        s.end();
        return;
      } catch {
        // not listening yet
      }
    }
    if (Date.now() > deadline) throw new Error(`no agent listening on ${path} after ${ms} ms`);
    await Bun.sleep(20);
  }
}

/**
 * Starts `cni-plugins serve --verbose --socket <dir>/plugins.sock [args]` (`dir` default: a fresh
 * temp dir) and waits for it to listen. `spawn` may wrap the command (e.g. socket activation).
 */
export async function startAgent(args: string[] = [], opts: { dir?: string; env?: Record<string, string>; argvPrefix?: string[]; waitFor?: string } = {}): Promise<RunningAgent> {
  const dir = opts.dir ?? makeTempDir("cni-agent-");
  const socket = join(dir, "plugins.sock");
  const logFile = join(makeTempDir("cni-agent-log-"), "agent.log");
  const argv = [...(opts.argvPrefix ?? []), MULTI_CALL_BINARY, "serve", "--verbose", "--socket", socket, ...args];
  const proc = Bun.spawn(argv, {
    env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", ...opts.env },
    stdin: "ignore",
    stdout: Bun.file(logFile),
    stderr: Bun.file(logFile),
  });
  const stopNow = registerCleanup(`agent pid ${proc.pid}`, () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  });
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "");
  const exited = proc.exited.then((code) => {
    stopNow();
    return code;
  });
  try {
    await waitForSocket(opts.waitFor ?? socket);
  } catch (err) {
    proc.kill("SIGKILL");
    await proc.exited;
    throw new Error(`${(err as Error).message}; agent log:\n${log()}`);
  }
  return {
    socket,
    pid: proc.pid,
    log,
    served: () => log().split("\n").filter((l) => / cni-plugins serve: served \S+ /.test(l)).length,
    refused: () => log().split("\n").filter((l) => / cni-plugins serve: refused /.test(l)),
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await proc.exited;
      return proc.exitCode;
    },
    exited,
  };
}
