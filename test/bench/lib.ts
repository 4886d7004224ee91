/**
 * What the scenarios of `make bench` share: running harness commands (untimed), throwaway network
 * namespaces for containers, and timed plugin calls made as a runtime makes them (environment +
 * config on stdin, one process per call). Only the plugin processes are timed.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { IDLE_GC_MS } from "../../agent/idle-gc.ts";

/**
 * What is measured, side by side:
 * - direct: ours as before resident mode, every plugin name a link to the executable;
 * - standalone: ours as installed (the exec shim) with no agent: the shim runs the executable;
 * - resident: the same shims with the agent serving the calls;
 * - go: the Go reference plugins.
 */
export type Impl = "direct" | "standalone" | "resident" | "go";
export const IMPLS: readonly Impl[] = ["direct", "standalone", "resident", "go"];

/**
 * Where the plugins are: ours as built (shims), ours as links to the executable, Go's, and links to
 * ours built on Bun's x64 runtime instead of the baseline one (`make bench` builds it).
 */
export interface Dirs {
  ours: string;
  direct: string;
  go: string;
  avx2: string;
}

/** The plugin directory of `impl`. */
export function dirOf(dirs: Dirs, impl: Impl): string {
  return impl === "go" ? dirs.go : impl === "direct" ? dirs.direct : dirs.ours;
}

/** A socket where no agent listens: the shims of `standalone` fall back at once. */
export const NO_AGENT_SOCKET = "/run/cni-bench-no-agent.sock";

/** Runs a harness command (not timed); throws with its output on failure. */
export function sh(argv: readonly string[], input?: string): string {
  const r = spawnSync(argv[0]!, argv.slice(1), { input, encoding: "utf8", maxBuffer: 256 << 20 });
  if (r.status !== 0) {
    throw new Error(`${argv.join(" ").slice(0, 200)} failed (${r.status ?? r.signal}): ${(r.stderr || r.stdout || String(r.error)).trim()}`);
  }
  return r.stdout;
}

/** Prints a progress line on stderr. */
export function log(text: string): void {
  process.stderr.write(`bench: ${text}\n`);
}

/** A named network namespace for one container (`ip netns`, under the bench's private /run/netns). */
export class ContainerNetns {
  readonly name: string;
  readonly path: string;
  constructor(name: string) {
    this.name = name;
    this.path = `/run/netns/${name}`;
    sh(["ip", "netns", "add", name]);
  }
  remove(): void {
    sh(["ip", "netns", "del", this.name]);
  }
}

/** Creates many container namespaces with one `ip -batch`. */
export function addNetnsBatch(names: readonly string[]): void {
  sh(["ip", "-batch", "-"], names.map((n) => `netns add ${n}\n`).join(""));
}

/** Deletes many container namespaces with one `ip -batch` (missing ones are an error). */
export function delNetnsBatch(names: readonly string[]): void {
  sh(["ip", "-batch", "-"], names.map((n) => `netns del ${n}\n`).join(""));
}

/** How many host-local reservation files (IPv4 addresses) are in the store directory `dir`. */
export function leftoverReservations(dir: string): number {
  try {
    return readdirSync(dir).filter((n) => /^[0-9a-f.:]+$/.test(n) && n.includes(".")).length;
  } catch {
    return 0;
  }
}

export interface CallEnv {
  CNI_CONTAINERID: string;
  CNI_NETNS: string;
  CNI_IFNAME: string;
  CNI_PATH: string;
  PATH?: string;
  CNI_PHASES?: string;
  /** Where the shims find the agent (docs/resident.md). */
  CNI_PLUGINS_SOCKET?: string;
}

export interface CallResult {
  ms: number;
  /** Wall-clock (epoch ms) when the process was started and when it had been reaped. */
  startedAt: number;
  endedAt: number;
  stdout: string;
  stderr: string;
}

/** Epoch milliseconds with sub-millisecond precision (the same scale as a child's timeOrigin). */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

/** The process environment of a plugin call: the bench's PATH unless `env` names one. */
function callEnvironment(command: string, env: CallEnv): Record<string, string> {
  return { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", CNI_COMMAND: command, ...env };
}

/** What a failed call throws: the call, its exit, and the start of its stdout and stderr. */
function callFailed(file: string, command: string, env: CallEnv, exit: number | string | null, stdout: string, stderr: string): Error {
  return new Error(`${file} ${command} (${env.CNI_CONTAINERID}) exited ${exit}: ${stdout.slice(0, 400)} ${stderr.slice(0, 400)}`);
}

/**
 * Runs one plugin call and times the process from spawn to exit. Throws when it fails: a failed
 * call is never a sample.
 */
export function call(dir: string, plugin: string, command: string, env: CallEnv, config: string): CallResult {
  const file = join(dir, plugin);
  const startedAt = wallNow();
  const r = Bun.spawnSync({ cmd: [file], env: callEnvironment(command, env), stdin: Buffer.from(config), stdout: "pipe", stderr: "pipe" });
  const endedAt = wallNow();
  const stdout = r.stdout.toString();
  const stderr = r.stderr.toString();
  if (r.exitCode !== 0) throw callFailed(file, command, env, r.exitCode ?? r.signalCode, stdout, stderr);
  return { ms: endedAt - startedAt, startedAt, endedAt, stdout, stderr };
}

export interface AsyncCallResult {
  stdout: string;
  /**
   * CPU time of the process, user + system, in ms, with that of every child it waited for (the
   * iptables tools a plugin runs): the rusage wait4 returns when it is reaped.
   */
  cpuMs: number;
}

/**
 * One plugin call started without waiting for it, for calls made at once; resolves when the process
 * is reaped. Throws as `call` does.
 */
export async function callAsync(dir: string, plugin: string, command: string, env: CallEnv, config: string): Promise<AsyncCallResult> {
  const file = join(dir, plugin);
  const p = Bun.spawn({ cmd: [file], env: callEnvironment(command, env), stdin: Buffer.from(config), stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exit] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (exit !== 0) throw callFailed(file, command, env, exit ?? p.signalCode, stdout, stderr);
  const usage = p.resourceUsage();
  if (usage === undefined) throw new Error(`${file} ${command}: no resource usage after exit`);
  return { stdout, cpuMs: Number(usage.cpuTime.total) / 1000 };
}

/** Waits until something accepts connections on the unix socket `path`. */
export async function waitUntilListening(path: string): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      (await Bun.connect({ unix: path, socket: { data() {} } })).end();
      return;
    } catch {
      if (i > 300) throw new Error(`nothing listens on ${path}`);
      await Bun.sleep(20);
    }
  }
}

/**
 * How long an agent takes to finish what a burst of calls leaves it: the deferred close of its
 * netfilter sockets (250 ms, agent/deferred-close.ts) and its idle threads' garbage collection
 * (IDLE_GC_MS after their last call).
 */
export const AGENT_SETTLE_MS = IDLE_GC_MS + 500;

export interface Agent {
  socket: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts the resident agent of the plugins in `ours` (in the caller's namespaces) on `socket`, with
 * the flags it is shipped with (deploy/systemd/cni-plugins.service) but for `extraArgs`, and waits
 * until it listens.
 */
export async function startAgent(ours: string, socket: string, extraArgs: readonly string[] = []): Promise<Agent> {
  const proc = Bun.spawn([join(ours, "cni-plugins"), "serve", "--socket", socket, ...extraArgs], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "inherit",
  });
  await waitUntilListening(socket);
  return {
    socket,
    pid: proc.pid,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/** One plugin of a chain: its type and its own keys (name and cniVersion are the chain's). */
export interface ChainPlugin {
  type: string;
  conf: Record<string, unknown>;
}

export const CNI_VERSION = "1.0.0";

/** portmap with one mapping, as a runtime passes it (`runtimeConfig`): host TCP port `hostPort` to 80. */
export function portmap(hostPort: number): ChainPlugin {
  return {
    type: "portmap",
    conf: { capabilities: { portMappings: true }, runtimeConfig: { portMappings: [{ hostPort, containerPort: 80, protocol: "tcp" }] } },
  };
}
export const FIREWALL: ChainPlugin = { type: "firewall", conf: {} };
export const TUNING: ChainPlugin = { type: "tuning", conf: { sysctl: { "net.core.somaxconn": "500" } } };
export const BANDWIDTH: ChainPlugin = {
  type: "bandwidth",
  conf: { ingressRate: 8_000_000, ingressBurst: 80_000, egressRate: 8_000_000, egressBurst: 80_000 },
};

/** The config one plugin of a chain gets: the chain's name and version, its keys, the prevResult. */
export function pluginConfig(network: string, p: ChainPlugin, prevResult: unknown): string {
  const conf: Record<string, unknown> = { cniVersion: CNI_VERSION, name: network, type: p.type, ...p.conf };
  if (prevResult !== undefined) conf.prevResult = prevResult;
  return JSON.stringify(conf);
}

/**
 * A chain ADD as libcni runs it: each plugin gets the previous one's result as prevResult. Returns
 * the summed time of the plugin processes and the final result.
 */
export function chainAdd(dir: string, network: string, plugins: readonly ChainPlugin[], env: CallEnv): { ms: number; result: unknown } {
  let ms = 0;
  let result: unknown;
  for (const p of plugins) {
    const r = call(dir, p.type, "ADD", env, pluginConfig(network, p, result));
    ms += r.ms;
    result = JSON.parse(r.stdout);
  }
  return { ms, result };
}

/** A chain DEL as libcni runs it: reverse order, each with the cached final result as prevResult. */
export function chainDel(dir: string, network: string, plugins: readonly ChainPlugin[], env: CallEnv, result: unknown): number {
  let ms = 0;
  for (const p of [...plugins].reverse()) ms += call(dir, p.type, "DEL", env, pluginConfig(network, p, result)).ms;
  return ms;
}

/**
 * Puts every executable of the plugin directories (and `extra` files) into the page cache the
 * same way: written back, dropped, read once. How a file sits in the cache changes how much of it
 * a process maps on its page faults (fault-around; a freshly written file is cached in larger
 * folios than one read back) and so both its resident size and its start-up: an identical copy of
 * a binary measured 2 MB more.
 */
export function normalisePageCache(dirs: readonly string[], extra: readonly string[] = []): void {
  const files = [...new Set([...extra, ...dirs.flatMap((d) => readdirSync(d).map((p) => realpathSync(join(d, p))))])];
  sh(["sync", ...files]);
  for (const file of files) {
    sh(["dd", `if=${file}`, "iflag=nocache", "count=0", "status=none"]);
    readFileSync(file);
  }
}

