/**
 * skel: one CNI invocation from environment and stdin to stdout and exit status (upstream cni v1.3.0
 * `pkg/skel`), with two deliberate improvements:
 * - the "CNI_NETNS is the plugin's own netns" guard (code 8) runs BEFORE the handler, for ADD, CHECK
 *   and DEL, so a mistaken runtime never gets the host's interfaces rewired (upstream checks after
 *   ADD/DEL have already done their work);
 * - results and errors are written synchronously and completely before the exit status is returned;
 * - an error carries `cniVersion` (SPEC.md "Error": cniVersion, code, msg, details): the config's
 *   version when the plugin supports it, else the newest one it does ({@link errorVersion}). Go 1.1.1
 *   omits the key.
 *
 * Handlers return data; skel converts a Result to the config's cniVersion and prints it.
 */
import {
  CniError,
  DecodingError,
  IncompatibleVersionError,
  InvalidConfigError,
  InvalidEnvError,
  InvalidNetnsError,
  toErrorJson,
  type ErrorJson,
} from "./errors.ts";
import { stat } from "../sys/file.ts";
import { CALL_LOG_ENV, CALL_LOG_KEY } from "./call-log-switch.ts";
import { PROCESS_SCOPE } from "./call-scope.ts";
import { withDelegate } from "./delegate.ts";
import { mark } from "../sys/phases.ts";
import type { TelemetryHost } from "../telemetry/call.ts";
import { describeCall, phaseEnd, phaseStart } from "../telemetry/invocation.ts";
import { ID_PATTERN, readCniEnv, type CniEnv } from "./env.ts";
import { goJsonMarshalIndent } from "./result/go-json.ts";
import { PRINT_AS_IS, type CmdArgs, type Command, type InProcessPlugins, type PluginIO, type PluginSpec, type SpecLookup } from "./types.ts";
import { goQuoteList, versionGte, versionText } from "./version.ts";

/** `CNI <plugin> plugin <build>` + the supported versions, as upstream prints with no CNI_COMMAND. */
export function aboutText(spec: PluginSpec, buildVersion: string): string {
  return `CNI ${spec.name} plugin ${buildVersion}\nCNI protocol versions supported: ${spec.versions.join(", ")}\n`;
}

/** Formats an error as upstream prints it (4-space JSON, no newline), `cniVersion` first as in SPEC.md. */
export function formatError(err: ErrorJson, cniVersion: string): string {
  return goJsonMarshalIndent({ cniVersion, ...err });
}

/**
 * The `cniVersion` of an error reply: the request's (`requested`, undefined when the config could not
 * be read that far) when the plugin supports it, else the newest version the plugin supports.
 */
function errorVersion(spec: PluginSpec, requested: string | undefined): string {
  if (requested !== undefined && spec.versions.includes(requested)) return requested;
  return spec.versions.reduce((newest, v) => (versionGte(v, newest) ? v : newest));
}

/** Go's decoder refuses JSON nested deeper than this. */
const MAX_JSON_DEPTH = 10000;

/** Throws when arrays/objects nest deeper than Go's decoder allows (strings are skipped). */
function checkJsonDepth(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) throw new SyntaxError("exceeded max depth");
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
}

/** Parses stdin as upstream's first decode does: a JSON object with a valid `name`. */
export function parseNetworkConfig(stdin: Uint8Array): Record<string, unknown> {
  const text = Buffer.from(stdin).toString("utf8");
  let value: unknown;
  try {
    if (text.trim() === "") undefinedJson();
    checkJsonDepth(text);
    value = JSON.parse(text);
  } catch (err) {
    const why = err instanceof RangeError ? "exceeded max depth" : (err as Error).message;
    throw new DecodingError(`error unmarshall network config: ${why}`, { cause: err });
  }
  if (value === null) value = {};
  if (typeof value !== "object" || Array.isArray(value)) {
    const kind = Array.isArray(value) ? "array" : typeof value === "boolean" ? "bool" : typeof value;
    throw new DecodingError(
      `error unmarshall network config: json: cannot unmarshal ${kind} into Go value of type types.NetConf`,
    );
  }
  const conf = value as Record<string, unknown>;
  const name = lookup(conf, "name");
  if (name !== undefined && name !== null && typeof name !== "string") {
    throw new DecodingError(
      `error unmarshall network config: json: cannot unmarshal ${jsonKind(name)} into Go struct field NetConf.name of type string`,
    );
  }
  if (name === undefined || name === null || name === "") throw new InvalidConfigError("missing network name");
  if (!ID_PATTERN.test(name)) throw new InvalidConfigError("invalid characters found in network name", { details: name });
  return conf;
}

function undefinedJson(): never {
  throw new SyntaxError("unexpected end of JSON input");
}

function jsonKind(v: unknown): string {
  if (Array.isArray(v)) return "array";
  if (typeof v === "boolean") return "bool";
  return typeof v;
}

/** Go's case-insensitive field lookup (exact match first). */
function lookup(obj: Record<string, unknown>, key: string): unknown {
  if (Object.hasOwn(obj, key)) return obj[key];
  let found: unknown;
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase() === key) found = v;
  return found;
}

/** The config's cniVersion ("" when absent); a non-string is a decode error. */
export function configVersionOf(conf: Record<string, unknown>): string {
  const v = lookup(conf, "cniversion");
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") {
    throw new DecodingError(
      `error unmarshall network config: json: cannot unmarshal ${jsonKind(v)} into Go struct field NetConf.cniVersion of type string`,
    );
  }
  return v;
}

/** Exact-match reconcile of the config version against the plugin's list (code 1 with details). */
function requireSupported(spec: PluginSpec, version: string): void {
  if (!spec.versions.includes(version)) {
    throw new IncompatibleVersionError("incompatible CNI versions", {
      details: `config is ${JSON.stringify(version)}, plugin supports ${goQuoteList(spec.versions)}`,
    });
  }
}

/** The threshold gate for CHECK (0.4.0) and STATUS/GC (1.1.0), with upstream's messages. */
function requireAtLeast(spec: PluginSpec, version: string, min: string, verb: string): void {
  if (!versionGte(version, min)) throw new IncompatibleVersionError(`config version does not allow ${verb}`);
  const pluginCan = spec.versions.some((v) => versionGte(v, version));
  if (!pluginCan) throw new IncompatibleVersionError(`plugin version does not allow ${verb}`);
  requireSupported(spec, version);
}

function isTrue(s: string): boolean {
  return s === "1" || s.toLowerCase() === "true";
}

/**
 * Rejects CNI_NETNS naming the plugin's own network namespace (code 8), unless
 * CNI_NETNS_OVERRIDE is set. A path that cannot be examined passes: the handler reports it.
 */
export function guardOwnNetns(env: CniEnv): void {
  if (env.netns === "" || isTrue(env.netnsOverride)) return;
  let target;
  let own;
  try {
    target = stat(env.netns);
    own = stat("/proc/thread-self/ns/net");
  } catch {
    return;
  }
  if (target.dev === own.dev && target.ino === own.ino) {
    throw new InvalidNetnsError("plugin's netns and netns from CNI_NETNS should not be the same");
  }
}

const CALL_LOG_KEY_BYTES = Buffer.from(JSON.stringify(CALL_LOG_KEY));

/** Records a phase mark (shared/sys/phases.ts): the outermost invocation's, a delegate's none. */
type PhaseMark = (label: string) => void;
const noMark: PhaseMark = () => {};

export interface RunOptions {
  /** The build's version, for the about text ("version unknown" when not given). */
  buildVersion?: string;
  /**
   * The plugins of this build (registry/registry.ts runPluginCall gives `lookupPlugin`): the invocation's
   * delegate runs one of them in-process when the file CNI_PATH finds for it is this build, and
   * gives it the same plugins to delegate to. Without them (tests, the operator) every delegate is
   * executed.
   */
  plugins?: SpecLookup;
  /** This is a delegate running in-process inside another invocation (its phases are not marked). */
  delegated?: boolean;
  /**
   * Where the invocation's metrics and spans go (shared/telemetry/call.ts): the agent's thread or
   * the plugin process; its in-process delegates report there too. Without it nothing is recorded.
   */
  telemetry?: TelemetryHost;
}

/**
 * Runs one invocation of `spec`. Returns the exit status: 0 on success, 1 after printing a CNI
 * error. When the per-call log is on (an environment variable, or the key in the config bytes: both
 * cheap checks), one line is appended afterwards by ./call-log.ts, loaded only then.
 */
export async function runPlugin(spec: PluginSpec, io: PluginIO, opts: RunOptions = {}): Promise<number> {
  const buildVersion = opts.buildVersion ?? "version unknown";
  const lookup = opts.plugins;
  const telemetry = opts.telemetry;
  const inProcess: InProcessPlugins | undefined =
    lookup === undefined
      ? undefined
      : {
          lookup,
          run: (delegate, delegateIo) =>
            runPlugin(delegate, delegateIo, { buildVersion, plugins: lookup, delegated: true, ...(telemetry === undefined ? {} : { telemetry }) }),
        };
  const started = performance.now();
  let stdin: Uint8Array | undefined;
  let stdout = "";
  const once = () =>
    runPluginOnce(
      spec,
      {
        env: io.env,
        readStdin: async () => (stdin = await io.readStdin()),
        stdout: (text) => {
          stdout += text;
          io.stdout(text);
        },
        stderr: io.stderr,
        ...(io.scope === undefined ? {} : { scope: io.scope }),
      },
      buildVersion,
      inProcess,
      opts.delegated === true ? noMark : mark,
    );
  // Loaded only when something takes the call's telemetry: a plugin process nothing observes never loads it.
  const call =
    telemetry === undefined ? undefined : new (require("../telemetry/call.ts") as typeof import("../telemetry/call.ts")).CallTelemetry(spec.name, io.env, telemetry);
  const status = call === undefined ? await once() : await call.run(once);
  if (call !== undefined && telemetry?.report !== undefined) {
    try {
      telemetry.report(call.finish(status, stdout));
    } catch {
      // Telemetry never changes a call's outcome.
    }
  }
  const keyed = stdin !== undefined && Buffer.from(stdin.buffer, stdin.byteOffset, stdin.byteLength).includes(CALL_LOG_KEY_BYTES);
  if (keyed || (io.env[CALL_LOG_ENV] ?? "") !== "") {
    const log = require("./call-log.ts") as typeof import("./call-log.ts");
    log.appendCallLog({ plugin: spec.name, env: io.env, stdin, stdout, status, durationMs: performance.now() - started }, io.stderr);
  }
  return status;
}

async function runPluginOnce(
  spec: PluginSpec,
  io: PluginIO,
  buildVersion: string,
  inProcess: InProcessPlugins | undefined,
  markPhase: PhaseMark,
): Promise<number> {
  let env: CniEnv;
  try {
    env = readCniEnv(io.env);
  } catch (err) {
    if ((io.env.CNI_COMMAND ?? "") === "") {
      io.stderr(aboutText(spec, buildVersion));
      return 0;
    }
    io.stdout(formatError(toErrorJson(err), errorVersion(spec, undefined)));
    return 1;
  }
  if (env.command === "VERSION") {
    io.stdout(versionText(spec.versions));
    return 0;
  }
  const request: Request = {};
  try {
    const result = await dispatch(spec, io, env, request, inProcess, markPhase);
    if (result !== undefined) io.stdout(result);
    return 0;
  } catch (err) {
    io.stdout(formatError(toErrorJson(err), errorVersion(spec, request.cniVersion)));
    return 1;
  }
}

/** What {@link dispatch} learnt of the request before it failed. */
interface Request {
  /** The config's cniVersion ("" read as 0.1.0), once stdin has been decoded that far. */
  cniVersion?: string;
}

async function dispatch(
  spec: PluginSpec,
  io: PluginIO,
  env: CniEnv,
  request: Request,
  inProcess: InProcessPlugins | undefined,
  markPhase: PhaseMark,
): Promise<string | undefined> {
  let stdinData: Uint8Array;
  try {
    stdinData = await io.readStdin();
  } catch (err) {
    throw new CniError(5, `error reading from stdin: ${(err as Error).message}`, { cause: err });
  }
  markPhase("stdin read");
  const parsing = phaseStart();
  let config: Record<string, unknown>;
  let rawVersion: string;
  try {
    config = parseNetworkConfig(stdinData);
    rawVersion = configVersionOf(config);
  } finally {
    phaseEnd("config", parsing);
  }
  markPhase("config parsed");
  const version = rawVersion === "" ? "0.1.0" : rawVersion;
  request.cniVersion = version;
  describeCall(String(lookup(config, "name") ?? ""), version);
  const args = (command: Command): CmdArgs =>
    withDelegate(
      {
        command,
        containerID: env.containerID,
        netns: env.netns,
        ifName: env.ifName,
        args: env.args,
        path: env.path,
        stdinData,
        config,
        cniVersion: version,
        env: io.env,
        stderr: io.stderr,
        scope: io.scope ?? PROCESS_SCOPE,
      },
      inProcess,
    );
  switch (env.command) {
    case "ADD": {
      requireSupported(spec, version);
      guardOwnNetns(env);
      const result = await spec.add(args("ADD"));
      markPhase("handler done");
      // Loaded only when there is a result to print (start-up cost of the converters).
      const printer = require("./result/format.ts") as typeof import("./result/format.ts");
      const text =
        result[PRINT_AS_IS] && rawVersion !== ""
          ? printer.formatResultRelabelled(result, rawVersion)
          : printer.formatResult(result, rawVersion);
      markPhase("result formatted");
      return text;
    }
    case "DEL":
      requireSupported(spec, version);
      guardOwnNetns(env);
      await spec.del(args("DEL"));
      markPhase("handler done");
      return undefined;
    case "CHECK":
      requireAtLeast(spec, version, "0.4.0", "CHECK");
      guardOwnNetns(env);
      await spec.check?.(args("CHECK"));
      return undefined;
    case "STATUS":
      requireAtLeast(spec, version, "1.1.0", "STATUS");
      await spec.status?.(args("STATUS"));
      return undefined;
    case "GC":
      requireAtLeast(spec, version, "1.1.0", "GC");
      await spec.gc?.(args("GC"));
      return undefined;
    default:
      throw new InvalidEnvError(`unknown CNI_COMMAND: ${env.command}`);
  }
}
