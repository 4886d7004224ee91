/**
 * What ends one invocation's waits (docs/resident.md, "Failure modes and limits").
 *
 * A plugin process needs nothing of this: when the runtime gives up on a call it kills the process,
 * and every wait ends with it. In the resident agent a call is a thread's task, which nobody can
 * kill; instead the agent *ends* the call when its caller goes away (the runtime killed the shim) or
 * when the agent's limit for a call passes. Every wait that can last (a delegate's exec, the dhcp
 * daemon's answer, a lock) watches the call's scope and ends when it is ended, as a killed process
 * would, so the attachment's DEL is never stuck behind it.
 */
import type { LockWaiter } from "../sys/fd-lock.ts";
import { TryAgainLaterError } from "./errors.ts";

export interface CallScope {
  /** Aborted (with a {@link CallEndedError} as its reason) when the call is ended; never in a plugin process. */
  readonly signal: AbortSignal;
  /**
   * How a synchronous wait (a lock held by someone else) sleeps between its tries (shared/sys
   * fd-lock.ts): waking at once when the call is ended, and then throwing its
   * {@link CallEndedError}. Undefined in a plugin process, whose blocking waits end with the
   * process.
   */
  readonly lockWaiter: LockWaiter | undefined;
  /**
   * Runs `wait`, a wait on another process (a delegate plugin, the dhcp daemon), telling the agent
   * so: calls are not held back for a thread that only waits. `wait` gets the signal and must end
   * (kill its child, close its connection) when it is aborted.
   */
  waitOn<T>(wait: (signal: AbortSignal) => Promise<T>): Promise<T>;
}

/** The call was ended by the resident agent before it finished (code 11: the runtime may retry). */
export class CallEndedError extends TryAgainLaterError {
  override name = "CallEndedError";
  constructor(reason: string) {
    super(`the call was ended: ${reason}`);
  }
}

const never = new AbortController().signal;

/** A plugin process's scope: never ended by anything but the process's death. */
export const PROCESS_SCOPE: CallScope = {
  signal: never,
  lockWaiter: undefined,
  waitOn: (wait) => wait(never),
};

/** Throws the call's {@link CallEndedError} when it has been ended. */
export function throwIfEnded(scope: CallScope): void {
  if (scope.signal.aborted) throw scope.signal.reason;
}
