/**
 * The per-call log (call-log.ts, switched on in skel.ts): off unless the environment variable or the
 * config key names a file; one JSON line per call with the outcome and the CNI error; a log that
 * cannot be written changes neither the exit status nor stdout.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../../test/harness/cleanup.ts";
import { makeTempDir } from "../../test/harness/tempdir.ts";
import { callLogPath, type CallLogLine } from "./call-log.ts";
import { InvalidConfigError } from "./errors.ts";
import { runPlugin } from "./skel.ts";
import { CALL_LOG_ENV } from "./call-log-switch.ts";
import type { PluginSpec } from "./types.ts";
import { ALL_VERSIONS } from "./version.ts";

useFixtureCleanup();
const tempDir = () => makeTempDir("cni-call-log-");

const spec: PluginSpec = {
  name: "fake",
  versions: ALL_VERSIONS,
  add: () => ({ ips: [{ address: "10.0.0.2/24" }] }),
  del: (a) => {
    if (a.containerID === "bad") throw new InvalidConfigError("field mtu is wrong", { details: "mtu" });
  },
};

const baseEnv = { CNI_CONTAINERID: "c1", CNI_NETNS: "/nonexistent", CNI_IFNAME: "eth0", CNI_PATH: "/opt/cni/bin" };

async function call(env: Record<string, string>, config: Record<string, unknown>) {
  let stdout = "";
  let stderr = "";
  const status = await runPlugin(
    spec,
    {
      env,
      readStdin: () => new TextEncoder().encode(JSON.stringify(config)),
      stdout: (t) => (stdout += t),
      stderr: (t) => (stderr += t),
    },
    { buildVersion: "v0" },
  );
  return { status, stdout, stderr };
}

function lines(file: string): CallLogLine[] {
  return readFileSync(file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as CallLogLine);
}

describe("per-call log", () => {
  test("only a top-level key counts: a nested callLog writes nothing and says nothing", async () => {
    const file = join(tempDir(), "calls.jsonl");
    const r = await call({ ...baseEnv, CNI_COMMAND: "ADD" }, { cniVersion: "1.0.0", name: "n", ipam: { callLog: file } });
    expect([r.status, r.stderr]).toEqual([0, ""]);
    expect(existsSync(file)).toBe(false);
  });

  test("the environment variable turns it on: one line per call with outcome and error", async () => {
    const file = join(tempDir(), "calls.jsonl");
    const env = { ...baseEnv, [CALL_LOG_ENV]: file };
    const ok = await call({ ...env, CNI_COMMAND: "ADD" }, { cniVersion: "1.0.0", name: "net1" });
    const bad = await call({ ...env, CNI_COMMAND: "DEL", CNI_CONTAINERID: "bad" }, { cniVersion: "1.0.0", name: "net1" });
    expect([ok.status, bad.status]).toEqual([0, 1]);
    const [a, d] = lines(file);
    expect(a).toMatchObject({ plugin: "fake", command: "ADD", containerID: "c1", ifName: "eth0", network: "net1", outcome: "ok", code: 0, msg: "" });
    expect(d).toMatchObject({ command: "DEL", containerID: "bad", outcome: "error", code: 7, msg: "field mtu is wrong; mtu" });
    expect(Date.parse(a!.time)).toBeGreaterThan(Date.now() - 60_000);
    expect(a!.durationMs).toBeGreaterThanOrEqual(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  test("records the trace context libcni passes (TRACEPARENT, TRACESTATE, BAGGAGE); unset or empty ones are left out", async () => {
    const file = join(tempDir(), "calls.jsonl");
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const env = { ...baseEnv, CNI_COMMAND: "ADD", [CALL_LOG_ENV]: file };
    await call({ ...env, TRACEPARENT: traceparent, TRACESTATE: "rojo=00f067aa0ba902b7", BAGGAGE: "k8s.pod=web-1,team=net" }, { cniVersion: "1.0.0", name: "n" });
    await call({ ...env, TRACEPARENT: traceparent, TRACESTATE: "" }, { cniVersion: "1.0.0", name: "n" });
    await call(env, { cniVersion: "1.0.0", name: "n" });
    const [all, some, none] = lines(file);
    expect(all).toMatchObject({ traceparent, tracestate: "rojo=00f067aa0ba902b7", baggage: "k8s.pod=web-1,team=net" });
    expect(Object.keys(some!).filter((k) => ["traceparent", "tracestate", "baggage"].includes(k))).toEqual(["traceparent"]);
    expect(Object.keys(none!).filter((k) => ["traceparent", "tracestate", "baggage"].includes(k))).toEqual([]);
  });

  test("the config key turns it on and wins over the environment", async () => {
    const dir = tempDir();
    const fromKey = join(dir, "key.jsonl");
    const fromEnv = join(dir, "env.jsonl");
    await call({ ...baseEnv, CNI_COMMAND: "ADD", [CALL_LOG_ENV]: fromEnv }, { cniVersion: "1.0.0", name: "n", callLog: fromKey });
    expect(lines(fromKey)).toHaveLength(1);
    expect(readdirSync(dir)).toEqual(["key.jsonl"]);
  });

  test("calls that fail before reading stdin are logged too (environment errors)", async () => {
    const file = join(tempDir(), "calls.jsonl");
    const r = await call({ CNI_COMMAND: "ADD", [CALL_LOG_ENV]: file }, { cniVersion: "1.0.0", name: "n" });
    expect(r.status).toBe(1);
    expect(lines(file)[0]).toMatchObject({ command: "ADD", outcome: "error", code: 4 });
  });

  test("an unwritable log changes neither status nor stdout; the reason goes to stderr", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "is-a-dir"));
    const plain = await call({ ...baseEnv, CNI_COMMAND: "ADD" }, { cniVersion: "1.0.0", name: "n" });
    for (const target of [join(dir, "is-a-dir"), join(dir, "missing", "x.jsonl"), "relative.jsonl"]) {
      const r = await call({ ...baseEnv, CNI_COMMAND: "ADD", [CALL_LOG_ENV]: target }, { cniVersion: "1.0.0", name: "n" });
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(plain.stdout);
      expect(r.stderr).toContain("call log");
    }
  });

  test("callLogPath: empty values are off; a non-string key falls back to the environment", () => {
    expect(callLogPath({ callLog: "" }, {})).toBeUndefined();
    expect(callLogPath(undefined, { [CALL_LOG_ENV]: "" })).toBeUndefined();
    expect(callLogPath({ callLog: 5 }, { [CALL_LOG_ENV]: "/x" })).toBe("/x");
  });
});
