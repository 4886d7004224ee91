/**
 * `cni-plugins serve`: the resident agent (docs/resident.md). It listens on a unix socket for the
 * exec shims of the CNI bin directory (shim/cni-shim.c) and runs each call they forward through the
 * same dispatch a plugin process runs, on a pool of worker threads (pool.ts, worker.ts).
 *
 * It serves a call only when a fresh process would see the same thing (peer.ts) and the shim is of
 * this very build; otherwise it refuses and the shim runs the standalone executable.
 *
 * Lifecycle: SIGTERM/SIGINT drain (calls already accepted finish, new ones are refused and fall
 * back) and exit 0; SIGHUP, `--max-requests` calls or `--max-rss` MiB restart gracefully: drain,
 * then execve(2) of this executable with the listening sockets kept open, so the new image answers
 * the calls queued meanwhile. `--idle-exit` ends an idle agent (socket activation starts it again),
 * unless it runs the dhcp daemon, whose leases need renewing between calls.
 * With `--dhcp`, or when systemd passes a socket named "dhcp", the dhcp daemon runs in this process
 * too, on its own socket. With `--metrics-address` or the OpenTelemetry variables in its
 * environment it counts and traces every call, served or run standalone (telemetry.ts).
 */
import type { Socket } from "bun";
import { dhcpDaemon } from "../registry/dhcp-daemon.ts";
import { buildId } from "../registry/version.ts";
import { writeAllSync } from "../shared/cni/stdio.ts";
import { SIGHUP, SIGINT, SIGTERM } from "../shared/sys/constants.ts";
import { readTextFile } from "../shared/sys/file.ts";
import { blockSignals, execve, ignoreSignal } from "../shared/sys/process.ts";
import { Connection, type Decision } from "./connection.ts";
import { parseServeFlags, SERVE_USAGE, ServeUsageError, type ServeFlags } from "./flags.ts";
import { createListener, inheritedListeners, passAcrossExec, removeSocketFile, type Listener } from "./listeners.ts";
import { agentSelf, refusalFor, type Self } from "./peer.ts";
import { idleCollector } from "./idle-gc.ts";
import { WorkerPool } from "./pool.ts";
import { Refusal } from "./refusal.ts";
import { AgentTelemetry, countRestart } from "./telemetry.ts";
import { PROTOCOL_VERSION, type ShimRequest } from "./protocol.ts";
import { missingRuntimeOptions } from "./runtime-options.ts";

type Env = Readonly<Record<string, string | undefined>>;

/** What the agent handles. */
const HANDLED_SIGNALS = [SIGHUP, SIGINT, SIGTERM];

/**
 * The longest a call waits, unaccepted, for a worker thread or for its attachment (and only while
 * a thread works, pool.ts): inside the shim's cap on such waits (QUEUED_BUDGET_MS, shim/cni-shim.c),
 * and short enough that a pod's four or five calls each waiting this long stay well inside a
 * runtime's timeout (kubelet gives a sandbox's networking minutes). In a burst of 250 pods on 2
 * CPUs the longest wait was a few seconds.
 */
const ADMISSION_WAIT_MS = 10_000;
/**
 * Calls that may wait unaccepted at once (more are refused at once): a waiting call holds only
 * its connection and request (a few KiB), so this bounds memory, not throughput; a node's pods
 * rarely number more.
 */
const MAX_WAITING = 512;
/** Threads beyond --min-workers end after this long without a call. */
const WORKER_IDLE_MS = 30_000;
/** At a stop or restart, answers still being written get this long. */
const FLUSH_LIMIT_MS = 5_000;
/**
 * At a stop or restart, calls in flight get this long to finish (a call whose caller never sends
 * its stdin would wait for ever); past it they are abandoned, and their shims report code 11.
 */
const DRAIN_LIMIT_MS = 60_000;

function pad(n: number): string {
  return String(n).padStart(2, "0");
}

/** A line on stderr, Go `log` style as the dhcp daemon's: `2006/01/02 15:04:05 cni-plugins serve: msg`. */
function log(line: string): void {
  const d = new Date();
  const stamp = `${d.getFullYear()}/${pad(d.getMonth() + 1)}/${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  writeAllSync(2, `${stamp} cni-plugins serve: ${line}\n`);
}

/** The worker thread's module: a separate entry point of the compiled executable (Makefile). */
function workerSpecifier(): string {
  return buildId() !== "" ? "./agent/worker.ts" : new URL("./worker.ts", import.meta.url).href;
}

/** Resident set size in MiB (/proc/self/statm, 4 KiB pages). */
function rssMiB(): number {
  const pages = Number(readTextFile("/proc/self/statm").split(" ")[1] ?? "0");
  return (pages * 4096) / (1024 * 1024);
}

/** Where the dhcp daemon's socket is, from its flags (`-hostprefix` + `-socketpath`). */
async function dhcpSocketPath(dhcpArgs: readonly string[]): Promise<string> {
  const { parseDaemonFlags } = await dhcpDaemon.flags();
  const f = parseDaemonFlags(dhcpArgs);
  return f.hostPrefix + f.socketPath;
}

/**
 * The attachment an ADD, CHECK or DEL acts on (its container and interface), by which the pool
 * orders calls. (A nested call, which could wait for its own ancestor, is never served.)
 */
function attachmentOf(env: Record<string, string>): string | undefined {
  const command = env.CNI_COMMAND;
  if (command !== "ADD" && command !== "CHECK" && command !== "DEL") return undefined;
  if (!env.CNI_CONTAINERID) return undefined;
  return `${env.CNI_CONTAINERID}\0${env.CNI_IFNAME ?? ""}`;
}

type State = "serving" | "restarting" | "stopping";

/**
 * The plugin of this build a request's argv runs, or undefined when it is not a plugin call
 * (registry/registry.ts `pluginNameOf`, which cli/dispatch.ts passes).
 */
export type PluginNameOf = (argv: readonly string[]) => string | undefined;

/** What tests may replace; the command uses the defaults. */
export interface AgentOptions {
  /** The build whose shims are served (default: this build's). */
  buildId?: string;
  /** A new worker thread (default: agent/worker.ts). */
  spawnWorker?: () => Worker;
  log?: (line: string) => void;
}

export class Agent {
  #state: State = "serving";
  readonly #flags: ServeFlags;
  readonly #env: Env;
  readonly #self: Self;
  readonly #build: string;
  readonly #pluginNameOf: PluginNameOf;
  readonly #log: (line: string) => void;
  readonly #listeners: Listener[];
  readonly #pool: WorkerPool;
  readonly #connections = new Set<Connection>();
  #server: ReturnType<typeof Bun.listen<Connection>> | undefined;
  #served = 0;
  #refused = 0;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #dhcp: { stop(reason: string): void; done: Promise<number> } | undefined;
  readonly #telemetry: AgentTelemetry;
  #ended: (how: { restart: boolean; reason: string }) => void = () => {};
  readonly ended: Promise<{ restart: boolean; reason: string }>;

  constructor(flags: ServeFlags, env: Env, listeners: Listener[], pluginNameOf: PluginNameOf, opts: AgentOptions = {}) {
    this.#flags = flags;
    this.#pluginNameOf = pluginNameOf;
    this.#env = env;
    this.#listeners = listeners;
    this.#build = opts.buildId ?? buildId();
    this.#log = opts.log ?? log;
    this.#self = agentSelf();
    this.ended = new Promise((resolve) => {
      this.#ended = resolve;
    });
    this.#telemetry = new AgentTelemetry({
      flags,
      env,
      pool: () => ({ inFlight: this.#pool.inFlight, threads: this.#pool.threads }),
      isPlugin: (name) => pluginNameOf([name]) === name,
      log: this.#log,
    });
    this.#pool = new WorkerPool({
      min: flags.minWorkers,
      max: flags.maxWorkers,
      idleMs: WORKER_IDLE_MS,
      admissionWaitMs: ADMISSION_WAIT_MS,
      maxWaiting: MAX_WAITING,
      callTimeoutMs: flags.callTimeoutS * 1000,
      spawn: opts.spawnWorker ?? (() => new Worker(workerSpecifier())),
      log: this.#log,
      telemetry: this.#telemetry.callSettings,
    });
  }

  #refusal(r: Refusal): void {
    this.#refused++;
    this.#telemetry.refused(r);
  }

  /** Serves; the report socket and the metrics endpoint, when wanted, are open before the first call. */
  async start(): Promise<void> {
    await this.#telemetry.start();
    const agent = this.#listeners.find((l) => l.name === "agent")!;
    const connections = this.#connections;
    // The main thread too gives back, once quiet, what a burst of connections left behind.
    const collector = idleCollector();
    const hooks = { decide: (r: ShimRequest, fd: number) => this.#decide(r, fd), problem: (why: string) => this.#log(`connection dropped: ${why}`) };
    this.#server = Bun.listen<Connection>({
      fd: agent.fd,
      socket: {
        open(socket: Socket<Connection>) {
          socket.data = new Connection(socket as Socket<unknown>, hooks);
          connections.add(socket.data);
        },
        data(socket: Socket<Connection>, bytes: Uint8Array) {
          socket.data.data(bytes);
        },
        drain(socket: Socket<Connection>) {
          socket.data.drain();
        },
        close(socket: Socket<Connection>) {
          socket.data.closed();
          connections.delete(socket.data);
          collector.touch();
        },
        error(socket: Socket<Connection>) {
          socket.data.closed();
          connections.delete(socket.data);
        },
      },
      // Listening on an inherited fd: Bun supports it; its type declarations know only hostname or unix.
    } as unknown as Parameters<typeof Bun.listen<Connection>>[0]);
    const dhcp = this.#listeners.find((l) => l.name === "dhcp");
    if (dhcp !== undefined && this.#flags.dhcp !== undefined) void this.#startDhcp(dhcp, this.#flags.dhcp);
    this.#armIdle();
    this.#log(
      `serving on ${agent.ownedPath ?? `inherited fd ${agent.fd}`} (build ${this.#build || "unknown"}, ` +
        `${this.#flags.minWorkers}-${this.#flags.maxWorkers} worker threads${dhcp ? ", dhcp daemon" : ""})`,
    );
  }

  async #startDhcp(l: Listener, args: string[]): Promise<void> {
    const { runDhcpDaemon } = await dhcpDaemon.load();
    let stop: (reason: string) => void = () => {};
    const stopped = new Promise<string>((resolve) => {
      stop = resolve;
    });
    // The daemon closes what it listens on: it gets a copy, this process keeps the original.
    const { dupAbove } = await import("../shared/sys/process.ts");
    const done = runDhcpDaemon(args, this.#env, { listenFd: dupAbove(l.fd, 3), stop: stopped, events: this.#telemetry.dhcpEvents() });
    this.#dhcp = { stop, done };
    const status = await done;
    if (this.#state === "serving") {
      this.#log(`the dhcp daemon ended (status ${status}); stopping`);
      void this.#end(false, "dhcp daemon ended");
    }
  }

  #decide(request: ShimRequest, fd: number): Decision {
    const refuse = (reason: Refusal): Decision => {
      this.#refusal(reason);
      if (this.#flags.verbose) this.#log(`refused ${request.argv[0] ?? ""} (pid ${request.pid}): ${reason.text}`);
      return { serve: false, reason };
    };
    if (this.#state !== "serving") return refuse(new Refusal("draining", `the agent is ${this.#state}`));
    if (request.protocol !== PROTOCOL_VERSION) return refuse(new Refusal("build", `protocol ${request.protocol}, the agent speaks ${PROTOCOL_VERSION}`));
    if (request.buildId !== this.#build || this.#build === "") return refuse(new Refusal("build", `shim of build ${request.buildId}, the agent is ${this.#build || "unknown"}`));
    const argv0 = request.argv[0] ?? "";
    const plugin = this.#pluginNameOf(request.argv);
    if (plugin === undefined) return refuse(new Refusal("not_plugin", `not a plugin call: ${argv0}`));
    const why = refusalFor(fd, request.pid, this.#self);
    if (why !== undefined) return refuse(why);
    this.#armIdle();
    const started = performance.now();
    return {
      serve: true,
      offer: (job) =>
        this.#pool.offer({
          ...job,
          plugin,
          attachment: attachmentOf(job.env),
          accept: () => {
            this.#telemetry.accepted((performance.now() - started) / 1000);
            job.accept();
          },
          refuse: (reason) => {
            this.#refusal(reason);
            if (this.#flags.verbose) this.#log(`refused ${argv0} (pid ${request.pid}): ${reason.text}`);
            job.refuse(reason);
          },
          finish: (out) => {
            this.#served++;
            this.#telemetry.served(plugin, job.env.CNI_COMMAND ?? "", out, (performance.now() - started) / 1000);
            // Logged before the answer goes out: whoever sees the answer finds the line.
            if (this.#flags.verbose) {
              const ms = (performance.now() - started).toFixed(1);
              this.#log(`served ${argv0} ${job.env.CNI_COMMAND ?? ""} ${job.env.CNI_CONTAINERID ?? ""} (pid ${request.pid}): status ${out.status}, ${ms} ms`);
            }
            job.finish(out);
            this.#checkLimits();
          },
        }),
    };
  }

  #checkLimits(): void {
    if (this.#state !== "serving") return;
    const { maxRequests, maxRssMiB } = this.#flags;
    if (maxRequests > 0 && this.#served >= maxRequests) {
      void this.#end(true, `${this.#served} calls served (--max-requests ${maxRequests})`);
      return;
    }
    if (maxRssMiB > 0) {
      const rss = rssMiB();
      if (rss > maxRssMiB) void this.#end(true, `resident set ${rss.toFixed(0)} MiB exceeds --max-rss ${maxRssMiB}`);
    }
  }

  /** The dhcp daemon runs in this process: it renews its leases between calls, so the agent is never idle. */
  get #hostsDhcp(): boolean {
    return this.#flags.dhcp !== undefined && this.#listeners.some((l) => l.name === "dhcp");
  }

  #armIdle(): void {
    if (this.#flags.idleExitS === 0 || this.#hostsDhcp) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      if (this.#pool.inFlight === 0) void this.#end(false, `idle for ${this.#flags.idleExitS} s`);
      else this.#armIdle();
    }, this.#flags.idleExitS * 1000);
  }

  /** Drains, then ends (`ended` resolves): a stop, or with `restart` a restart. */
  end(restart: boolean, reason: string): Promise<void> {
    return this.#end(restart, reason);
  }

  /** Calls served and refused so far. */
  get counts(): { served: number; refused: number; threads: number } {
    return { served: this.#served, refused: this.#refused, threads: this.#pool.threads };
  }

  /** Drains (new calls are refused and fall back), then ends: a restart or a stop. */
  async #end(restart: boolean, reason: string): Promise<void> {
    if (this.#state !== "serving") return;
    this.#state = restart ? "restarting" : "stopping";
    clearTimeout(this.#idleTimer);
    this.#log(`${restart ? "restarting" : "stopping"}: ${reason}; draining ${this.#pool.inFlight} call(s)`);
    let limit: ReturnType<typeof setTimeout> | undefined;
    const drained = await Promise.race([
      this.#pool.drained().then(() => true),
      new Promise<false>((resolve) => (limit = setTimeout(() => resolve(false), DRAIN_LIMIT_MS))),
    ]);
    clearTimeout(limit);
    if (!drained) this.#log(`${this.#pool.inFlight} call(s) still running after ${DRAIN_LIMIT_MS / 1000} s: abandoned`);
    const deadline = Date.now() + FLUSH_LIMIT_MS;
    while ([...this.#connections].length > 0 && Date.now() < deadline) await Bun.sleep(5);
    if (this.#dhcp !== undefined) {
      this.#dhcp.stop(restart ? "restart" : reason);
      await this.#dhcp.done;
    }
    this.#pool.close();
    await this.#telemetry.stop();
    this.#log(`served ${this.#served} call(s), refused ${this.#refused}`);
    this.#ended({ restart, reason });
  }

  /** After a stop: closes the listeners and removes the socket files this process created. */
  close(): void {
    this.#server?.stop(true);
    for (const l of this.#listeners) removeSocketFile(l);
  }

  /**
   * After a restart: this executable again, same arguments, the listeners kept open. A SIGHUP from
   * now until the new image has its handlers is ignored (it asks for the restart under way; pending
   * or not, it would end the new image while it starts). SIGTERM and SIGINT are blocked: one that
   * comes after the new image has installed its handlers waits for them; one that comes while it
   * starts ends it at once, with nothing in flight (the shims then waiting fall back).
   */
  reexec(): never {
    blockSignals(HANDLED_SIGNALS, true);
    ignoreSignal(SIGHUP);
    const inherit = passAcrossExec(this.#listeners, process.pid);
    const env = definedOnly(this.#env);
    for (const k of Object.keys(env)) if (k.startsWith("LISTEN_")) delete env[k];
    countRestart(env);
    execSelf({ ...env, ...inherit });
  }
}

/** The variables of `env` that are set. */
function definedOnly(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** This executable again with the same arguments (process.argv[2] on; [1] is the compiled entry), and `env`. */
function execSelf(env: Record<string, string>): never {
  execve("/proc/self/exe", [process.argv0, ...process.argv.slice(2)], env);
}

/**
 * SIGTERM/SIGINT (stop) and SIGHUP (restart) go to `handle` from now on. Installed before the agent
 * listens, so that no signal finds the default action (which ends the process) once a caller or
 * systemd can see it; then unblocked: after a restart they were blocked across execve (see
 * reexec), and one that came meanwhile is taken now.
 */
function handleSignals(handle: (restart: boolean, reason: string) => void): void {
  process.on("SIGTERM", () => handle(false, "SIGTERM"));
  process.on("SIGINT", () => handle(false, "SIGINT"));
  process.on("SIGHUP", () => handle(true, "SIGHUP"));
  blockSignals(HANDLED_SIGNALS, false);
}

/** `cni-plugins serve [flags]`; resolves with the exit status (never returns after a restart). */
export async function runServeCommand(args: readonly string[], env: Env, pluginNameOf: PluginNameOf): Promise<number> {
  let flags: ServeFlags;
  try {
    flags = parseServeFlags(args);
  } catch (err) {
    if (!(err instanceof ServeUsageError)) throw err;
    if (err.message === "help") {
      writeAllSync(1, SERVE_USAGE);
      return 0;
    }
    writeAllSync(2, `cni-plugins serve: ${err.message}\n${SERVE_USAGE}`);
    return 2;
  }
  // The runtime's options are read at start: a first start without them runs again with them.
  const missing = missingRuntimeOptions(env);
  if (Object.keys(missing).length > 0 && buildId() !== "") execSelf({ ...definedOnly(env), ...missing });
  // A signal before the agent exists is kept for it (a stop then stops it as soon as it started).
  let agent: Agent | undefined;
  let early: [restart: boolean, reason: string] | undefined;
  handleSignals((restart, reason) => {
    if (agent === undefined) early ??= [restart, reason];
    else void agent.end(restart, reason);
  });
  let paths: Record<Listener["name"], string>;
  try {
    paths = { agent: flags.socket, dhcp: flags.dhcp === undefined ? "" : await dhcpSocketPath(flags.dhcp) };
  } catch (err) {
    writeAllSync(2, `cni-plugins serve: the dhcp daemon's flags: ${(err as Error).message}\n`);
    return 2;
  }
  const inherited = inheritedListeners(env, process.pid, paths);
  const listeners: Listener[] = [];
  try {
    listeners.push(inherited.get("agent") ?? (await createListener("agent", flags.socket, log)));
    // The dhcp daemon runs when asked (--dhcp) or when systemd passes its socket (cni-plugins-dhcp.socket).
    const dhcp = inherited.get("dhcp");
    if (dhcp !== undefined) {
      listeners.push(dhcp);
      flags.dhcp ??= [];
    } else if (flags.dhcp !== undefined) {
      listeners.push(await createListener("dhcp", paths.dhcp, log));
    }
  } catch (err) {
    log((err as Error).message);
    for (const l of listeners) removeSocketFile(l);
    return 1;
  }
  agent = new Agent(flags, env, listeners, pluginNameOf);
  await agent.start();
  if (early !== undefined) void agent.end(...early);
  const how = await agent.ended;
  if (how.restart) agent.reexec();
  agent.close();
  return 0;
}
