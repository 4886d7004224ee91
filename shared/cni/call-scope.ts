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
import { TryAgainLaterError } from "./errors.ts";
import type { CallScope } from "./types.ts";

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
