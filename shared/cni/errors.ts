/**
 * CNI error classes and their codes (SPEC.md "Error"; upstream libcni constants).
 *
 * Every error a plugin can show a runtime is one of these classes. Anything else that escapes a
 * handler (a SyscallError, a NetlinkError, a bug) becomes code 999 in {@link toErrorJson}, with the
 * message chain kept readable, as upstream's `ErrInternal` does.
 */

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

/** 50: STATUS — the plugin cannot serve ADD now (e.g. no free address). */
export class PluginUnavailableError extends CniError {
  override name = "PluginUnavailableError";
  constructor(msg: string, opts?: CniErrorOptions) {
    super(CNI_ERROR_CODES.PluginNotAvailable, msg, opts);
  }
}

/** 51: STATUS — unavailable, and existing containers may have limited connectivity. */
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

/** Message of any thrown value, without a stack. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * Maps any thrown value to the error JSON a runtime sees: a {@link CniError} keeps its code,
 * anything else becomes 999 with its message.
 */
export function toErrorJson(err: unknown): ErrorJson {
  if (err instanceof CniError) {
    const out: ErrorJson = { code: err.code, msg: err.message };
    if (err.details !== undefined && err.details !== "") out.details = err.details;
    return out;
  }
  if (err instanceof AggregateError) {
    const parts = err.errors.map(messageOf);
    return { code: CNI_ERROR_CODES.Internal, msg: parts.length ? parts.join("; ") : err.message };
  }
  return { code: CNI_ERROR_CODES.Internal, msg: messageOf(err) };
}

/**
 * Wraps a lower-level failure with upstream-style context (`"<context>: <cause message>"`), keeping
 * the original as `cause` and a CNI code when the cause already has one.
 */
export function wrapError(context: string, cause: unknown): CniError {
  const msg = `${context}: ${messageOf(cause)}`;
  if (cause instanceof CniError) return new CniError(cause.code, msg, { details: cause.details, cause });
  return new InternalError(msg, { cause });
}
