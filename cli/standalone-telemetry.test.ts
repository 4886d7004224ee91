import { expect, test } from "bun:test";
import { join } from "node:path";
import { useFixtureCleanup } from "../test/harness/cleanup.ts";
import { makeTempDir } from "../test/harness/tempdir.ts";
import { ReportReceiver } from "../agent/report-socket.ts";
import { CallTelemetry } from "../shared/telemetry/call.ts";
import type { CallReport } from "../shared/telemetry/report.ts";
import { standaloneTelemetry } from "./standalone-telemetry.ts";

useFixtureCleanup();

function agentSocket(): string {
  return join(makeTempDir("cni-standalone-"), "plugins.sock");
}

/** One finished invocation, as skel hands it to the host. */
async function invocation(host: NonNullable<ReturnType<typeof standaloneTelemetry>["host"]>): Promise<CallReport> {
  const call = new CallTelemetry("loopback", { CNI_COMMAND: "ADD" }, host);
  await call.run(async () => {});
  return call.finish(0, "");
}

test("nothing observes the call (no agent reads reports, no export): no host, nothing recorded", () => {
  const t = standaloneTelemetry({ CNI_PLUGINS_SOCKET: agentSocket() });
  expect(t.host).toBeUndefined();
});

test("an agent reads reports: the report, spans included, reaches it", async () => {
  const socket = agentSocket();
  const got: CallReport[] = [];
  const receiver = await ReportReceiver.open(socket, { report: (r) => got.push(r), invalid: () => {} }, () => {});
  try {
    const t = standaloneTelemetry({ CNI_PLUGINS_SOCKET: socket });
    const r = await invocation(t.host!);
    t.host!.report!(r);
    const deadline = Date.now() + 2000;
    while (got.length === 0 && Date.now() < deadline) await Bun.sleep(20);
    expect(got).toEqual([r]);
    expect(r.spans?.[0]?.name).toBe("cni.ADD loopback");
  } finally {
    receiver.close();
  }
});

test("no agent, an OTLP endpoint in the environment: the process exports its spans itself, and waits a few ms at most", async () => {
  let bodies = 0;
  const collector = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (req) => (await req.arrayBuffer(), bodies++, new Response("")) });
  try {
    // The process gives its export 5 ms: on a busy machine a request may not even leave in time,
    // so up to 5 processes' worth, until one arrives.
    for (let attempt = 0; attempt < 5 && bodies === 0; attempt++) {
      const t = standaloneTelemetry({ CNI_PLUGINS_SOCKET: agentSocket(), OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}` });
      t.host!.report!(await invocation(t.host!));
      const started = performance.now();
      await t.flush();
      expect(performance.now() - started).toBeLessThan(100);
      const deadline = Date.now() + 500;
      while (bodies === 0 && Date.now() < deadline) await Bun.sleep(10);
    }
    expect(bodies).toBeGreaterThan(0);
  } finally {
    collector.stop(true);
  }
});
