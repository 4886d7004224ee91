/**
 * Guaranteed cleanup for test fixtures (namespaces, temp dirs, processes). Every fixture registers
 * an undo step here when it is created; {@link useFixtureCleanup} runs the steps after each test (and
 * after the file), and a process-exit hook runs whatever is still left if the test process dies
 * early. Steps are synchronous so that the exit hook can run them too.
 */
import { afterAll, afterEach } from "bun:test";

type Step = { label: string; run: () => void };

const pending = new Map<number, Step>();
let nextId = 1;
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => runAllCleanups());
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(sig, () => {
      runAllCleanups();
      process.exit(128 + (sig === "SIGINT" ? 2 : sig === "SIGTERM" ? 15 : 1));
    });
  }
}

/** Registers an undo step; returns a function that runs it now (once) and forgets it. */
export function registerCleanup(label: string, run: () => void): () => void {
  installExitHook();
  const id = nextId++;
  pending.set(id, { label, run });
  return () => {
    const step = pending.get(id);
    if (!step) return;
    pending.delete(id);
    step.run();
  };
}

/**
 * Runs every registered step, newest first. Failures are collected, not thrown one by one, so one
 * broken step cannot leave the others behind; the combined error is thrown at the end.
 */
export function runAllCleanups(): void {
  const ids = [...pending.keys()].sort((a, b) => b - a);
  const errors: string[] = [];
  for (const id of ids) {
    const step = pending.get(id);
    pending.delete(id);
    if (!step) continue;
    try {
      step.run();
    } catch (err) {
      errors.push(`${step.label}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (errors.length > 0) throw new Error(`fixture cleanup failed:\n  ${errors.join("\n  ")}`);
}

/** Number of fixtures not yet cleaned up (tests assert it drops to 0). */
export function pendingCleanups(): number {
  return pending.size;
}

/** Call at the top of a test file (or describe): cleans every fixture after each test and at the end. */
export function useFixtureCleanup(): void {
  afterEach(() => runAllCleanups());
  afterAll(() => runAllCleanups());
}

/**
 * Call in a describe whose fixtures its tests share (created in beforeAll): cleans every fixture
 * once, after the describe's last test, instead of after each.
 */
export function useSuiteFixtureCleanup(): void {
  afterAll(() => runAllCleanups());
}
