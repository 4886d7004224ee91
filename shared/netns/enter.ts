/**
 * `withNetNS`: the only way to run code inside another network namespace.
 *
 * Only the calling thread switches (setns). Bun runs asynchronous fs work and timers on pool
 * threads that stay in the original namespace, so the callback must be strictly synchronous: no
 * awaiting, no asynchronous fs, no timers. A Promise-returning callback does not type-check, and a
 * thenable result throws at runtime (after the namespace has been restored).
 */

import { CLONE_NEWNET, O_RDONLY, THREAD_NETNS_PATH } from "../sys/constants.ts";
import { open } from "../sys/file.ts";
import { close, setns } from "../sys/libc.ts";
import type { NetNS } from "./netns.ts";
import { restoreOrAbort } from "./_restore.ts";
import { phaseEnd, phaseStart } from "../telemetry/invocation.ts";

/** A callback result type that excludes promises and any other object with a `then` method. */
export type NotThenable<T> = T extends PromiseLike<unknown> | { then: (...args: never[]) => unknown } ? never : T;

function isThenable(v: unknown): boolean {
  return (
    v !== null &&
    (typeof v === "object" || typeof v === "function") &&
    typeof (v as { then?: unknown }).then === "function"
  );
}

/**
 * Runs `fn` with the calling thread switched into `ns`, then switches back (also when `fn`
 * throws). If switching back fails the process aborts rather than continue in the wrong namespace.
 *
 * Keep the window minimal: open a netlink socket or a /proc/sys file inside, work from outside.
 */
export function withNetNS<T>(ns: NetNS, fn: () => NotThenable<T>): NotThenable<T> {
  const phase = phaseStart();
  const orig = open(THREAD_NETNS_PATH, O_RDONLY);
  try {
    setns(ns.fd, CLONE_NEWNET);
    let result: NotThenable<T>;
    try {
      result = fn();
    } finally {
      restoreOrAbort(orig, ns.path);
      phaseEnd("netns", phase);
    }
    if (isThenable(result)) {
      throw new TypeError("withNetNS: the callback returned a promise; code run inside a netns must be synchronous");
    }
    return result;
  } finally {
    close(orig);
  }
}
