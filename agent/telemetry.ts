/**
 * What the agent observes (docs/observability.md): its metrics (metrics.ts), served at
 * `--metrics-address` (metrics-server.ts); its span export (tracing.ts), configured by the
 * OpenTelemetry variables of its environment; and the report socket (report-socket.ts), through
 * which calls run standalone are counted and traced as well. All off unless the flag or the
 * environment asks (the calls then record nothing).
 */
import { DEFAULT_SAMPLER } from "../shared/telemetry/otlp/config.ts";
import type { CallReport } from "../shared/telemetry/report.ts";
import type { ServeFlags } from "./flags.ts";
import type { CallTelemetrySettings } from "./messages.ts";
import { AgentMetrics, type PoolFigures } from "./metrics.ts";
import { serveMetrics, type MetricsServer } from "./metrics-server.ts";
import type { CallOutcome } from "./pool.ts";
import type { Refusal } from "./refusal.ts";
import { ReportReceiver } from "./report-socket.ts";
import { AgentTracing } from "./tracing.ts";

type Env = Readonly<Record<string, string | undefined>>;

/** How many times the agent restarted itself (carried across execve in its environment). */
const RESTARTS_ENV = "CNI_PLUGINS_AGENT_RESTARTS";
/** At a stop or restart, the spans queued get this long to go out. */
const SPAN_FLUSH_LIMIT_MS = 1_000;

function restartsIn(env: Env): number {
  const n = Number(env[RESTARTS_ENV] ?? "0");
  return Number.isInteger(n) && n > 0 ? n : 0;
}

/** The environment of the agent's next image, after a restart: one more restart counted. */
export function countRestart(env: Record<string, string>): void {
  env[RESTARTS_ENV] = String(restartsIn(env) + 1);
}

export interface TelemetryDeps {
  flags: ServeFlags;
  env: Env;
  /** The pool's figures, read at each scrape. */
  pool: () => PoolFigures;
  /** Whether `name` is a plugin of this build (a standalone report naming another is refused). */
  isPlugin: (name: string) => boolean;
  log: (line: string) => void;
}

export class AgentTelemetry {
  readonly #deps: TelemetryDeps;
  /** Undefined when neither metrics nor spans are wanted. */
  readonly #metrics: AgentMetrics | undefined;
  readonly #tracing: AgentTracing | undefined;
  #server: MetricsServer | undefined;
  #reports: ReportReceiver | undefined;

  constructor(deps: TelemetryDeps) {
    this.#deps = deps;
    const metrics = new AgentMetrics(deps.pool, restartsIn(deps.env));
    this.#tracing = AgentTracing.fromEnv(deps.env, metrics, deps.log);
    this.#metrics = deps.flags.metricsAddress !== undefined || this.#tracing !== undefined ? metrics : undefined;
  }

  /**
   * How the worker threads' calls record their telemetry (spans only when they are exported);
   * undefined when the agent observes nothing: then a call records nothing and its delegates get
   * TRACEPARENT as it came, as in a plugin process with no agent to report to.
   */
  get callSettings(): CallTelemetrySettings | undefined {
    if (this.#metrics === undefined) return undefined;
    return { sampler: this.#tracing?.sampler ?? DEFAULT_SAMPLER, spans: this.#tracing !== undefined };
  }

  /** The dhcp daemon's events, when it runs in the agent and metrics are kept. */
  dhcpEvents(): ReturnType<AgentMetrics["dhcpEvents"]> | undefined {
    return this.#metrics?.dhcpEvents();
  }

  /** Opens the report socket and the metrics endpoint (a failure of either is logged: calls go on). */
  async start(): Promise<void> {
    const metrics = this.#metrics;
    if (metrics === undefined) return;
    const { flags, log } = this.#deps;
    await this.#openReports(metrics);
    if (flags.metricsAddress === undefined) return;
    try {
      this.#server = serveMetrics(flags.metricsAddress, metrics);
      log(`metrics on ${this.#server.url}`);
    } catch (err) {
      log(`no metrics endpoint: ${(err as Error).message}`);
    }
  }

  /** The report socket (its failure is logged: calls run standalone are then not counted). */
  async #openReports(metrics: AgentMetrics): Promise<void> {
    const { flags, log } = this.#deps;
    try {
      const receiver = await ReportReceiver.open(
        flags.socket,
        {
          report: (r) => {
            // Only plugins of this build: a sender cannot add label values of its own.
            if (!this.#deps.isPlugin(r.plugin)) {
              metrics.standaloneReport("invalid");
              return;
            }
            metrics.standaloneReport("accepted");
            this.#record(r);
          },
          invalid: (why) => {
            metrics.standaloneReport("invalid");
            if (flags.verbose) log(`report dropped: ${why}`);
          },
        },
        log,
      );
      this.#reports = receiver;
    } catch (err) {
      log(`calls run standalone will not be counted: the report socket: ${(err as Error).message}`);
    }
  }

  #record(r: CallReport): void {
    this.#metrics?.call(r);
    if (r.spans !== undefined) this.#tracing?.export(r.spans);
  }

  /**
   * A call the agent served. One whose thread died before it reported counts as what its caller
   * got: an internal error.
   */
  served(plugin: string, command: string, out: CallOutcome, seconds: number): void {
    if (this.#metrics === undefined) return;
    if (out.reports.length > 0) {
      for (const r of out.reports) this.#record(r);
      return;
    }
    this.#metrics.call({ plugin, command, code: out.status === 0 ? 0 : 999, durationS: seconds, phases: [], ipam: [] });
  }

  refused(r: Refusal): void {
    this.#metrics?.refused(r.reason);
  }

  /** An accepted call waited this long for its thread. */
  accepted(waitedSeconds: number): void {
    this.#metrics?.queueWait(waitedSeconds);
  }

  /** At a stop or restart: the report socket and the endpoint close, the spans queued get a moment to go out. */
  async stop(): Promise<void> {
    this.#reports?.close();
    this.#server?.stop();
    await this.#tracing?.close(SPAN_FLUSH_LIMIT_MS);
  }
}
