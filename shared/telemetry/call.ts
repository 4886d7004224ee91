/**
 * What one plugin invocation records about itself for metrics and traces (docs/observability.md):
 * the time of each phase it meets (marked through invocation.ts), the address usage an allocating
 * IPAM plugin reports, its span and its phases' spans; and, when it ends, its report (report.ts).
 */
import { PHASES, runInvocation, type InvocationRecorder, type IpamUsage, type Phase } from "./invocation.ts";
import type { CallReport } from "./report.ts";
import { SPAN_KIND_INTERNAL, SPAN_KIND_SERVER, STATUS_CODE_ERROR, STATUS_CODE_UNSET, type SpanData } from "./span.ts";
import { formatTraceParent, newSpanId, newTraceId, parseTraceParent } from "./trace-context.ts";

/** Decides whether a new span is sampled (OTEL_TRACES_SAMPLER): from its trace id and its parent's flag (undefined: a root). */
export type SampleDecision = (traceId: string, parentSampled: boolean | undefined) => boolean;

/** What the host of an invocation (a plugin process, an agent thread) does with its telemetry. */
export interface TelemetryHost {
  /** Whether a call is sampled: its spans recorded (when `recordSpans`), and the flag its delegates get. */
  sample: SampleDecision;
  /** Whether sampled calls record their spans (someone may export them). */
  recordSpans: boolean;
  /** Takes a finished invocation's report; never throws, never waits. Undefined: nobody takes it (none is made). */
  report: ((r: CallReport) => void) | undefined;
}

const KNOWN_COMMANDS = new Set(["ADD", "DEL", "CHECK", "STATUS", "GC", "VERSION"]);

/** A phase marked inside another (counted as part of the outer one). */
const NESTED = -2;
/** The most phase spans one invocation records (its phase times are kept whatever their number). */
const MAX_PHASE_SPANS = 64;


/** An invocation's place in its trace. */
interface TraceContext {
  traceId: string;
  /** The runtime's (or the calling plugin's) span; "" for a root. */
  parentSpanId: string;
  spanId: string;
  sampled: boolean;
}

interface PhaseRun {
  phase: Phase;
  start: number;
  end: number;
  operations: number;
}

/** A performance.now() reading as milliseconds since the Unix epoch. */
function epochMs(now: number): number {
  return performance.timeOrigin + now;
}

export class CallTelemetry implements InvocationRecorder {
  readonly #plugin: string;
  readonly #env: Readonly<Record<string, string | undefined>>;
  readonly #host: Pick<TelemetryHost, "sample" | "recordSpans">;
  readonly #started = performance.now();
  /** Worked out when first needed (a delegate's TRACEPARENT, or the spans): most calls need neither. */
  #context: TraceContext | undefined;
  #depth = 0;
  readonly #totals = new Map<Phase, number>();
  readonly #runs: PhaseRun[] = [];
  readonly #ipam: IpamUsage[] = [];
  #network = "";
  #cniVersion = "";

  constructor(plugin: string, env: Readonly<Record<string, string | undefined>>, host: Pick<TelemetryHost, "sample" | "recordSpans">) {
    this.#plugin = plugin;
    this.#env = env;
    this.#host = host;
  }

  /** This invocation's place in its trace: the runtime's TRACEPARENT continued, or a trace of its own. */
  #trace(): TraceContext {
    if (this.#context !== undefined) return this.#context;
    const parent = parseTraceParent(this.#env.TRACEPARENT);
    const traceId = parent?.traceId ?? newTraceId();
    this.#context = { traceId, parentSpanId: parent?.spanId ?? "", spanId: newSpanId(), sampled: this.#host.sample(traceId, parent?.sampled) };
    return this.#context;
  }

  /** Runs `fn` as this invocation: the phases marked meanwhile are its own. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return runInvocation(this, fn);
  }

  /** What the config said, once read. */
  describe(network: string, cniVersion: string): void {
    this.#network = network;
    this.#cniVersion = cniVersion;
  }

  /** The `traceparent` of this invocation's span, for the plugins it delegates to. */
  get traceParent(): string {
    const t = this.#trace();
    return formatTraceParent(t.traceId, t.spanId, t.sampled);
  }

  open(): number {
    return this.#depth++ === 0 ? performance.now() : NESTED;
  }

  close(phase: Phase, start: number): void {
    this.#depth--;
    if (start === NESTED) return;
    const end = performance.now();
    this.#totals.set(phase, (this.#totals.get(phase) ?? 0) + (end - start));
    const last = this.#runs[this.#runs.length - 1];
    if (last !== undefined && last.phase === phase) {
      last.end = end;
      last.operations++;
    } else if (this.#runs.length < MAX_PHASE_SPANS) {
      this.#runs.push({ phase, start, end, operations: 1 });
    }
  }

  ipamUsage(u: IpamUsage): void {
    const at = this.#ipam.findIndex((x) => x.network === u.network && x.range === u.range && x.plugin === u.plugin);
    if (at >= 0) this.#ipam[at] = u;
    else this.#ipam.push(u);
  }

  /** The report of the finished invocation: exit `status`, and what it printed on stdout. */
  finish(status: number, stdout: string): CallReport {
    const end = performance.now();
    const given = this.#env.CNI_COMMAND ?? "";
    // A label value from the caller is bounded: a command no plugin knows is "other".
    const command = KNOWN_COMMANDS.has(given) ? given : "other";
    const error = status === 0 ? undefined : errorOf(stdout);
    const code = error?.code ?? 0;
    const report: CallReport = {
      plugin: this.#plugin,
      command,
      code,
      durationS: (end - this.#started) / 1000,
      phases: PHASES.flatMap((p): [Phase, number][] => {
        const ms = this.#totals.get(p);
        return ms === undefined ? [] : [[p, ms / 1000]];
      }),
      ipam: this.#ipam,
    };
    if (this.#host.recordSpans && this.#trace().sampled) report.spans = this.#spans(this.#trace(), command, code, error?.msg ?? "", end);
    return report;
  }

  #spans(t: TraceContext, command: string, code: number, msg: string, end: number): SpanData[] {
    const base = { traceId: t.traceId, traceState: this.#env.TRACESTATE ?? "" };
    const call: SpanData = {
      ...base,
      spanId: t.spanId,
      parentSpanId: t.parentSpanId,
      name: `cni.${command} ${this.#plugin}`,
      kind: SPAN_KIND_SERVER,
      startMs: epochMs(this.#started),
      endMs: epochMs(end),
      attributes: {
        "cni.plugin": this.#plugin,
        "cni.command": command,
        "cni.network": this.#network,
        "cni.ifname": this.#env.CNI_IFNAME ?? "",
        "cni.container_id": this.#env.CNI_CONTAINERID ?? "",
        "cni.version": this.#cniVersion,
        "cni.code": code,
      },
      status: code === 0 ? { code: STATUS_CODE_UNSET, message: "" } : { code: STATUS_CODE_ERROR, message: msg },
    };
    const phases = this.#runs.map(
      (r): SpanData => ({
        ...base,
        spanId: newSpanId(),
        parentSpanId: t.spanId,
        name: r.phase,
        kind: SPAN_KIND_INTERNAL,
        startMs: epochMs(r.start),
        endMs: epochMs(r.end),
        attributes: { "cni.phase": r.phase, "cni.phase.operations": r.operations },
        status: { code: STATUS_CODE_UNSET, message: "" },
      }),
    );
    return [call, ...phases];
  }
}

/** The code and message of the error JSON a failed call printed (999 when it printed none). */
function errorOf(stdout: string): { code: number; msg: string } {
  try {
    const e = JSON.parse(stdout) as { code?: unknown; msg?: unknown };
    const code = typeof e.code === "number" && Number.isInteger(e.code) && e.code >= 0 && e.code <= 999 ? e.code : 999;
    return { code, msg: typeof e.msg === "string" ? e.msg : "" };
  } catch {
    return { code: 999, msg: "" };
  }
}
