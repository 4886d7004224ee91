/**
 * The switches of the opt-in per-call log (docs/call-log.md), which skel checks on every call and
 * call-log.ts, loaded only when one is set, reads: an environment variable, or a top-level key of
 * the plugin config.
 */

/** The per-call log's switches (docs/call-log.md): this variable, or this top-level config key. */
export const CALL_LOG_ENV = "CNI_PLUGINS_CALL_LOG";
export const CALL_LOG_KEY = "callLog";
