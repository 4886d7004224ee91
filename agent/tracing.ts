/**
 * The agent's span export (docs/observability.md, "Traces"): configured by the standard
 * OpenTelemetry variables of the agent's environment (its unit, the DaemonSet), off unless they
 * name an endpoint. The spans of the calls the agent serves and of those standalone processes
 * report go to one batching exporter (shared/telemetry/otlp), which never makes a call wait: a
 * slow, absent or refusing collector costs dropped spans, counted by the metrics.
 */
import { ConfigError, exportConfigFrom, type SamplerConfig, type TraceExportConfig } from "../shared/telemetry/otlp/config.ts";
import { BatchSpanExporter } from "../shared/telemetry/otlp/exporter.ts";
import type { SpanData } from "../shared/telemetry/span.ts";
import type { AgentMetrics } from "./metrics.ts";

type Env = Readonly<Record<string, string | undefined>>;

export class AgentTracing {
  readonly #exporter: BatchSpanExporter;
  readonly #config: TraceExportConfig;

  private constructor(config: TraceExportConfig, metrics: AgentMetrics, log: (line: string) => void) {
    this.#config = config;
    this.#exporter = new BatchSpanExporter(config, {
      dropped: (n, reason) => metrics.spansDropped(n, reason),
      exported: (n) => metrics.spansExported(n),
      log: (line) => log(`span export: ${line}`),
    });
  }

  /** The export `env` configures, or undefined when it configures none (a configuration error is logged, and export stays off). */
  static fromEnv(env: Env, metrics: AgentMetrics, log: (line: string) => void): AgentTracing | undefined {
    let config: TraceExportConfig | undefined;
    try {
      config = exportConfigFrom(env);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      log(`span export off: ${err.message}`);
      return undefined;
    }
    if (config === undefined) return undefined;
    log(`exporting spans to ${config.endpoint} (${config.protocol}, sampler ${config.sampler.name})`);
    return new AgentTracing(config, metrics, log);
  }

  /** What decides whether a call's span is recorded (the worker threads apply it). */
  get sampler(): SamplerConfig {
    return this.#config.sampler;
  }

  /** Queues a call's spans; never waits. */
  export(spans: readonly SpanData[]): void {
    for (const s of spans) this.#exporter.add(s);
  }

  /** At a stop or restart: what is queued gets `limitMs` to go out. */
  async close(limitMs: number): Promise<void> {
    await this.#exporter.flush(limitMs);
    this.#exporter.close();
  }
}
