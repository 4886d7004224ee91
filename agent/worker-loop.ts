/**
 * The loop of an agent worker thread (worker.ts is its entry): runs one call at a time with the
 * call's own argv, environment and streams, one call at a time per thread, so a call's synchronous
 * work — a netlink request waiting for the kernel, an iptables run, a blocking flock on host-local's
 * store — never holds up another call, exactly as separate processes would; the pool (pool.ts)
 * runs several threads for concurrency.
 *
 * The thread has its own working directory and umask (unshare(CLONE_FS)) and adopts the caller's
 * for each call, so relative paths and created files come out as in a process the caller started.
 * An uncaught exception or unhandled rejection during a call becomes that call's error (999), and
 * the thread then retires: the pool replaces it.
 *
 * Memory: a thread asks for a garbage collection after each call and runs a full one once idle
 * (idle-gc.ts). NETLINK_NETFILTER sockets are closed after the call, not in it (deferred-close.ts).
 */
import { toErrorJson } from "../shared/cni/errors.ts";
import type { PluginIO } from "../shared/cni/types.ts";
import { formatError } from "../shared/cni/skel.ts";
import { CLONE_FS } from "../shared/sys/constants.ts";
import { SyscallError } from "../shared/sys/errno.ts";
import { unshare } from "../shared/sys/libc.ts";
import { chdirThread, setUmask } from "../shared/sys/process.ts";
import { deferNetfilterCloses } from "./deferred-close.ts";
import { idleCollector } from "./idle-gc.ts";
import { workerCallScope, type WorkerCallScope } from "./worker-scope.ts";
import type { CallTelemetrySettings, FromWorker, StdinError, ToWorker } from "./messages.ts";
import type { TelemetryHost } from "../shared/telemetry/call.ts";
import type { CallReport } from "../shared/telemetry/report.ts";
import { sampleDecision } from "../shared/telemetry/sample-decision.ts";

/** Runs one call of `plugin` with `io`, its invocations' telemetry going to `telemetry` (if any); its exit status. */
export type CallRunner = (plugin: string, io: PluginIO, telemetry: TelemetryHost | undefined) => Promise<number>;
/** The spec versions of `plugin` (an internal error is labelled with the newest). */
export type VersionsOf = (plugin: string) => readonly string[];

/** The call being run: its stdin (arrived, or awaited), what ends its waits, and whether it has been answered. */
interface Current {
  id: number;
  /** The reports of its invocations. */
  reports: CallReport[];
  scope: WorkerCallScope;
  versions: readonly string[];
  stdin: Uint8Array | Error | undefined;
  reader: { resolve(data: Uint8Array): void; reject(err: Error): void } | undefined;
  answered: boolean;
}

function stdinFailure(error: StdinError): Error {
  // The text a plugin process's own read of fd 0 would give (skel adds "error reading from stdin").
  return "errno" in error ? new SyscallError("read", error.errno, "fd=0") : new Error(error.message);
}

function describe(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

/** Where a call's invocations put their telemetry: `reports`, sent with the answer (none when the agent observes nothing). */
function telemetryHost(settings: CallTelemetrySettings | undefined, reports: CallReport[]): TelemetryHost | undefined {
  if (settings === undefined) return undefined;
  return { sample: sampleDecision(settings.sampler), recordSpans: settings.spans, report: (r) => reports.push(r) };
}

/** Serves calls posted to this worker thread (`self`) until it is terminated. */
export function serveCalls(runCall: CallRunner, versionsOf: VersionsOf, self: Worker): void {
  let current: Current | undefined;
  let retire = false;
  const post = (message: FromWorker) => self.postMessage(message);
  const collector = idleCollector();
  const closes = deferNetfilterCloses();

  /** Answers the current call with an internal error (an uncaught exception or rejection). */
  const failCurrent = (err: unknown): void => {
    retire = true;
    closes.closeNow();
    const call = current;
    if (call === undefined || call.answered) return;
    call.answered = true;
    const json = formatError(toErrorJson(err), call.versions[call.versions.length - 1] ?? "1.1.0");
    // The call's report was never finished: the agent counts it by its answer (serve.ts).
    post({ t: "done", id: call.id, stdout: json, stderr: `uncaught error in the agent: ${describe(err)}\n`, status: 1, retire, reports: [] });
  };
  process.on("uncaughtException", failCurrent);
  process.on("unhandledRejection", failCurrent);

  async function run(msg: Extract<ToWorker, { t: "run" }>): Promise<void> {
    const call: Current = {
      id: msg.id,
      reports: [],
      scope: workerCallScope(new Int32Array(msg.cells), new Int32Array(msg.releases)),
      versions: versionsOf(msg.plugin),
      stdin: undefined,
      reader: undefined,
      answered: false,
    };
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
      status = await runCall(msg.plugin, {
        env: msg.env,
        readStdin: () => {
          const got = call.stdin;
          if (got instanceof Uint8Array) return got;
          if (got !== undefined) return Promise.reject(got);
          return new Promise<Uint8Array>((resolve, reject) => {
            call.reader = { resolve, reject };
          });
        },
        stdout: (text) => {
          stdout += text;
        },
        stderr: (text) => {
          stderr += text;
        },
        scope: call.scope,
      }, telemetryHost(msg.telemetry, call.reports));
    } catch (err) {
      // What a plugin process prints when its dispatch itself fails (cli/dispatch.ts `run`).
      stderr += `internal error: ${describe(err)}\n`;
      status = 2;
    } finally {
      if (mask !== undefined) setUmask(mask);
      chdirThread("/");
      current = undefined;
    }
    closes.callEnded();
    if (!call.answered) {
      call.answered = true;
      post({ t: "done", id: call.id, stdout, stderr, status, retire, reports: call.reports });
    }
    collector.callEnded(); // after the answer: the collection is not the call's wait
  }

  self.onmessage = (event: MessageEvent<ToWorker>) => {
    const msg = event.data;
    switch (msg.t) {
      case "run":
        void run(msg);
        break;
      case "end":
        if (current?.id === msg.id) current.scope.end(msg.reason);
        break;
      case "stdin":
      case "stdin-error": {
        const call = current;
        if (call?.id !== msg.id) break;
        call.stdin = msg.t === "stdin" ? msg.data : stdinFailure(msg.error);
        if (call.stdin instanceof Uint8Array) call.reader?.resolve(call.stdin);
        else call.reader?.reject(call.stdin);
        break;
      }
    }
  };

  unshare(CLONE_FS);
  chdirThread("/");
}
