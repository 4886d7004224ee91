/**
 * Undo is teardown (as in netavark): a plugin lists, once, the steps that remove what it creates —
 * in the order DEL runs them — and both verbs use that one list.
 *
 * - DEL: {@link teardown} runs EVERY step, even after one failed, and reports all failures together
 *   (one failure: that error itself, so its CNI code survives; several: a {@link TeardownError}
 *   whose message names each). An IPAM DEL that fails therefore never stops the plugin's own
 *   teardown; its error is reported afterwards.
 * - ADD: an {@link Undo} over the same list. ADD marks a step as `reached` once the thing it removes
 *   may exist (before a change that can half-apply, after one that is atomic); on failure
 *   `rollback(err)` runs the reached steps, in the list's order, and rethrows the ORIGINAL error.
 *   A rollback step that fails is written to stderr (the runtime's DEL will retry it), never in
 *   place of the error that made ADD fail.
 *
 * Steps must be idempotent: DEL runs them when nothing, or only part, was ever created.
 *
 * ```ts
 * const steps = (created?) => [
 *   ipamStep(ipamType, args), // shared/cni/ipam-delegation.ts
 *   { name: "container link", run: () => deleteContainerLink(args, created) },
 * ];
 * // DEL:  await teardown(steps());
 * // ADD:  const undo = new Undo(steps(created), args.stderr); … undo.reached("container link"); …
 * //       catch (err) { return await undo.rollback(err); }
 * ```
 *
 * `return await` (not `return`): handles the steps use are often `using` declarations of the same
 * function, which a plain `return` would dispose of before the rollback has run.
 *
 * Nothing here knows CNI: the firewall layer and the plugins use it alike, and the CNI code of a
 * TeardownError (an AggregateError) is decided where every code is, shared/cni/errors.ts.
 */
import { messageOf } from "../error/annotate.ts";

/** One thing to remove. `name` says what, for messages ("container link", "IPAM address"). */
export interface TeardownStep {
  readonly name: string;
  run(): void | Promise<void>;
}

/** Several teardown steps failed; `errors` holds each failure in step order. */
export class TeardownError extends AggregateError {
  override name = "TeardownError";
  constructor(errors: unknown[]) {
    super(errors, errors.map(messageOf).join("; "));
  }
}

/** Runs every step in order; throws the one failure, or a TeardownError for several. */
export async function teardown(steps: readonly TeardownStep[]): Promise<void> {
  const errors: unknown[] = [];
  for (const step of steps) {
    try {
      await step.run();
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new TeardownError(errors);
}

/** ADD's half of undo-is-teardown: which steps were reached, and the rollback. */
export class Undo {
  readonly #steps: readonly TeardownStep[];
  readonly #warn: (text: string) => void;
  readonly #reached = new Set<string>();

  /** `warn`: where a failed rollback step is reported (the invocation's stderr, CmdArgs.stderr). */
  constructor(steps: readonly TeardownStep[], warn: (text: string) => void) {
    this.#steps = steps;
    this.#warn = warn;
  }

  /** Marks steps (by name) as needed on rollback; an unknown name is a programming error. */
  reached(...names: string[]): void {
    for (const name of names) {
      if (!this.#steps.some((s) => s.name === name)) throw new TypeError(`Undo: no teardown step named ${JSON.stringify(name)}`);
      this.#reached.add(name);
    }
  }

  /** Runs the reached steps in teardown order, then rethrows `cause` (the error that made ADD fail). */
  async rollback(cause: unknown): Promise<never> {
    for (const step of this.#steps) {
      if (!this.#reached.has(step.name)) continue;
      try {
        await step.run();
      } catch (err) {
        this.#warn(`rollback of ${step.name} failed: ${messageOf(err)}\n`);
      }
    }
    this.#reached.clear();
    throw cause;
  }
}
