/**
 * The trace context libcni passes to plugins (TRACEPARENT, TRACESTATE, BAGGAGE; cni#1173) reaches
 * the delegated IPAM plugin, whether it runs in-process (the multi-call binary found in CNI_PATH)
 * or as its own process (another file in CNI_PATH), as a child of the delegating call (the same
 * trace, the caller's span as parent: docs/observability.md), and every call's line of the
 * per-call log (docs/call-log.md) carries the context it got, so a call can be followed from the
 * runtime's trace into the log.
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
      // ptp got the runtime's context; its IPAM plugin gets the same trace with ptp's span as parent.
      const [, traceId, runtimeSpan] = TRACE.TRACEPARENT.split("-");
      const childOfPtp = new RegExp(`^00-${traceId}-(?!${runtimeSpan})[0-9a-f]{16}-01$`);
      for (const l of [lines[1]!, lines[3]!]) expect(l).toMatchObject(LOGGED);
      for (const l of [lines[0]!, lines[2]!]) {
        expect(l).toMatchObject({ tracestate: TRACE.TRACESTATE, baggage: TRACE.BAGGAGE });
        expect(l.traceparent).toMatch(childOfPtp);
      }
      // Without a context ptp starts a trace of its own, which its IPAM plugin joins.
      expect(Object.keys(lines[5]!).filter((k) => k in LOGGED)).toEqual([]);
      expect(Object.keys(lines[4]!).filter((k) => k in LOGGED)).toEqual(["traceparent"]);
      expect(lines[4]!.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      expect(lines[4]!.traceparent!.split("-")[1]).not.toBe(traceId);
      if (exec) {
        const got = readFileSync(exec.seen, "utf8").trimEnd().split("\n");
        expect(got).toHaveLength(9);
        for (const at of [0, 3]) {
          expect(got[at]).toMatch(new RegExp(`^TRACEPARENT=${childOfPtp.source.slice(1)}`));
          expect(got.slice(at + 1, at + 3)).toEqual([`TRACESTATE=${TRACE.TRACESTATE}`, `BAGGAGE=${TRACE.BAGGAGE}`]);
        }
        expect(got[6]).toMatch(/^TRACEPARENT=00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
        expect(got.slice(7)).toEqual(["TRACESTATE=", "BAGGAGE="]);
      }
      await ns.destroy();
    });
  }
});
