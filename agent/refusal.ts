/**
 * Why the agent did not serve a call (its shim then runs the standalone executable): a reason from
 * a fixed set, which the metric cni_agent_refusals_total{reason} counts (docs/observability.md),
 * and the text the shim logs with --verbose.
 */

/** Every reason a call is refused for. */
export const REFUSAL_REASONS = [
  /** The agent is stopping or restarting. */
  "draining",
  /** The shim speaks another protocol or is of another build. */
  "build",
  /** argv[0] names no plugin of this build. */
  "not_plugin",
  /** No peer credentials, or they disagree with what the shim says. */
  "peer",
  /** Another user or group. */
  "user",
  /** Another user, network or mount namespace, or another root directory. */
  "namespace",
  /** Fewer capabilities or groups, no_new_privs, seccomp. */
  "privilege",
  /** Another LSM context. */
  "lsm",
  /** A process the agent started (a nested call). */
  "nested",
  /** Too many calls already wait for a thread. */
  "busy",
  /** Every thread runs a call that waits on another process. */
  "stalled",
  /** No thread free, or the attachment still busy, within the admission wait. */
  "timeout",
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export class Refusal {
  readonly reason: RefusalReason;
  readonly text: string;

  constructor(reason: RefusalReason, text: string) {
    this.reason = reason;
    this.text = text;
  }
}
