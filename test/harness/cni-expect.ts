/**
 * Assertions on plugin runs that print the whole run (exit status, stdout, stderr) when they fail,
 * so a failing integration test says what the plugin actually answered.
 */
import { expect } from "bun:test";
import type { PluginRun } from "./exec-plugin.ts";

/** The run succeeded: exit 0, and (when `expectOutput` is false) printed nothing on stdout. */
export function expectSuccess(run: PluginRun, opts: { silent?: boolean } = {}): void {
  const seen = { status: run.status, signal: run.signal, stdout: run.stdout, stderr: run.stderr };
  expect(seen).toMatchObject({ status: 0, signal: null });
  if (opts.silent) expect(seen).toMatchObject({ stdout: "" });
}

/** The run succeeded and printed a JSON result object; returns it. */
export function expectResult(run: PluginRun): Record<string, any> {
  expectSuccess(run);
  const seen = { stdout: run.stdout, stderr: run.stderr, isObject: typeof run.json === "object" && run.json !== null };
  expect(seen).toMatchObject({ isObject: true });
  return run.json as Record<string, any>;
}

export interface ExpectedCniError {
  code: number;
  /** The message must match (a string means "contains"). */
  msg?: string | RegExp;
  details?: string | RegExp;
}

/**
 * The run failed as a CNI plugin must: exit status 1, a single JSON error object on stdout with the
 * expected numeric code and a message, and no Go-style panic (exit 2) or signal.
 */
export function expectCniError(run: PluginRun, want: ExpectedCniError): { code: number; msg: string; details?: string } {
  const seen = {
    status: run.status,
    signal: run.signal,
    code: run.json?.code,
    msg: run.json?.msg,
    details: run.json?.details,
    stdout: run.stdout,
    stderr: run.stderr,
  };
  expect(seen).toMatchObject({ status: 1, signal: null, code: want.code });
  expect(typeof seen.msg).toBe("string");
  expect((seen.msg as string).length).toBeGreaterThan(0);
  if (want.msg !== undefined) {
    if (typeof want.msg === "string") expect(seen.msg).toContain(want.msg);
    else expect(seen.msg).toMatch(want.msg);
  }
  if (want.details !== undefined) {
    if (typeof want.details === "string") expect(seen.details).toContain(want.details);
    else expect(seen.details).toMatch(want.details);
  }
  return run.json;
}
