/**
 * The Prometheus harness itself (prometheus.ts), against an exposition this test serves: a real
 * Prometheus scrapes it, query() reads a labelled counter back exactly, and a histogram_quantile
 * over rate() of a histogram's buckets answers the quantile the buckets imply. So a failing
 * metrics test of the agent is about the agent, not about the harness.
 */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { useFixtureCleanup } from "./cleanup.ts";
import { PROMETHEUS_BINARY, prometheusConfig, startPrometheus } from "./prometheus.ts";

/**
 * The exposition after `n` scrapes: the counter is fixed; the histogram gains 10 observations per
 * scrape (2 ≤ 10 ms, 6 in (10 ms, 100 ms], 2 in (100 ms, 1 s]), so rate() of every bucket keeps
 * one ratio and the median is 0.01 + 0.09 · (5 − 2) / 6 = 0.055 s, whatever the rate's window.
 */
function exposition(n: number): string {
  return [
    "# HELP x_calls_total Calls.",
    "# TYPE x_calls_total counter",
    'x_calls_total{plugin="bridge",command="ADD",code="0"} 12',
    'x_calls_total{plugin="bridge",command="ADD",code="7"} 1',
    'x_calls_total{plugin="host-local",command="DEL",code="0"} 3',
    "# HELP x Durations.",
    "# TYPE x histogram",
    `x_bucket{le="0.01"} ${2 * n}`,
    `x_bucket{le="0.1"} ${8 * n}`,
    `x_bucket{le="1"} ${10 * n}`,
    `x_bucket{le="+Inf"} ${10 * n}`,
    `x_sum ${0.5 * n}`,
    `x_count ${10 * n}`,
    "",
  ].join("\n");
}

// Needs neither root nor the sandbox (one process on an ephemeral port of 127.0.0.1, a temp dir):
// it runs wherever test/setup-host.sh has installed Prometheus, the unit lane included.
describe.skipIf(!existsSync(PROMETHEUS_BINARY))("Prometheus harness", () => {
  useFixtureCleanup();

  test("the generated config has one job with a 1 s interval and timeout over the targets", () => {
    const yml = prometheusConfig(["127.0.0.1:1", "127.0.0.1:2"], 1);
    expect(yml).toContain("job_name: cni");
    expect(yml).toContain("scrape_interval: 1s");
    expect(yml).toContain("scrape_timeout: 1s");
    expect(yml).toContain('targets: ["127.0.0.1:1", "127.0.0.1:2"]');
  });

  test("scrapes a served exposition: the counter's values by label, and histogram_quantile over rate()", async () => {
    let scrapes = 0;
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        if (new URL(req.url).pathname !== "/metrics") return new Response("not found", { status: 404 });
        scrapes++;
        return new Response(exposition(scrapes), { headers: { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" } });
      },
    });
    try {
      const prom = await startPrometheus([`127.0.0.1:${server.port}`]);
      try {
        await prom.waitForScrapes(3);
        expect(scrapes).toBeGreaterThanOrEqual(3);

        const byLabels = (await prom.query("sum by (plugin, command, code) (x_calls_total)"))
          .map((s) => `${s.metric.plugin} ${s.metric.command} ${s.metric.code} = ${s.value}`)
          .sort();
        expect(byLabels).toEqual(["bridge ADD 0 = 12", "bridge ADD 7 = 1", "host-local DEL 0 = 3"]);
        const one = await prom.query('x_calls_total{plugin="bridge",code="7"}');
        expect(one).toHaveLength(1);
        expect(one[0]!.metric).toMatchObject({ job: "cni", instance: `127.0.0.1:${server.port}`, command: "ADD" });

        const median = await prom.query("histogram_quantile(0.5, sum by (le) (rate(x_bucket[1m])))");
        expect(median).toHaveLength(1);
        expect(median[0]!.value).toBeCloseTo(0.055, 6);
        const p99 = await prom.query("histogram_quantile(0.99, sum by (le) (rate(x_bucket[1m])))");
        expect(p99[0]!.value).toBeGreaterThan(0.1);
        expect(p99[0]!.value).toBeLessThanOrEqual(1);

        // A scalar answers as one sample; a selector that matches nothing as no sample.
        expect(await prom.query("scalar(sum(x_calls_total))")).toEqual([{ metric: {}, value: 16 }]);
        expect(await prom.query("x_calls_total{plugin=\"none\"}")).toEqual([]);
        // An instant query is evaluated now, so a counter that rose since is read at its new value.
        const count = (await prom.query("x_count"))[0]!.value;
        await prom.waitForScrapes(1);
        expect((await prom.query("x_count"))[0]!.value).toBeGreaterThan(count);
      } finally {
        await prom.stop();
      }
      expect(existsSync(`/proc/${prom.pid}`)).toBe(false);
      await prom.stop(); // twice is fine
    } finally {
      server.stop(true);
    }
  }, 60_000);

  test("a target that is down: waitForScrapes fails within its bound and names the target's error", async () => {
    // Nothing listens on port 1 of 127.0.0.1 (privileged, and we bind nothing there).
    const prom = await startPrometheus(["127.0.0.1:1"]);
    const started = Date.now();
    // Prometheus hands its scrape pools their targets up to 5 s after start (its discovery
    // manager's update period): 9 s see a failed scrape.
    const err = await prom.waitForScrapes(1, 9000).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toContain("127.0.0.1:1: health=down");
    expect(Date.now() - started).toBeLessThan(15_000);
    await prom.stop();
  }, 60_000);
});
