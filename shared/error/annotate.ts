/**
 * The one way to add context to an error on its way up: `annotate("failed to set up veth", () => …)`
 * or `throw annotateError("failed to set up veth", err)`. The message reads like upstream's
 * `fmt.Errorf("<context>: %v", err)`; the original error stays reachable as `cause`, so the CNI code
 * is still decided once, from the whole chain, in shared/cni/errors.ts (`toErrorJson`).
 *
 * This module is the bottom of shared/: every layer may use it, it imports nothing.
 */

/** An error with context: `message` is `<context>: <cause's message>`, `cause` the original. */
export class AnnotatedError extends Error {
  override name = "AnnotatedError";
  /** The text that was prepended. */
  readonly context: string;
  constructor(context: string, cause: unknown) {
    super(`${context}: ${messageOf(cause)}`, { cause });
    this.context = context;
  }
}

/** Message of any thrown value, without a stack. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** `err` with `context` prepended to its message (the original kept as `cause`). */
export function annotateError(context: string, err: unknown): AnnotatedError {
  return new AnnotatedError(context, err);
}

/**
 * Runs `fn`; whatever it throws (or, for a promise, rejects with) comes out annotated with `context`.
 * Returns what `fn` returns.
 */
export function annotate<T>(context: string, fn: () => T): T {
  let out: T;
  try {
    out = fn();
  } catch (err) {
    throw new AnnotatedError(context, err);
  }
  if (out instanceof Promise) {
    return out.catch((err: unknown) => {
      throw new AnnotatedError(context, err);
    }) as T;
  }
  return out;
}

/** The chain `err`, `err.cause`, `err.cause.cause`, … (stops at a cycle or a non-Error). */
export function* causeChain(err: unknown): Generator<unknown> {
  const seen = new Set<unknown>();
  let cur: unknown = err;
  while (cur !== undefined && !seen.has(cur)) {
    seen.add(cur);
    yield cur;
    cur = cur instanceof Error ? cur.cause : undefined;
  }
}
