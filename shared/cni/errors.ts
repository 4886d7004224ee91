/**
 * CNI error classes and their codes (SPEC.md "Error"; upstream libcni constants), and the ONE place
 * that decides which code a runtime sees: {@link toErrorJson}.
 *
 * Plugins throw these classes for their own decisions (a bad field is an InvalidConfigError, …).
 * Lower layers throw plain errors (SyscallError, NetlinkError, CommandError, …) and context is added
 * on the way up with `annotate` / `annotateError` (shared/error/annotate.ts). The code is then the
 * one of the first CniError in the cause chain; a chain without one is 999 (upstream's
 * `ErrInternal`). The message is always the outermost one, so the context reads first.
 */
import { causeChain, messageOf } from "../error/annotate.ts";

export { messageOf } from "../error/annotate.ts";

export const CNI_ERROR_CODES = {
  IncompatibleCNIVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnvironmentVariables: 4,
  IOFailure: 5,
  DecodingFailure: 6,
  InvalidNetworkConfig: 7,
  InvalidNetNS: 8,
  TryAgainLater: 11,
  PluginNotAvailable: 50,
  LimitedConnectivity: 51,
  Internal: 999,
} as const;

export interface CniErrorOptions {
  details?: string | undefined;
  cause?: unknown;
}

/** Base class: an error with a CNI code, a message and optional details. */
export class CniError extends Error {
  override name = "CniError";
  readonly code: number;
  readonly details: string | undefined;
  constructor(code: number, msg: string, opts: CniErrorOptions = {}) {
    super(msg, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.details = opts.details;
  }
}

/** 1: version negotiation failed, or CHECK/STATUS/GC not allowed by the config's version. */
export class IncompatibleVersionError extends CniError {
  override name = "IncompatibleVersionError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.IncompatibleCNIVersion, msg, opts);
  }
}

/** 2: a config key or value this plugin does not support. */
export class UnsupportedFieldError extends CniError {
  override name = "UnsupportedFieldError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.UnsupportedField, msg, opts);
  }
}

/** 3: the container is unknown. */
export class UnknownContainerError extends CniError {
  override name = "UnknownContainerError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.UnknownContainer, msg, opts);
  }
}

/** 4: missing or invalid CNI_* environment variables. */
export class InvalidEnvError extends CniError {
  override name = "InvalidEnvError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.InvalidEnvironmentVariables, msg, opts);
  }
}

/** 5: stdin/stdout or state-file I/O failed. */
export class IoFailureError extends CniError {
  override name = "IoFailureError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.IOFailure, msg, opts);
  }
}

/** 6: stdin, prevResult or CNI_ARGS could not be decoded. */
export class DecodingError extends CniError {
  override name = "DecodingError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.DecodingFailure, msg, opts);
  }
}

/** 7: the network configuration is semantically invalid (message names the field). */
export class InvalidConfigError extends CniError {
  override name = "InvalidConfigError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.InvalidNetworkConfig, msg, opts);
  }
}

/** 8: CNI_NETNS is not a network namespace, or is the plugin's own. */
export class InvalidNetnsError extends CniError {
  override name = "InvalidNetnsError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.InvalidNetNS, msg, opts);
  }
}

/** 11: transient; the runtime should retry (lock timeout, daemon not reachable yet). */
export class TryAgainLaterError extends CniError {
  override name = "TryAgainLaterError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.TryAgainLater, msg, opts);
  }
}

/** 50: STATUS — the plugin cannot serve ADD now (e.g. no free address); existing containers are fine. */
export class PluginUnavailableError extends CniError {
  override name = "PluginUnavailableError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.PluginNotAvailable, msg, opts);
  }
}

/**
 * 51: STATUS — unavailable, and existing containers may have limited connectivity (e.g. a daemon
 * that renews their leases is gone, the link they hang off is gone).
 */
export class PluginUnavailableLimitedError extends CniError {
  override name = "PluginUnavailableLimitedError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.LimitedConnectivity, msg, opts);
  }
}

/** 999: an internal failure with a known message (upstream's plain `fmt.Errorf`). */
export class InternalError extends CniError {
  override name = "InternalError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.Internal, msg, opts);
  }
}

/**
 * A delegate's error JSON, re-emitted unchanged by the calling plugin (code, msg and details
 * preserved — even a synthesised code 0, as upstream does).
 */
export class DelegateError extends CniError {
  override name = "DelegateError";
  constructor(code: number, msg: string, opts?: CniErrorOptions) {
    super(code, msg, opts);
  }
}

/** The wire shape of a CNI error (key order as upstream prints it). */
export interface ErrorJson {
  code: number;
  msg: string;
  details?: string;
}

/**
 * The CniError that decides the code of `err`: the first one in its cause chain. An AggregateError
 * (several teardown failures) decides only when it holds exactly one error; several distinct
 * failures are 999.
 */
export function deciding(err: unknown): CniError | undefined {
  for (const e of causeChain(err)) {
    if (e instanceof CniError) return e;
    if (e instanceof AggregateError) return e.errors.length === 1 ? deciding(e.errors[0]) : undefined;
  }
  return undefined;
}

/** Maps any thrown value to the error JSON a runtime sees (code from {@link deciding}, else 999). */
export function toErrorJson(err: unknown): ErrorJson {
  const cni = deciding(err);
  let msg = messageOf(err);
  if (err instanceof AggregateError && !(err instanceof CniError) && msg === "") msg = err.errors.map(messageOf).join("; ");
  const out: ErrorJson = { code: cni?.code ?? CNI_ERROR_CODES.Internal, msg };
  if (cni?.details !== undefined && cni.details !== "") out.details = cni.details;
  return out;
}
