/**
 * The telemetry of a plugin call run as its own process (docs/observability.md, "Calls the agent
 * did not serve"): each invocation's report goes to the resident agent's report socket, which
 * counts it (and exports its spans) as it counts the calls it serves. When no agent reads it and
 * the process's own environment configures span export (OTEL_EXPORTER_OTLP_ENDPOINT...), the
 * process exports its spans itself, waiting at most EXIT_FLUSH_LIMIT_MS at exit for them: a
 * collector slower than that loses them.
 *
 * A plugin process pays for this on every call, so it costs one stat when nothing takes it: then
 * the call records nothing and its delegates get TRACEPARENT as it came (no span of this call will
 * exist to be their parent), exactly as a call of an agent that observes nothing. The
 * OpenTelemetry configuration and exporter are loaded only when the environment names them; the
 * sampler is OTEL_TRACES_SAMPLER's (by default a call is sampled unless its TRACEPARENT says it is
 * not).
 */
import { DEFAULT_SOCKET, reportSocketPath } from "../agent/socket-paths.ts";
import { lstatIfExists } from "../shared/sys/file.ts";
import type { SampleDecision, TelemetryHost } from "../shared/telemetry/call.ts";
import type { BatchSpanExporter } from "../shared/telemetry/otlp/exporter.ts";
import type { CallReport } from "../shared/telemetry/report.ts";

type Env = Readonly<Record<string, string | undefined>>;

/** The longest a plugin process waits at exit for its spans to reach the collector. */
const EXIT_FLUSH_LIMIT_MS = 5;

/** parentbased_always_on, the default sampler, without loading the sampler module. */
const DEFAULT_DECISION: SampleDecision = (_traceId, parentSampled) => parentSampled ?? true;

export interface StandaloneTelemetry {
  /** Undefined when nothing takes the call's telemetry (no agent reads reports, no export configured). */
  host: TelemetryHost | undefined;
  /** Before exit: the spans exported directly get EXIT_FLUSH_LIMIT_MS to go out. */
  flush(): Promise<void>;
}

/** Sends `r` to the report socket at `path` (false when it is not sent); loaded only when an agent listens. */
function sendReport(path: string, r: CallReport): boolean {
  const { sendDatagram } = require("../shared/sys/datagram.ts") as typeof import("../shared/sys/datagram.ts");
  return sendDatagram(path, Buffer.from(JSON.stringify(r)));
}

/** The sampler the environment names (a configuration the process cannot use: the default). */
function decisionFrom(env: Env): SampleDecision {
  if (!env.OTEL_TRACES_SAMPLER) return DEFAULT_DECISION;
  try {
    const { samplerFrom } = require("../shared/telemetry/otlp/config.ts") as typeof import("../shared/telemetry/otlp/config.ts");
    const { sampleDecision } = require("../shared/telemetry/sample-decision.ts") as typeof import("../shared/telemetry/sample-decision.ts");
    return sampleDecision(samplerFrom(env));
  } catch {
    return DEFAULT_DECISION;
  }
}

/** The exporter the environment configures, or undefined (none, or one the process cannot use). */
function exporterFrom(env: Env): BatchSpanExporter | undefined {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  try {
    const { exportConfigFrom } = require("../shared/telemetry/otlp/config.ts") as typeof import("../shared/telemetry/otlp/config.ts");
    const config = exportConfigFrom(env);
    if (config === undefined) return undefined;
    const { BatchSpanExporter: Exporter } = require("../shared/telemetry/otlp/exporter.ts") as typeof import("../shared/telemetry/otlp/exporter.ts");
    return new Exporter(config, { dropped: () => {} });
  } catch {
    return undefined;
  }
}

export function standaloneTelemetry(env: Env): StandaloneTelemetry {
  const reports = reportSocketPath(env.CNI_PLUGINS_SOCKET || DEFAULT_SOCKET);
  let agentListens = false;
  try {
    agentListens = lstatIfExists(reports)?.isSocket() === true;
  } catch {
    // A path that cannot be examined: no agent to report to.
  }
  const exporter = agentListens ? undefined : exporterFrom(env);
  const observed = agentListens || exporter !== undefined;
  return {
    host: !observed
      ? undefined
      : {
          sample: decisionFrom(env),
          recordSpans: true,
          report: (r) => {
            // The agent takes the spans when it reads the socket (its export does not end with
            // this process); only when none does does the process export them itself.
            if (agentListens && sendReport(reports, r)) return;
            if (exporter !== undefined && r.spans !== undefined) for (const s of r.spans) exporter.add(s);
          },
        },
    flush: async () => {
      if (exporter === undefined) return;
      await exporter.flush(EXIT_FLUSH_LIMIT_MS);
      exporter.close();
    },
  };
}
