/**
 * Runs a plugin binary exactly as a container runtime does: argv[0] is the plugin's full path, the
 * CNI_* variables come through the environment, the network configuration through stdin, and the
 * answer is read from stdout (result or error JSON) plus the exit status.
 */
import { nodeAgentSocket } from "./agent.ts";
import { DIST_BIN, GO_BIN_DIR } from "./paths.ts";
import { join } from "node:path";

export type CniCommand = "ADD" | "DEL" | "CHECK" | "VERSION" | "STATUS" | "GC" | (string & {});

export interface PluginInvocation {
  /** CNI_COMMAND; omit (undefined) to leave it unset. */
  command?: CniCommand | undefined;
  containerID?: string | undefined;
  netns?: string | undefined;
  ifName?: string | undefined;
  /** CNI_ARGS. */
  args?: string | undefined;
  /** CNI_PATH; defaults to the directory the plugin is taken from. Pass "" to send it empty. */
  path?: string | undefined;
  /** The network configuration: an object is sent as JSON, a string or bytes verbatim. */
  config?: unknown;
  /** Extra environment; a value of `undefined` removes that variable. */
  env?: Record<string, string | undefined>;
  /** Directory holding the plugin; defaults to dist/bin (ours). Use GO_BIN_DIR for the reference. */
  binDir?: string;
  /** Working directory of the plugin process (default: the test process's). */
  cwd?: string;
  /** Kills the plugin after this many ms (default 30 000); a timeout is reported, never hidden. */
  timeoutMs?: number;
  /** A command prefix that runs the plugin, e.g. `nsenter --mount=... --` (PrivateMountNs.prefix). */
  wrap?: string[];
  /**
   * Failing disks: the plugin runs in a private mount namespace (the host's mounts are untouched)
   * where each `dir` is read-only (`ro`, its content kept) or an empty file system with no space
   * left (`full`: a small tmpfs filled up; new names can still be created, writes fail ENOSPC).
   */
  faultyDirs?: { dir: string; fault: "ro" | "full" }[];
  /**
   * Runs the plugin in this network namespace (a path) instead of the test's own: its "host" (in an
   * agent lane, served by that namespace's own agent: harness/agent.ts nodeAgentSocket).
   */
  hostNetns?: string;
}

/** sh script: applies `ro DIR` / `full DIR` pairs after the executable, then execs it. */
const FAULTY_DIRS_SCRIPT = `exe=$1; shift
while [ $# -gt 0 ]; do
  case $1 in
    ro) mount --bind "$2" "$2" && mount -o remount,bind,ro "$2" ;;
    full) mount -t tmpfs -o size=64k tmpfs "$2" && { cat /dev/zero >"$2/.fill" 2>/dev/null; true; } ;;
  esac || exit 125
  shift 2
done
exec "$exe"`;

/** The argv that runs `exe` in `hostNetns` with `faultyDirs` applied (just `exe` without either). */
function wrappedArgv(exe: string, inv: PluginInvocation): string[] {
  const inHost = inv.hostNetns === undefined ? [] : ["nsenter", `--net=${inv.hostNetns}`, "--"];
  if (inv.faultyDirs === undefined || inv.faultyDirs.length === 0) return [...inHost, exe];
  const pairs = inv.faultyDirs.flatMap((f) => [f.fault, f.dir]);
  return [...inHost, "unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", FAULTY_DIRS_SCRIPT, "sh", exe, ...pairs];
}

export interface PluginRun {
  /** Exit status (null when killed by a signal). */
  status: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON, or undefined when empty or not JSON. */
  json: any;
  /** Wall time of the run, ms. */
  ms: number;
}

/** The environment a runtime would give: PATH and locale from ours, then the CNI_* variables. */
export function pluginEnv(inv: PluginInvocation, binDir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of ["PATH", "LANG", "LC_ALL", "TZ"]) {
    const v = process.env[key];
    if (v !== undefined) env[key] = v;
  }
  const put = (key: string, value: string | undefined): void => {
    if (value !== undefined) env[key] = value;
  };
  put("CNI_COMMAND", inv.command);
  put("CNI_CONTAINERID", inv.containerID);
  put("CNI_NETNS", inv.netns);
  put("CNI_IFNAME", inv.ifName);
  put("CNI_ARGS", inv.args);
  put("CNI_PATH", inv.path === undefined ? binDir : inv.path);
  for (const [key, value] of Object.entries(inv.env ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

function stdinBytes(config: unknown): Uint8Array {
  if (config === undefined) return new Uint8Array(0);
  if (config instanceof Uint8Array) return config;
  if (typeof config === "string") return new TextEncoder().encode(config);
  return new TextEncoder().encode(JSON.stringify(config));
}

function parseJson(text: string): any {
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Runs `<binDir>/<type>` once and collects everything it printed. */
export async function execPlugin(type: string, inv: PluginInvocation): Promise<PluginRun> {
  const binDir = inv.binDir ?? DIST_BIN;
  const exe = join(binDir, type);
  const started = performance.now();
  const argv = [...(inv.wrap ?? []), ...wrappedArgv(exe, inv)];
  const env = pluginEnv(inv, binDir);
  // In an agent lane a "host" namespace has its own agent, as a node does.
  const socket = inv.hostNetns === undefined ? undefined : await nodeAgentSocket(inv.hostNetns, exe);
  if (socket !== undefined && env.CNI_PLUGINS_SOCKET === undefined) env.CNI_PLUGINS_SOCKET = socket;
  const proc = Bun.spawn(argv, {
    argv0: argv[0]!,
    env,
    cwd: inv.cwd ?? process.cwd(),
    stdin: stdinBytes(inv.config),
    stdout: "pipe",
    stderr: "pipe",
    timeout: inv.timeoutMs ?? 30_000,
    killSignal: "SIGKILL",
  });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  return {
    status: proc.exitCode,
    signal: proc.signalCode === null ? null : String(proc.signalCode),
    stdout,
    stderr,
    json: parseJson(stdout),
    ms: performance.now() - started,
  };
}

/** Same as {@link execPlugin} against the Go reference plugin in /usr/lib/cni. */
export function execGoPlugin(type: string, inv: PluginInvocation): Promise<PluginRun> {
  return execPlugin(type, { ...inv, binDir: inv.binDir ?? GO_BIN_DIR });
}

/** One-line description of a run for assertion messages. */
export function describeRun(run: PluginRun): string {
  return `exit=${run.status}${run.signal ? ` signal=${run.signal}` : ""} stdout=${JSON.stringify(run.stdout)} stderr=${JSON.stringify(run.stderr.slice(0, 2000))}`;
}
