/**
 * The real runtimes the e2e lane drives, built or installed by test/e2e/setup/prepare.sh into a
 * cache outside the repository (E2E_CACHE, default /var/cache/cni-ts-e2e). A tool that is missing
 * makes its rows printed skips naming the setup step, never silent passes.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";

export const E2E_CACHE = process.env.CNI_E2E_CACHE || "/var/cache/cni-ts-e2e";
export const CNITOOL = join(E2E_CACHE, "bin", "cnitool");
export const RC_CRICTL = join(E2E_CACHE, "bin", "rc-crictl");

/** Why `tool` cannot be used, or undefined. */
export function toolMissing(path: string, how: string): string | undefined {
  return existsSync(path) ? undefined : `${path} not found (${how})`;
}

export function commandMissing(cmd: string): string | undefined {
  return Bun.which(cmd) === null ? `${cmd} is not installed (test/setup-host.sh installs it)` : undefined;
}

export interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs a command to completion (async, so bun keeps serving timers). */
export async function run(argv: string[], opts: { env?: Record<string, string>; stdin?: string; timeoutMs?: number } = {}): Promise<Ran> {
  const started = performance.now();
  const proc = Bun.spawn(argv, {
    env: { ...process.env, ...(opts.env ?? {}) },
    stdin: opts.stdin === undefined ? "ignore" : new TextEncoder().encode(opts.stdin),
    stdout: "pipe",
    stderr: "pipe",
    timeout: opts.timeoutMs ?? 120_000,
    killSignal: "SIGKILL",
  });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  return { status: proc.exitCode, stdout, stderr, ms: performance.now() - started };
}

export function show(r: Ran): string {
  return `exit=${r.status} stdout=${r.stdout.trim().slice(0, 1500)} stderr=${r.stderr.trim().slice(0, 1500)}`;
}
