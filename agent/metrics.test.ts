import { expect, test } from "bun:test";
import { AgentMetrics } from "./metrics.ts";

function report(plugin: string, command: string, code: number, extra: Partial<Parameters<AgentMetrics["call"]>[0]> = {}) {
  return { plugin, command, code, durationS: 0.004, phases: [], ipam: [], ...extra };
}

test("calls, phases, IPAM, refusals, pool figures and restarts in the text format", () => {
  let pool = { inFlight: 3, threads: 5 };
  const m = new AgentMetrics(() => pool, 2);
  m.call(report("bridge", "ADD", 0, { phases: [["link", 0.002], ["route", 0.0004]], ipam: [{ plugin: "host-local", network: "n1", range: "10.1.0.0/24", used: 4, free: 249 }] }));
  m.call(report("bridge", "ADD", 7));
  m.call(report("host-local", "ADD", 0, { ipam: [{ plugin: "host-local", network: "n1", range: "10.1.0.0/24", used: 5, free: 248 }] }));
  m.refused("namespace");
  m.queueWait(0.0002);
  const text = m.expose("prometheus");
  expect(text).toContain('cni_plugin_calls_total{plugin="bridge",command="ADD",code="0"} 1\n');
  expect(text).toContain('cni_plugin_calls_total{plugin="bridge",command="ADD",code="7"} 1\n');
  expect(text).toContain('cni_plugin_call_duration_seconds_bucket{plugin="bridge",command="ADD",le="0.005"} 2\n');
  expect(text).toContain('cni_plugin_phase_duration_seconds_count{plugin="bridge",command="ADD",phase="link"} 1\n');
  expect(text).toContain('cni_ipam_addresses{plugin="host-local",network="n1",range="10.1.0.0/24",state="used"} 5\n');
  expect(text).toContain('cni_ipam_addresses{plugin="host-local",network="n1",range="10.1.0.0/24",state="free"} 248\n');
  expect(text).toContain('cni_agent_refusals_total{reason="namespace"} 1\n');
  expect(text).toContain('cni_agent_refusals_total{reason="busy"} 0\n');
  expect(text).toContain("cni_agent_queue_wait_seconds_count 1\n");
  expect(text).toContain("cni_agent_calls_in_flight 3\n");
  expect(text).toContain("cni_agent_workers 5\n");
  expect(text).toContain("cni_agent_restarts_total 2\n");
  pool = { inFlight: 0, threads: 2 };
  expect(m.expose("prometheus")).toContain("cni_agent_workers 2\n");
  const om = m.expose("openmetrics");
  expect(om).toContain("# TYPE cni_plugin_calls counter\n");
  expect(om).toEndWith("# EOF\n");
});

test("IPAM series are bounded", () => {
  const m = new AgentMetrics(() => ({ inFlight: 0, threads: 0 }), 0);
  for (let i = 0; i < 5000; i++) m.call(report("host-local", "ADD", 0, { ipam: [{ plugin: "host-local", network: `n${i}`, range: "10.0.0.0/24", used: 1, free: 1 }] }));
  const series = m.expose("prometheus").split("\n").filter((l) => l.startsWith("cni_ipam_addresses{"));
  expect(series.length).toBe(4096 * 2);
});
