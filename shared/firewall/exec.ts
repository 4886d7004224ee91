/**
 * The only process runner for iptables, ip6tables and nft (lint-enforced: no other file under
 * shared/ or the plugins spawns these tools).
 *
 * Synchronous (a firewall change may be made from a netns-switched section), argv arrays only —
 * never a shell — and every failure carries the argv, the exit status and the tool's stderr. The
 * errors are plain (not CNI errors): the callers add context, shared/cni/errors.ts picks the code.
 * Binaries are resolved on the invocation's PATH and then in the usual sbin directories, because
 * runtimes often exec plugins with a PATH that lacks /usr/sbin.
 *
 * The environment is always the invocation's own ({@link ToolEnv}, from CmdArgs.env), never this
 * process's: in the resident agent one process serves calls with different environments. Nothing
 * is cached here for the same reason (a tool installed since is found by the next call).
 */
import { exists } from "../sys/file.ts";
import { phaseEnd, phaseStart } from "../telemetry/invocation.ts";

/** A tool exited non-zero (or could not be started). */
export class CommandError extends Error {
  override name = "CommandError";
  readonly argv: readonly string[];
  /** Exit status; -1 when the process could not be started or was killed. */
  readonly status: number;
  readonly stderr: string;
  constructor(argv: readonly string[], status: number, stderr: string, opts: { cause?: unknown } = {}) {
    const detail = stderr.trim().replace(/\s+/g, " ");
    super(`running [${argv.join(" ")}] failed with exit status ${status}${detail ? `: ${detail}` : ""}`, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.argv = argv;
    this.status = status;
    this.stderr = stderr;
  }
}

/** The tool is not installed (not on PATH nor in the sbin directories). */
export class CommandNotFoundError extends CommandError {
  override name = "CommandNotFoundError";
  constructor(tool: string) {
    super([tool], -1, `${tool}: executable file not found in PATH or /usr/sbin, /sbin`);
  }
}

export interface CommandResult {
  status: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Bytes for the child's stdin (e.g. a restore or `nft -f -` script). */
  input?: string;
  /** Return a non-zero status instead of throwing. */
  allowFailure?: boolean;
  /** Kill the tool after this many ms (default 120 000; `--wait` may legitimately block). */
  timeoutMs?: number;
}

/** The environment of the invocation a tool runs for (CmdArgs.env). */
export type ToolEnv = Readonly<Record<string, string | undefined>>;

const FALLBACK_DIRS = ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin"];

/** Absolute path of `tool` (the invocation's PATH first, then the sbin/bin directories). */
export function findExecutable(tool: string, env: ToolEnv): string | undefined {
  const found = Bun.which(tool, { PATH: env.PATH ?? "" });
  if (found !== null) return found;
  return FALLBACK_DIRS.map((dir) => `${dir}/${tool}`).find(exists);
}

function childEnv(invocation: ToolEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(invocation)) if (v !== undefined) env[k] = v;
  env.PATH = env.PATH ? `${env.PATH}:${FALLBACK_DIRS.join(":")}` : FALLBACK_DIRS.join(":");
  env.LC_ALL = "C";
  return env;
}

/**
 * Runs `argv` synchronously with the invocation's environment `env`. `argv[0]` is a tool name
 * (resolved with {@link findExecutable}) or an absolute path. Throws {@link CommandNotFoundError}
 * when the tool is missing and {@link CommandError} on a non-zero exit unless `allowFailure`.
 */
export function runCommand(argv: readonly string[], env: ToolEnv, opts: RunOptions = {}): CommandResult {
  const tool = argv[0];
  if (tool === undefined) throw new TypeError("runCommand: empty argv");
  const path = tool.startsWith("/") ? (exists(tool) ? tool : undefined) : findExecutable(tool, env);
  if (path === undefined) throw new CommandNotFoundError(tool);
  let proc: ReturnType<typeof Bun.spawnSync>;
  const phase = phaseStart();
  try {
    proc = Bun.spawnSync({
      cmd: [path, ...argv.slice(1)],
      env: childEnv(env),
      stdin: opts.input === undefined ? "ignore" : Buffer.from(opts.input),
      stdout: "pipe",
      stderr: "pipe",
      timeout: opts.timeoutMs ?? 120_000,
    });
  } catch (cause) {
    throw new CommandError(argv, -1, String(cause), { cause });
  } finally {
    phaseEnd("firewall", phase);
  }
  const result: CommandResult = {
    status: proc.exitCode ?? -1,
    stdout: proc.stdout ? proc.stdout.toString() : "",
    stderr: proc.stderr ? proc.stderr.toString() : "",
  };
  if (result.status !== 0 && !opts.allowFailure) throw new CommandError(argv, result.status, result.stderr);
  return result;
}
