/** The messages between the agent's main thread (pool.ts) and its worker threads (worker.ts). */
import type { SamplerConfig } from "../shared/telemetry/otlp/config.ts";
import type { CallReport } from "../shared/telemetry/report.ts";

/**
 * How a call records its telemetry: the sampler that decides whether it is sampled (the flag its
 * delegates get in TRACEPARENT), and whether a sampled call records spans (the agent exports them).
 */
export interface CallTelemetrySettings {
  sampler: SamplerConfig;
  spans: boolean;
}

/** main → worker */
export type ToWorker =
  /**
   * Run one call of `plugin`, as its process started with `env` by `pid` would. `cells`: the
   * memory the thread shares with the pool about its calls, `releases` the one all threads share
   * (call-cells.ts; the same every time).
   */
  | {
      t: "run";
      id: number;
      plugin: string;
      env: Record<string, string>;
      pid: number;
      umask: number;
      cells: SharedArrayBuffer;
      releases: SharedArrayBuffer;
      /** Undefined: the call records nothing (the agent observes nothing). */
      telemetry: CallTelemetrySettings | undefined;
    }
  /** End the call now (its caller went away, or its time is up): `reason` as call-cells.ts's EndReason. */
  | { t: "end"; id: number; reason: number }
  /** The call's stdin, or why it cannot be had (`error`): sent once complete, whether the call reads it or not. */
  | { t: "stdin"; id: number; data: Uint8Array }
  | { t: "stdin-error"; id: number; error: StdinError };

/** worker → main */
export type FromWorker =
  /** Started, plugins loaded: ready for calls. */
  | { t: "ready" }
  /**
   * The call ended; `retire`: this worker saw an uncaught error and should not serve again.
   * `reports`: its invocations' telemetry (the call's, then those of its in-process delegates).
   */
  | { t: "done"; id: number; stdout: string; stderr: string; status: number; retire: boolean; reports: CallReport[] };

/** Why stdin could not be read: the caller's read(2) failed (`errno`), or it was too large. */
export type StdinError = { errno: number } | { message: string };
