/**
 * The telemetry of a plugin call run as its own process (docs/observability.md, "Calls the agent
 * did not serve"): each invocation's report goes to the resident agent's report socket, which
 * counts it (and exports its spans) as it counts the calls it serves; a report nobody reads is
 * dropped at no cost to the call. When no agent reads it and the process's own environment
 * configures span export (OTEL_EXPORTER_OTLP_ENDPOINT...), the process exports its spans itself,
 * waiting at most EXIT_FLUSH_LIMIT_MS at exit for them: a collector slower than that loses them.
 *
 * Spans are recorded as the process's sampler says (OTEL_TRACES_SAMPLER; by default a call is
 * sampled unless its TRACEPARENT says it is not): the agent exports those it gets when it exports.
 */
import { DEFAULT_SOCKET } from "../agent/flags.ts";
import { sendCallReport } from "../agent/report-socket.ts";
import type { TelemetryHost } from "../shared/telemetry/call.ts";
import { DEFAULT_SAMPLER, exportConfigFrom, samplerFrom } from "../shared/telemetry/otlp/config.ts";
import type { BatchSpanExporter } from "../shared/telemetry/otlp/exporter.ts";
import { sampleDecision } from "../shared/telemetry/sample-decision.ts";

type Env = Readonly<Record<string, string | undefined>>;

/** The longest a plugin process waits at exit for its spans to reach the collector. */
const EXIT_FLUSH_LIMIT_MS = 5;

export interface StandaloneTelemetry {
  host: TelemetryHost;
  /** Before exit: the spans exported directly get EXIT_FLUSH_LIMIT_MS to go out. */
  flush(): Promise<void>;
}

export function standaloneTelemetry(env: Env): StandaloneTelemetry {
  const socket = env.CNI_PLUGINS_SOCKET || DEFAULT_SOCKET;
  let sampler = DEFAULT_SAMPLER;
  let exporter: BatchSpanExporter | undefined;
  try {
    sampler = samplerFrom(env);
    const config = exportConfigFrom(env);
    if (config !== undefined) {
      // Loaded only when this process exports: most plugin processes do not.
      const { BatchSpanExporter: Exporter } = require("../shared/telemetry/otlp/exporter.ts") as typeof import("../shared/telemetry/otlp/exporter.ts");
      exporter = new Exporter(config, { dropped: () => {} });
    }
  } catch {
    // A configuration the process cannot use: the agent's decides (its own is checked and logged).
  }
  return {
    host: {
      sample: sampleDecision(sampler),
      recordSpans: true,
      report: (r) => {
        // The agent takes the spans when it reads the socket (its export does not end with this
        // process); only when none does does the process export them itself.
        if (sendCallReport(socket, r) || exporter === undefined || r.spans === undefined) return;
        for (const s of r.spans) exporter.add(s);
      },
    },
    flush: async () => {
      if (exporter === undefined) return;
      await exporter.flush(EXIT_FLUSH_LIMIT_MS);
      exporter.close();
    },
  };
}
