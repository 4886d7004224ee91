/**
 * What the scenarios of `make bench` share: running harness commands (untimed), throwaway network
 * namespaces for containers, and timed plugin calls made as a runtime makes them (environment +
 * config on stdin, one process per call). Only the plugin processes are timed.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";

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

/**
 * Runs one plugin call and times the process from spawn to exit. Throws when it fails: a failed
 * call is never a sample.
 */
export function call(dir: string, plugin: string, command: string, env: CallEnv, config: string): CallResult {
  const file = join(dir, plugin);
  const fullEnv: Record<string, string> = { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", CNI_COMMAND: command, ...env };
  const startedAt = wallNow();
  const r = Bun.spawnSync({ cmd: [file], env: fullEnv, stdin: Buffer.from(config), stdout: "pipe", stderr: "pipe" });
  const endedAt = wallNow();
  const stdout = r.stdout.toString();
  const stderr = r.stderr.toString();
  if (r.exitCode !== 0) {
    throw new Error(`${file} ${command} (${env.CNI_CONTAINERID}) exited ${r.exitCode ?? r.signalCode}: ${stdout.slice(0, 400)} ${stderr.slice(0, 400)}`);
  }
  return { ms: endedAt - startedAt, startedAt, endedAt, stdout, stderr };
}

/** One plugin of a chain: its type and its own keys (name and cniVersion are the chain's). */
export interface ChainPlugin {
  type: string;
  conf: Record<string, unknown>;
}

export const CNI_VERSION = "1.0.0";

function pluginConfig(network: string, p: ChainPlugin, prevResult: unknown): string {
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

