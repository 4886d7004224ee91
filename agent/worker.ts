/**
 * A worker thread of the agent: runs one plugin call at a time, through the same dispatch a plugin
 * process runs (build/dispatch.ts `routeOf` + `runPluginCall`), with the call's own argv,
 * environment and streams. One call at a time per thread keeps a call's synchronous work — a
 * netlink request waiting for the kernel, an iptables run, a blocking flock on host-local's store —
 * from holding up any other call, exactly as separate processes would; the pool (pool.ts) runs
 * several threads for concurrency.
 *
 * The thread has its own working directory and umask (unshare(CLONE_FS)) and adopts the caller's
 * for each call, so relative paths and created files come out as in a process the caller started.
 * An uncaught exception or unhandled rejection during a call becomes that call's error (999), and
 * the thread then retires: the pool replaces it.
 */
import { routeOf, runPluginCall } from "../build/dispatch.ts";
import { PLUGINS } from "../build/registry.ts";
import { toErrorJson } from "../shared/cni/errors.ts";
import { formatError } from "../shared/cni/skel.ts";
import { SyscallError } from "../shared/sys/errors.ts";
import { unshare } from "../shared/sys/libc.ts";
import { CLONE_FS, chdirThread, setUmask } from "../shared/sys/process.ts";
import type { FromWorker, StdinError, ToWorker } from "./messages.ts";

declare const self: Worker;

/** The call being run: where its stdin arrives, and whether it has been answered. */
interface Current {
  id: number;
  versions: readonly string[];
  stdin?: { resolve(data: Uint8Array): void; reject(err: Error): void };
  answered: boolean;
}
let current: Current | undefined;
let retire = false;

function post(message: FromWorker): void {
  self.postMessage(message);
}

function stdinFailure(error: StdinError): Error {
  // The text a plugin process's own read of fd 0 would give (skel adds "error reading from stdin").
  return "errno" in error ? new SyscallError("read", error.errno, "fd=0") : new Error(error.message);
}

/** Answers the current call with an internal error (an uncaught exception or rejection). */
function failCurrent(err: unknown): void {
  retire = true;
  const call = current;
  if (call === undefined || call.answered) return;
  call.answered = true;
  const newest = call.versions[call.versions.length - 1] ?? "1.1.0";
  const json = formatError(toErrorJson(err), newest);
  post({ t: "done", id: call.id, stdout: json, stderr: `uncaught error in the agent: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`, status: 1, retire });
}

process.on("uncaughtException", failCurrent);
process.on("unhandledRejection", failCurrent);

async function run(msg: Extract<ToWorker, { t: "run" }>): Promise<void> {
  const argv0 = msg.argv[0] ?? "";
  const route = routeOf(argv0.slice(argv0.lastIndexOf("/") + 1), msg.argv.slice(1));
  const call: Current = { id: msg.id, versions: route.kind === "plugin" ? route.entry.versions : [], answered: false };
  current = call;
  let stdout = "";
  let stderr = "";
  let status: number;
  let mask: number | undefined;
  try {
    try {
      chdirThread(`/proc/${msg.pid}/cwd`);
    } catch {
      // The caller's directory cannot be entered (gone, or a race): stay at /.
    }
    mask = setUmask(msg.umask);
    if (route.kind !== "plugin") throw new Error(`not a plugin call: ${argv0}`);
    status = await runPluginCall(route, {
      env: msg.env,
      readStdin: () =>
        new Promise<Uint8Array>((resolve, reject) => {
          call.stdin = { resolve, reject };
          post({ t: "stdin", id: call.id });
        }),
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
    });
  } catch (err) {
    // What a plugin process prints when its dispatch itself fails (build/dispatch.ts `run`).
    stderr += `internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`;
    status = 2;
  } finally {
    if (mask !== undefined) setUmask(mask);
    chdirThread("/");
    current = undefined;
  }
  if (call.answered) return;
  call.answered = true;
  post({ t: "done", id: call.id, stdout, stderr, status, retire });
}

self.onmessage = (event: MessageEvent<ToWorker>) => {
  const msg = event.data;
  switch (msg.t) {
    case "run":
      void run(msg);
      break;
    case "stdin":
      if (current?.id === msg.id) current.stdin?.resolve(msg.data);
      break;
    case "stdin-error":
      if (current?.id === msg.id) current.stdin?.reject(stdinFailure(msg.error));
      break;
  }
};

unshare(CLONE_FS);
chdirThread("/");
// Every plugin's code is loaded (and its bytecode read) once per thread, before the first call.
await Promise.all(Object.values(PLUGINS).map((p) => p.load()));
post({ t: "ready" });
