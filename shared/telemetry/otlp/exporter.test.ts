import { afterEach, describe, expect, test } from "bun:test";
import type { SpanData } from "../span.ts";
import type { TraceExportConfig } from "./config.ts";
import { BatchSpanExporter, type DropReason, type ExportHooks } from "./exporter.ts";
import { numberedSpan } from "./testing.ts";

type Mode = "ok" | "error500" | "never";

/** A collector on 127.0.0.1 that records requests and how many were open at once. */
function collector(mode: Mode) {
  const bodies: Array<{ contentType: string; headers: Headers; spanNames: string[] }> = [];
  let open = 0;
  let maxOpen = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      open++;
      maxOpen = Math.max(maxOpen, open);
      let closed = false;
      const close = () => {
        if (!closed) open--;
        closed = true;
      };
      req.signal.addEventListener("abort", close);
      const contentType = req.headers.get("content-type") ?? "";
      const body = await req.arrayBuffer();
      const spanNames = contentType === "application/json"
        ? JSON.parse(new TextDecoder().decode(body)).resourceSpans[0].scopeSpans[0].spans.map((s: { name: string }) => s.name)
        : [];
      bodies.push({ contentType, headers: req.headers, spanNames });
      if (mode === "never") return new Promise<Response>(() => {});
      close();
      return new Response(mode === "ok" ? "{}" : "boom", { status: mode === "ok" ? 200 : 500 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/v1/traces`,
    bodies,
    get maxOpen() {
      return maxOpen;
    },
    stop: () => server.stop(true),
  };
}

function configFor(endpoint: string, overrides: Partial<TraceExportConfig> = {}): TraceExportConfig {
  return {
    endpoint,
    protocol: "http/json",
    headers: {},
    timeoutMs: 1000,
    resource: { "service.name": "test" },
    sampler: { name: "always_on", ratio: 1 },
    maxQueueSize: 100,
    scheduleDelayMs: 20,
    maxExportBatchSize: 10,
    ...overrides,
  };
}

/** Hooks that count what the exporter reports. */
function recordingHooks() {
  const dropped: Record<DropReason, number> = { queue_full: 0, export_failed: 0, timeout: 0 };
  const counts = { exported: 0 };
  const lines: string[] = [];
  const hooks: ExportHooks = {
    dropped: (count, reason) => {
      dropped[reason] += count;
    },
    exported: (count) => {
      counts.exported += count;
    },
    log: (line) => lines.push(line),
  };
  return { hooks, dropped, counts, lines };
}

async function until(condition: () => boolean, limitMs = 2000): Promise<void> {
  const deadline = performance.now() + limitMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error("condition not met in time");
    await Bun.sleep(2);
  }
}

function spans(count: number, from = 0): SpanData[] {
  return Array.from({ length: count }, (_, i) => numberedSpan(from + i));
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function started(mode: Mode) {
  const c = collector(mode);
  cleanups.push(c.stop);
  return c;
}

function exporterFor(config: TraceExportConfig, hooks: ExportHooks, fetchImpl?: typeof fetch) {
  const exporter = fetchImpl === undefined ? new BatchSpanExporter(config, hooks) : new BatchSpanExporter(config, hooks, fetchImpl);
  cleanups.push(() => exporter.close());
  return exporter;
}

describe("BatchSpanExporter against a collector that answers", () => {
  test("full batches leave at once, the rest after the schedule delay, in order", async () => {
    const c = started("ok");
    const r = recordingHooks();
    const exporter = exporterFor(configFor(c.url, { scheduleDelayMs: 50 }), r.hooks);
    for (const span of spans(25)) exporter.add(span);
    await until(() => r.counts.exported === 20);
    expect(c.bodies.map((b) => b.spanNames.length)).toEqual([10, 10]);
    await until(() => r.counts.exported === 25);
    expect(c.bodies.map((b) => b.spanNames.length)).toEqual([10, 10, 5]);
    expect(c.bodies.flatMap((b) => b.spanNames)).toEqual(spans(25).map((s) => s.name));
    expect(c.maxOpen).toBe(1);
    expect(r.dropped).toEqual({ queue_full: 0, export_failed: 0, timeout: 0 });
  });

  test("a lone span waits for the schedule delay", async () => {
    const c = started("ok");
    const r = recordingHooks();
    const exporter = exporterFor(configFor(c.url, { scheduleDelayMs: 60 }), r.hooks);
    const t0 = performance.now();
    exporter.add(numberedSpan(1));
    await until(() => r.counts.exported === 1);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(55);
  });

  test("headers from the config and the content type of each protocol", async () => {
    const c = started("ok");
    const r = recordingHooks();
    const proto = exporterFor(configFor(c.url, { protocol: "http/protobuf", headers: { authorization: "Bearer t", "x-tenant": "a" } }), r.hooks);
    proto.add(numberedSpan(1));
    await proto.flush(1000);
    const json = exporterFor(configFor(c.url, { headers: { "content-type": "text/plain" } }), r.hooks);
    json.add(numberedSpan(2));
    await json.flush(1000);
    expect(c.bodies.map((b) => b.contentType)).toEqual(["application/x-protobuf", "application/json"]);
    expect(c.bodies[0]!.headers.get("authorization")).toBe("Bearer t");
    expect(c.bodies[0]!.headers.get("x-tenant")).toBe("a");
    expect(r.counts.exported).toBe(2);
  });

  test("flush sends everything queued, batch after batch, then resolves", async () => {
    const c = started("ok");
    const r = recordingHooks();
    const exporter = exporterFor(configFor(c.url, { scheduleDelayMs: 60_000 }), r.hooks);
    for (const span of spans(35)) exporter.add(span);
    await exporter.flush(2000);
    expect(r.counts.exported).toBe(35);
    expect(exporter.queued).toBe(0);
    expect(exporter.busy).toBe(false);
    expect(c.bodies.length).toBe(4);
  });
});

describe("BatchSpanExporter when export fails", () => {
  test("HTTP 500 drops the batch (counted, logged once), not retried; add stays instant", async () => {
    const c = started("error500");
    const r = recordingHooks();
    const exporter = exporterFor(configFor(c.url, { maxQueueSize: 2000 }), r.hooks);
    const t0 = performance.now();
    for (const span of spans(1000)) exporter.add(span);
    expect(performance.now() - t0).toBeLessThan(50);
    await until(() => r.dropped.export_failed === 1000);
    await Bun.sleep(60);
    expect(c.bodies.length).toBe(100); // each batch once
    expect(r.counts.exported).toBe(0);
    expect(r.lines.length).toBe(1);
    expect(r.lines[0]).toContain("HTTP 500");
  });

  test("a refused connection drops the batch as export_failed", async () => {
    const c = started("ok");
    const url = c.url;
    c.stop(); // nothing listens on the port any more
    const r = recordingHooks();
    const exporter = exporterFor(configFor(url), r.hooks);
    for (const span of spans(3)) exporter.add(span);
    await exporter.flush(1000);
    expect(r.dropped.export_failed).toBe(3);
    expect(r.lines.length).toBe(1);
  });

  test("a span id that is not hex drops its batch as export_failed, the exporter goes on", async () => {
    const c = started("ok");
    const r = recordingHooks();
    const exporter = exporterFor(configFor(c.url, { maxExportBatchSize: 2 }), r.hooks);
    exporter.add({ ...numberedSpan(1), spanId: "not hex" });
    exporter.add(numberedSpan(2));
    exporter.add(numberedSpan(3));
    await exporter.flush(1000);
    expect(r.dropped.export_failed).toBe(2);
    expect(r.counts.exported).toBe(1);
    expect(r.lines.some((l) => l.includes("not hex"))).toBe(true);
  });

  test("a throwing hook never reaches add", async () => {
    const c = started("error500");
    const exporter = exporterFor(configFor(c.url, { maxQueueSize: 1 }), {
      dropped: () => {
        throw new Error("hook broke");
      },
      log: () => {
        throw new Error("log broke");
      },
    });
    exporter.add(numberedSpan(1));
    expect(() => exporter.add(numberedSpan(2))).not.toThrow();
    await exporter.flush(1000);
  });
});

describe("BatchSpanExporter against a collector that never answers", () => {
  test("one request at a time, each ended by the timeout; a full queue drops; flush(5) returns in time", async () => {
    const c = started("never");
    const r = recordingHooks();
    const exporter = exporterFor(configFor(c.url, { timeoutMs: 80, maxQueueSize: 30, maxExportBatchSize: 10, scheduleDelayMs: 5 }), r.hooks);
    for (const span of spans(10)) exporter.add(span);
    await until(() => c.bodies.length === 1);
    expect(exporter.busy).toBe(true);
    // while the first batch hangs: the queue fills to 30, the 20 beyond are dropped at once
    const t0 = performance.now();
    for (const span of spans(50, 100)) exporter.add(span);
    expect(performance.now() - t0).toBeLessThan(20);
    expect(r.dropped.queue_full).toBe(20);
    expect(exporter.queued).toBe(30);

    const f0 = performance.now();
    await exporter.flush(5);
    const flushMs = performance.now() - f0;
    expect(flushMs).toBeGreaterThanOrEqual(4);
    expect(flushMs).toBeLessThan(40);

    await until(() => r.dropped.timeout === 10);
    expect(r.dropped.timeout).toBe(10);
    await until(() => c.bodies.length >= 3);
    expect(c.maxOpen).toBe(1);
    expect(r.lines[0]).toContain("no answer within 80 ms");
  });

  test("close abandons the request in flight and the queue, and takes no more spans", async () => {
    const c = started("never");
    const r = recordingHooks();
    const exporter = exporterFor(configFor(c.url, { timeoutMs: 10_000, scheduleDelayMs: 1 }), r.hooks);
    for (const span of spans(15)) exporter.add(span);
    await until(() => c.bodies.length === 1);
    exporter.close();
    expect(r.dropped.export_failed).toBe(5);
    await until(() => r.dropped.timeout === 10);
    exporter.add(numberedSpan(99));
    expect(r.dropped.queue_full).toBe(1);
    await exporter.flush(50);
    expect(c.bodies.length).toBe(1);
  });
});

describe("BatchSpanExporter and the process", () => {
  test("queued spans waiting for the schedule delay do not keep a process alive", async () => {
    const script = `
      import { BatchSpanExporter } from ${JSON.stringify(`${import.meta.dir}/exporter.ts`)};
      import { numberedSpan } from ${JSON.stringify(`${import.meta.dir}/testing.ts`)};
      const e = new BatchSpanExporter({ endpoint: "http://127.0.0.1:9/v1/traces", protocol: "http/json", headers: {}, timeoutMs: 10000,
        resource: {}, sampler: { name: "always_on", ratio: 1 }, maxQueueSize: 10, scheduleDelayMs: 10000, maxExportBatchSize: 5 }, { dropped() {} });
      e.add(numberedSpan(1));
    `;
    const t0 = performance.now();
    const child = Bun.spawn([process.execPath, "-e", script], { stdout: "ignore", stderr: "pipe" });
    const code = await child.exited;
    expect(await new Response(child.stderr).text()).toBe("");
    expect(code).toBe(0);
    expect(performance.now() - t0).toBeLessThan(3000);
  });
});
