/**
 * The trace export settings, read from the standard OpenTelemetry environment variables of an
 * environment record (never from process.env: the caller passes the environment it serves).
 *
 * Export is off (`undefined`) unless an OTLP endpoint is named, and off again when the SDK is
 * disabled or the traces exporter is "none". A value this module cannot honour (gRPC, an unknown
 * sampler, a malformed list or number) is a ConfigError naming the variable; the caller logs it and
 * runs without export. An empty variable counts as unset, as the specification asks.
 */
import type { AttributeValue } from "../span.ts";

/** The wire encodings of OTLP over HTTP this exporter speaks. */
export type OtlpProtocol = "http/protobuf" | "http/json";

/** The samplers OTEL_TRACES_SAMPLER may name. */
export type SamplerName =
  | "always_on"
  | "always_off"
  | "traceidratio"
  | "parentbased_always_on"
  | "parentbased_always_off"
  | "parentbased_traceidratio";

export interface SamplerConfig {
  name: SamplerName;
  /** The sampling probability of the traceidratio samplers, in [0, 1] (1 for the others). */
  ratio: number;
}

export interface TraceExportConfig {
  /** The full URL spans are POSTed to. */
  endpoint: string;
  protocol: OtlpProtocol;
  /** Extra HTTP headers for every export request (authentication, tenant). */
  headers: Readonly<Record<string, string>>;
  /** Upper bound of one export request, milliseconds. */
  timeoutMs: number;
  /** The resource every span belongs to; always has service.name. */
  resource: Readonly<Record<string, AttributeValue>>;
  sampler: SamplerConfig;
  /** Spans waiting for export at most; more are dropped. */
  maxQueueSize: number;
  /** How long a span waits for its batch to fill before the batch is sent, milliseconds. */
  scheduleDelayMs: number;
  /** Spans per export request at most (never more than maxQueueSize). */
  maxExportBatchSize: number;
}

/** An environment as a record of variables, as CmdArgs or a process hands it over. */
export type EnvRecord = Readonly<Record<string, string | undefined>>;

/** A variable holds a value this module cannot use. The message names the variable, never a header value. */
export class ConfigError extends Error {
  readonly variable: string;

  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = "ConfigError";
    this.variable = variable;
  }
}

export const DEFAULT_SERVICE_NAME = "cni-plugins";
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_QUEUE_SIZE = 2048;
/**
 * Shorter than the specification's 1000 ms: the resident agent's spans reach the collector within
 * half a second, and a batch of a busy node fills long before (a full batch leaves at once anyway).
 */
export const DEFAULT_SCHEDULE_DELAY_MS = 500;
export const DEFAULT_MAX_EXPORT_BATCH_SIZE = 512;

const SAMPLER_NAMES: readonly SamplerName[] = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
];

/** An HTTP header name (an RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The export settings `env` asks for, or undefined when trace export is off. Throws ConfigError. */
export function exportConfigFrom(env: EnvRecord): TraceExportConfig | undefined {
  if (variable(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return undefined;
  if (!otlpExporterSelected(env)) return undefined;
  const endpoint = endpointFrom(env);
  if (endpoint === undefined) return undefined;

  const maxQueueSize = positiveInteger(env, "OTEL_BSP_MAX_QUEUE_SIZE", DEFAULT_MAX_QUEUE_SIZE);
  return {
    endpoint,
    protocol: protocolFrom(env),
    headers: { ...headerList(env, "OTEL_EXPORTER_OTLP_HEADERS"), ...headerList(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS") },
    timeoutMs: variable(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") !== undefined
      ? positiveInteger(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", DEFAULT_TIMEOUT_MS)
      : positiveInteger(env, "OTEL_EXPORTER_OTLP_TIMEOUT", DEFAULT_TIMEOUT_MS),
    resource: resourceFrom(env),
    sampler: samplerFrom(env),
    maxQueueSize,
    scheduleDelayMs: positiveInteger(env, "OTEL_BSP_SCHEDULE_DELAY", DEFAULT_SCHEDULE_DELAY_MS),
    maxExportBatchSize: Math.min(maxQueueSize, positiveInteger(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", DEFAULT_MAX_EXPORT_BATCH_SIZE)),
  };
}

/** The trimmed value of `name`, undefined when unset or empty. */
function variable(env: EnvRecord, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

/** False when OTEL_TRACES_EXPORTER says "none"; the default exporter is otlp. */
function otlpExporterSelected(env: EnvRecord): boolean {
  const value = variable(env, "OTEL_TRACES_EXPORTER");
  if (value === undefined) return true;
  const names = value.split(",").map((n) => n.trim().toLowerCase());
  if (names.includes("none")) return false;
  if (names.includes("otlp")) return true;
  throw new ConfigError("OTEL_TRACES_EXPORTER", `only "otlp" or "none" is supported, not ${JSON.stringify(value)}`);
}

/** The traces URL: the traces-specific variable as it is, else the base endpoint plus v1/traces. */
function endpointFrom(env: EnvRecord): string | undefined {
  const specific = variable(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  if (specific !== undefined) return httpUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", specific);
  const base = variable(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  if (base === undefined) return undefined;
  return httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT", `${base.replace(/\/+$/, "")}/v1/traces`);
}

function httpUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, "not a URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ConfigError(name, `scheme ${url.protocol} is not http: or https:`);
  return value;
}

function protocolFrom(env: EnvRecord): OtlpProtocol {
  const name = variable(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const value = variable(env, name);
  if (value === undefined || value === "http/protobuf") return "http/protobuf";
  if (value === "http/json") return "http/json";
  throw new ConfigError(name, `protocol ${JSON.stringify(value)} is not supported (only http/protobuf and http/json)`);
}

/** A `k=v,k2=v2` list (keys and values percent-decoded, trimmed); empty members are skipped. */
function keyValueList(env: EnvRecord, name: string): Array<[string, string]> {
  const value = variable(env, name);
  if (value === undefined) return [];
  const pairs: Array<[string, string]> = [];
  value.split(",").forEach((member, index) => {
    if (member.trim() === "") return;
    const eq = member.indexOf("=");
    if (eq <= 0) throw new ConfigError(name, `member ${index + 1} is not key=value`);
    const key = percentDecoded(name, index, member.slice(0, eq)).trim();
    if (key === "") throw new ConfigError(name, `member ${index + 1} has an empty key`);
    pairs.push([key, percentDecoded(name, index, member.slice(eq + 1)).trim()]);
  });
  return pairs;
}

function percentDecoded(name: string, index: number, text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new ConfigError(name, `member ${index + 1} is not valid percent-encoding`);
  }
}

function headerList(env: EnvRecord, name: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of keyValueList(env, name)) {
    if (!HEADER_NAME.test(key)) throw new ConfigError(name, `${JSON.stringify(key)} is not an HTTP header name`);
    if (/[\r\n\0]/.test(value)) throw new ConfigError(name, `the value of header ${key} has a line break or NUL`);
    headers[key.toLowerCase()] = value;
  }
  return headers;
}

/** OTEL_RESOURCE_ATTRIBUTES, with service.name from OTEL_SERVICE_NAME (which wins), else the default. */
function resourceFrom(env: EnvRecord): Record<string, AttributeValue> {
  const resource: Record<string, AttributeValue> = { "service.name": DEFAULT_SERVICE_NAME };
  for (const [key, value] of keyValueList(env, "OTEL_RESOURCE_ATTRIBUTES")) resource[key] = value;
  const serviceName = variable(env, "OTEL_SERVICE_NAME");
  if (serviceName !== undefined) resource["service.name"] = serviceName;
  return resource;
}

/** The sampler when OTEL_TRACES_SAMPLER names none: a call is sampled unless its parent is not. */
export const DEFAULT_SAMPLER: SamplerConfig = { name: "parentbased_always_on", ratio: 1 };

/** The sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name (default {@link DEFAULT_SAMPLER}); throws ConfigError. */
export function samplerFrom(env: EnvRecord): SamplerConfig {
  const value = variable(env, "OTEL_TRACES_SAMPLER")?.toLowerCase() ?? DEFAULT_SAMPLER.name;
  const name = SAMPLER_NAMES.find((n) => n === value);
  if (name === undefined) throw new ConfigError("OTEL_TRACES_SAMPLER", `unknown sampler ${JSON.stringify(value)} (one of ${SAMPLER_NAMES.join(", ")})`);
  if (name !== "traceidratio" && name !== "parentbased_traceidratio") return { name, ratio: 1 };
  const arg = variable(env, "OTEL_TRACES_SAMPLER_ARG");
  if (arg === undefined) return { name, ratio: 1 };
  const ratio = Number(arg);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new ConfigError("OTEL_TRACES_SAMPLER_ARG", `${JSON.stringify(arg)} is not a probability in [0, 1]`);
  return { name, ratio };
}

function positiveInteger(env: EnvRecord, name: string, fallback: number): number {
  const value = variable(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) throw new ConfigError(name, `${JSON.stringify(value)} is not a positive whole number`);
  return Number(value);
}
