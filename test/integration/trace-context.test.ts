/**
 * The trace context libcni passes to plugins (TRACEPARENT, TRACESTATE, BAGGAGE; cni#1173) reaches
 * the delegated IPAM plugin, whether it runs in-process (the multi-call binary found in CNI_PATH)
 * or as its own process (another file in CNI_PATH), and every call's line of the per-call log
 * (docs/call-log.md) carries it, so a call can be followed from the runtime's trace into the log.
 * Here nothing observes the calls (no agent takes reports, no export is configured), so the
 * context passes on as it came; agent-traces.test.ts has the delegate as a child of its caller's
 * span when spans are recorded.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { DIST_BIN } from "../harness/paths.ts";
import { ptpConf } from "../harness/ptp-helpers.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

const TRACE = {
  TRACEPARENT: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  TRACESTATE: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
  BAGGAGE: "k8s.pod.name=web-1,k8s.namespace.name=shop",
};
const LOGGED = { traceparent: TRACE.TRACEPARENT, tracestate: TRACE.TRACESTATE, baggage: TRACE.BAGGAGE };

function logLines(file: string): { plugin: string; command: string; traceparent?: string; tracestate?: string; baggage?: string }[] {
  return readFileSync(file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l));
}

/**
 * A CNI_PATH directory whose `host-local` is a separate file (so ptp execs it): a script that
 * records the trace variables it got, then runs our binary as host-local.
 */
function execDelegateDir(): { dir: string; seen: string } {
  const dir = makeTempDir("cni-trace-bin-");
  const seen = join(dir, "seen-env");
  const script = `#!/bin/bash
printf '%s\\n' "TRACEPARENT=$TRACEPARENT" "TRACESTATE=$TRACESTATE" "BAGGAGE=$BAGGAGE" >> ${JSON.stringify(seen)}
exec -a host-local ${JSON.stringify(join(DIST_BIN, "cni-plugins"))}
`;
  writeFileSync(join(dir, "host-local"), script);
  chmodSync(join(dir, "host-local"), 0o755);
  return { dir, seen };
}

describe.skipIf(!sandboxed())("trace context (TRACEPARENT, TRACESTATE, BAGGAGE)", () => {
  useFixtureCleanup();

  for (const how of ["in-process", "exec'd"] as const) {
    test(`ptp passes it to its ${how} IPAM plugin; every call's log line carries it`, async () => {
      const ns = await createContainerNetns();
      const log = join(makeTempDir("cni-trace-log-"), "calls.jsonl");
      const exec = how === "exec'd" ? execDelegateDir() : undefined;
      const conf = ptpConf({ name: `trace-${how === "exec'd" ? "x" : "i"}`, dataDir: makeTempDir("cni-trace-store-"), subnets: ["10.62.0.0/24"] });
      const inv = (command: string, env: Record<string, string>): PluginInvocation => ({
        command,
        containerID: "trace-1",
        netns: ns.path,
        ifName: "eth0",
        config: conf,
        env: { ...env, CNI_PLUGINS_CALL_LOG: log },
        ...(exec ? { path: exec.dir } : {}),
      });
      expectResult(await execPlugin("ptp", inv("ADD", TRACE)));
      expectSuccess(await execPlugin("ptp", inv("DEL", TRACE)), { silent: true });
      expectSuccess(await execPlugin("ptp", inv("DEL", {})), { silent: true });

      const lines = logLines(log);
      expect(lines.map((l) => `${l.plugin} ${l.command}`)).toEqual(["host-local ADD", "ptp ADD", "host-local DEL", "ptp DEL", "host-local DEL", "ptp DEL"]);
      for (const l of lines.slice(0, 4)) expect(l).toMatchObject(LOGGED);
      for (const l of lines.slice(4)) expect(Object.keys(l).filter((k) => k in LOGGED)).toEqual([]);
      if (exec) {
        const got = readFileSync(exec.seen, "utf8").trimEnd().split("\n");
        const traced = Object.entries(TRACE).map(([k, v]) => `${k}=${v}`);
        expect(got).toEqual([...traced, ...traced, "TRACEPARENT=", "TRACESTATE=", "BAGGAGE="]);
      }
      await ns.destroy();
    });
  }
});
