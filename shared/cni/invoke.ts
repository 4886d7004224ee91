/**
 * Delegation to another plugin (IPAM), as libcni `invoke` does it (upstream `pkg/invoke`):
 * find `<type>` in CNI_PATH, run it with the complete config on stdin and the caller's environment
 * with CNI_COMMAND overridden, pass its stderr through, and re-emit its error JSON unchanged.
 * Plugins reach it through their CmdArgs' delegate (./delegate.ts), which loads this file on the
 * first delegation.
 *
 * Fast path: when the call was given this build's plugins ({@link InProcessPlugins}) and the file
 * found is this very executable or the exec shim installed beside it (same device and inode: a hard
 * link of either, see {@link isOurs}), the delegate runs in-process through skel with identical
 * inputs and outputs, and the same plugins to delegate to in turn, saving a whole process start per
 * pod.
 */
import { joinPath, stat, type FileStat } from "../sys/file.ts";
import { spanEnd, spanStart } from "../sys/phases.ts";
import { delegateTraceParent, phaseEnd, phaseStart } from "../telemetry/invocation.ts";
import { throwIfEnded } from "./call-scope.ts";
import type { DelegateInputs, InProcessPlugins } from "./types.ts";
import { DelegateError, InternalError, InvalidConfigError, InvalidEnvError } from "./errors.ts";
import { parseResult } from "./result/prevresult.ts";
import type { Command, PluginSpec, Result } from "./types.ts";

/** The name of the exec shim in a CNI bin directory (shim/cni-shim.c; docs/resident.md). */
export const SHIM_NAME = "cni-plugins-shim";

/** Rejects plugin names that could escape CNI_PATH (CVE-2021-20206). */
export function validatePluginName(type: string): void {
  if (type === "") throw new InvalidConfigError("no plugin name provided");
  if (type.includes("/") || type.includes("\0") || type === "." || type === "..") {
    throw new InvalidConfigError(`invalid plugin name: ${type}`);
  }
}

/** Finds the first regular file named `type` in the `:`-separated CNI_PATH. */
export function findInPath(type: string, cniPath: string): string {
  validatePluginName(type);
  const dirs = cniPath.split(":").filter((d) => d !== "");
  if (dirs.length === 0) throw new InvalidEnvError("no paths provided");
  for (const dir of dirs) {
    const candidate = joinPath(dir, type);
    try {
      if (stat(candidate).isFile()) return candidate;
    } catch {
      // not here; keep looking
    }
  }
  throw new InternalError(`failed to find plugin ${JSON.stringify(type)} in path [${dirs.join(" ")}]`);
}

/** stat(2), or undefined when the path cannot be examined at all. */
function statOrUndefined(path: string): FileStat | undefined {
  try {
    return stat(path);
  } catch {
    return undefined;
  }
}

function sameFile(a: FileStat | undefined, b: FileStat | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino;
}

/**
 * True when `file` runs this build: it is this very executable, or the exec shim of the directory
 * this executable was started from (the shim forwards to this build's agent or execs this file).
 * Looked up on every call (a cache would go stale in the resident agent when files are replaced).
 */
function isOurs(file: string): boolean {
  const target = statOrUndefined(file);
  if (target === undefined) return false;
  const self = process.execPath;
  if (sameFile(target, statOrUndefined(self))) return true;
  return sameFile(target, statOrUndefined(joinPath(self.slice(0, self.lastIndexOf("/") + 1), SHIM_NAME)));
}

interface DelegateOutput {
  status: number;
  stdout: string;
  stderr: string;
  exitDescription: string;
}

async function runInProcess(spec: PluginSpec, args: DelegateInputs, command: Command, plugins: InProcessPlugins): Promise<DelegateOutput> {
  let stdout = "";
  const status = await plugins.run(spec, {
      env: delegateEnv(args, command),
      readStdin: () => args.stdinData,
      stdout: (text) => {
        stdout += text;
      },
      stderr: args.stderr,
      scope: args.scope,
  });
  return { status, stdout, stderr: "", exitDescription: `exit status ${status}` };
}

/** A delegate may print at most this much (each of stdout and stderr); past it, it is killed. */
const MAX_DELEGATE_OUTPUT = 64 * 1024 * 1024;

/**
 * Reads `stream` whole. Past MAX_DELEGATE_OUTPUT bytes it calls `tooMuch` (which kills the child)
 * and stops; when `signal` aborts it stops at once (a descendant of the child may hold the pipe).
 */
async function readBounded(stream: ReadableStream<Uint8Array>, signal: AbortSignal, tooMuch: () => void): Promise<string> {
  const reader = stream.getReader();
  const stop = () => void reader.cancel().catch(() => {});
  signal.addEventListener("abort", stop);
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > MAX_DELEGATE_OUTPUT) {
        tooMuch();
        stop();
        break;
      }
      chunks.push(value);
    }
  } finally {
    signal.removeEventListener("abort", stop);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Starts `file`; retries for a while when it is being written (ETXTBSY: an installer is replacing it). */
async function spawnDelegate(file: string, args: DelegateInputs, command: Command, signal: AbortSignal): Promise<ReturnType<typeof spawnPiped>> {
  for (let attempt = 0; ; attempt++) {
    try {
      return spawnPiped(file, args, command);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ETXTBSY" && attempt < 5 && !signal.aborted) {
        await Bun.sleep(1000);
        continue;
      }
      throw new InternalError(`failed to exec ${file}: ${(err as Error).message}`, { cause: err });
    }
  }
}

function spawnPiped(file: string, args: DelegateInputs, command: Command) {
  return Bun.spawn({
    cmd: [file],
    argv0: file,
    env: definedEnv(delegateEnv(args, command)),
    stdin: args.stdinData,
    stdout: "pipe",
    stderr: "pipe",
  });
}

/**
 * A delegate's environment: the caller's, with CNI_COMMAND replaced and, when the caller records
 * telemetry, TRACEPARENT naming the caller's span (so the delegate's span is its child).
 */
function delegateEnv(args: DelegateInputs, command: Command): Record<string, string | undefined> {
  const traceParent = delegateTraceParent();
  return traceParent === undefined ? { ...args.env, CNI_COMMAND: command } : { ...args.env, CNI_COMMAND: command, TRACEPARENT: traceParent };
}

function definedEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * Runs a delegate that is not this build (or one that is, found under another inode) as a process,
 * as libcni does. A wait on another process: when the call is ended (the resident agent's caller
 * went away), the delegate is killed, as it would be gone with a killed plugin process's call.
 */
async function runExternal(file: string, args: DelegateInputs, command: Command): Promise<DelegateOutput> {
  throwIfEnded(args.scope);
  return args.scope.waitOn(async (signal) => {
    const child = await spawnDelegate(file, args, command, signal);
    const kill = () => child.kill(9);
    signal.addEventListener("abort", kill);
    try {
      const [stdout, stderr] = await Promise.all([readBounded(child.stdout, signal, kill), readBounded(child.stderr, signal, kill)]);
      await child.exited;
      throwIfEnded(args.scope);
      if (stderr !== "") args.stderr(stderr);
      const status = child.exitCode ?? 1;
      const exitDescription = child.signalCode ? `signal: ${child.signalCode}` : `exit status ${status}`;
      return { status, stdout, stderr, exitDescription };
    } finally {
      signal.removeEventListener("abort", kill);
    }
  });
}

/** Turns a failed delegate's output into the error upstream would re-emit (code preserved). */
function delegateFailure(out: DelegateOutput): DelegateError {
  if (out.stdout.trim() === "") {
    if (out.stderr !== "") return new DelegateError(0, `netplugin failed: ${JSON.stringify(out.stderr)}`);
    return new DelegateError(0, `netplugin failed with no error message: ${out.exitDescription}`);
  }
  try {
    const e = JSON.parse(out.stdout) as { code?: unknown; msg?: unknown; details?: unknown };
    const code = typeof e.code === "number" ? e.code : 0;
    const msg = typeof e.msg === "string" ? e.msg : "";
    const details = typeof e.details === "string" ? e.details : undefined;
    return new DelegateError(code, msg, { details });
  } catch (err) {
    return new DelegateError(
      0,
      `netplugin failed but error parsing its diagnostic message ${JSON.stringify(out.stdout)}: ${(err as Error).message}`,
    );
  }
}

/**
 * Runs `type` for `command` with the caller's inputs (in-process when it is this build and
 * `inProcess` is given); returns its stdout on success.
 */
export async function execDelegate(type: string, args: DelegateInputs, command: Command, inProcess?: InProcessPlugins): Promise<string> {
  const started = spanStart();
  const phase = phaseStart();
  let out: DelegateOutput;
  try {
    const file = findInPath(type, args.path);
    const spec = inProcess && isOurs(file) ? await inProcess.lookup(type) : undefined;
    out = inProcess && spec ? await runInProcess(spec, args, command, inProcess) : await runExternal(file, args, command);
  } finally {
    phaseEnd("delegate", phase);
  }
  spanEnd("delegate", started);
  if (out.status !== 0) throw delegateFailure(out);
  return out.stdout;
}

/** IPAM ADD: the delegate's result in the current type (a missing cniVersion gets the config's). */
export async function delegateAdd(type: string, args: DelegateInputs, inProcess?: InProcessPlugins): Promise<Result> {
  const stdout = await execDelegate(type, args, "ADD", inProcess);
  return parseResult(stdout, args.cniVersion);
}
