/**
 * The opt-in per-call log for operators (docs/call-log.md): one JSON line per plugin call appended to
 * a file named by the plugin config's `callLog` key or, when the config has none, by the
 * CNI_PLUGINS_CALL_LOG environment variable. skel checks both cheaply and loads this module only when
 * one of them is set, so a call with the log off costs nothing here.
 *
 * Writing the log never changes the call: every error is swallowed (one line on stderr says why),
 * and stdout is never touched. A line also carries the trace context the runtime passed
 * ({@link TRACE_CONTEXT_ENV}); delegation (invoke.ts) hands the same environment to the IPAM
 * plugin, so its line carries the same trace.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import { isAbsolute } from "node:path";
import { CALL_LOG_ENV, CALL_LOG_KEY } from "./call-log-switch.ts";

/** What one call did, as skel saw it. */
export interface CallRecord {
  plugin: string;
  env: Readonly<Record<string, string | undefined>>;
  /** The config bytes read from stdin (undefined when the call ended before reading them). */
  stdin: Uint8Array | undefined;
  /** Everything the call wrote to stdout (the result, or the error JSON when `status` is not 0). */
  stdout: string;
  status: number;
  durationMs: number;
}

/**
 * The trace context libcni passes to plugins (cni#1173, OpenTelemetry's environment carriers): each
 * variable and the key its value is logged under, when the call got it.
 */
export const TRACE_CONTEXT_ENV = { TRACEPARENT: "traceparent", TRACESTATE: "tracestate", BAGGAGE: "baggage" } as const;

/** One line of the log. */
export interface CallLogLine {
  time: string;
  plugin: string;
  command: string;
  containerID: string;
  ifName: string;
  network: string;
  durationMs: number;
  outcome: "ok" | "error";
  /** The CNI error code (0 on success). */
  code: number;
  /** The CNI error message ("" on success). */
  msg: string;
  /** TRACEPARENT, TRACESTATE, BAGGAGE as the call got them; absent when unset or empty. */
  traceparent?: string;
  tracestate?: string;
  baggage?: string;
}

function parsedConfig(stdin: Uint8Array | undefined): Record<string, unknown> | undefined {
  if (stdin === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(stdin.buffer, stdin.byteOffset, stdin.byteLength).toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The log file for this call: the config's `callLog`, else the environment's, else undefined. */
export function callLogPath(config: Record<string, unknown> | undefined, env: CallRecord["env"]): string | undefined {
  const fromConfig = config?.[CALL_LOG_KEY];
  if (typeof fromConfig === "string" && fromConfig !== "") return fromConfig;
  const fromEnv = env[CALL_LOG_ENV];
  return fromEnv === undefined || fromEnv === "" ? undefined : fromEnv;
}

/** The error code and message of a failed call, from the error JSON it printed. */
function errorOf(stdout: string): { code: number; msg: string } {
  try {
    const e = JSON.parse(stdout) as { code?: unknown; msg?: unknown; details?: unknown };
    const msg = typeof e.msg === "string" ? e.msg : "";
    const details = typeof e.details === "string" && e.details !== "" ? `; ${e.details}` : "";
    return { code: typeof e.code === "number" ? e.code : 0, msg: `${msg}${details}` };
  } catch {
    return { code: 0, msg: stdout.trim().slice(0, 1000) };
  }
}

/** The line for one call. */
export function callLogLine(rec: CallRecord, config: Record<string, unknown> | undefined, now: Date): CallLogLine {
  const failed = rec.status !== 0;
  const err = failed ? errorOf(rec.stdout) : { code: 0, msg: "" };
  const name = config?.name;
  const trace: Partial<Record<(typeof TRACE_CONTEXT_ENV)[keyof typeof TRACE_CONTEXT_ENV], string>> = {};
  for (const [variable, key] of Object.entries(TRACE_CONTEXT_ENV)) {
    const value = rec.env[variable];
    if (value !== undefined && value !== "") trace[key] = value;
  }
  return {
    time: now.toISOString(),
    plugin: rec.plugin,
    command: rec.env.CNI_COMMAND ?? "",
    containerID: rec.env.CNI_CONTAINERID ?? "",
    ifName: rec.env.CNI_IFNAME ?? "",
    network: typeof name === "string" ? name : "",
    durationMs: Math.round(rec.durationMs * 1000) / 1000,
    outcome: failed ? "error" : "ok",
    code: err.code,
    msg: err.msg,
    ...trace,
  };
}

/**
 * Appends the call's line to its log file (O_APPEND, one write, created 0600). Never throws: a log
 * that cannot be written is reported on `stderr` only.
 */
export function appendCallLog(rec: CallRecord, stderr: (text: string) => void): void {
  let path: string | undefined;
  try {
    const config = parsedConfig(rec.stdin);
    path = callLogPath(config, rec.env);
    if (path === undefined) return;
    if (!isAbsolute(path)) throw new Error("the path must be absolute");
    const line = Buffer.from(`${JSON.stringify(callLogLine(rec, config, new Date()))}\n`, "utf8");
    const fd = openSync(path, "a", 0o600);
    try {
      let off = 0;
      while (off < line.length) off += writeSync(fd, line, off, line.length - off);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    try {
      stderr(`${rec.plugin}: call log ${JSON.stringify(path ?? "")} not written: ${err instanceof Error ? err.message : String(err)}\n`);
    } catch {
      // stderr is gone as well; the call's outcome stands
    }
  }
}
