import { describe, expect, test } from "bun:test";
import { CONTENT_TYPE, formatFor, MetricsRegistry } from "./registry.ts";

describe("metrics registry", () => {
  test("text format: HELP and TYPE, series sorted by label values, escaped values", () => {
    const r = new MetricsRegistry();
    const calls = r.counter("cni_plugin_calls_total", "Plugin calls, by plugin, command and code.", ["plugin", "command", "code"]);
    const inFlight = r.gauge("cni_agent_calls_in_flight", "Calls accepted and not yet answered.");
    calls.inc(["loopback", "ADD", "0"]);
    calls.inc(["bridge", "DEL", "0"], 2);
    calls.inc(["bridge", 'A"D\\D\n', "7"]);
    calls.inc(["bridge", "DEL", "0"], -1);
    inFlight.set([], 3);
    inFlight.add([], -1);
    expect(r.expose("prometheus")).toBe(
      [
        "# HELP cni_plugin_calls_total Plugin calls, by plugin, command and code.",
        "# TYPE cni_plugin_calls_total counter",
        'cni_plugin_calls_total{plugin="bridge",command="A\\"D\\\\D\\n",code="7"} 1',
        'cni_plugin_calls_total{plugin="bridge",command="DEL",code="0"} 2',
        'cni_plugin_calls_total{plugin="loopback",command="ADD",code="0"} 1',
        "# HELP cni_agent_calls_in_flight Calls accepted and not yet answered.",
        "# TYPE cni_agent_calls_in_flight gauge",
        "cni_agent_calls_in_flight 2",
        "",
      ].join("\n"),
    );
  });

  test("histogram: cumulative buckets, +Inf, sum and count; OpenMetrics names the counter family without _total and ends with # EOF", () => {
    const r = new MetricsRegistry();
    const h = r.histogram("cni_plugin_call_duration_seconds", "Call duration.", ["plugin"], [0.01, 0.1, 1]);
    const c = r.counter("cni_agent_restarts_total", 'Restarts ("graceful").');
    for (const v of [0.005, 0.01, 0.05, 0.5, 2]) h.observe(["bridge"], v);
    h.observe(["bridge"], Number.NaN);
    c.inc();
    const prom = r.expose("prometheus");
    expect(prom).toContain('cni_plugin_call_duration_seconds_bucket{plugin="bridge",le="0.01"} 2\n');
    expect(prom).toContain('cni_plugin_call_duration_seconds_bucket{plugin="bridge",le="0.1"} 3\n');
    expect(prom).toContain('cni_plugin_call_duration_seconds_bucket{plugin="bridge",le="1"} 4\n');
    expect(prom).toContain('cni_plugin_call_duration_seconds_bucket{plugin="bridge",le="+Inf"} 5\n');
    expect(prom).toContain('cni_plugin_call_duration_seconds_sum{plugin="bridge"} 2.565\n');
    expect(prom).toContain('cni_plugin_call_duration_seconds_count{plugin="bridge"} 5\n');
    expect(prom).toContain('# HELP cni_agent_restarts_total Restarts ("graceful").\n# TYPE cni_agent_restarts_total counter\ncni_agent_restarts_total 1\n');
    const om = r.expose("openmetrics");
    expect(om).toContain('# HELP cni_agent_restarts Restarts (\\"graceful\\").\n# TYPE cni_agent_restarts counter\ncni_agent_restarts_total 1\n');
    expect(om.endsWith("# EOF\n")).toBe(true);
  });

  test("names and label counts are checked when a family is made or recorded", () => {
    const r = new MetricsRegistry();
    expect(() => r.counter("bad-name", "x")).toThrow("not a Prometheus name");
    expect(() => r.histogram("h", "x", ["le"])).toThrow("not allowed");
    const g = r.gauge("g", "x", ["a"]);
    expect(() => g.set([], 1)).toThrow("0 label values for 1 names");
    expect(() => r.gauge("g", "again")).toThrow("registered twice");
  });

  test("the format follows the scraper's Accept header", () => {
    expect(formatFor("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")).toBe("openmetrics");
    expect(formatFor("text/plain;version=0.0.4")).toBe("prometheus");
    expect(formatFor(null)).toBe("prometheus");
    expect(CONTENT_TYPE.openmetrics).toStartWith("application/openmetrics-text; version=1.0.0");
  });
});
