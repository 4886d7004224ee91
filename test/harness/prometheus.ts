/**
 * A real Prometheus server (Debian's `prometheus` package, 2.42) for tests that check what a
 * metrics endpoint exposes the way an operator reads it: scraped by Prometheus and asked in PromQL
 * through its HTTP API, never by parsing the exposition in the test.
 *
 * {@link startPrometheus} runs its own `/usr/bin/prometheus` (never the system service) on a free
 * loopback port, with a config file generated for one scrape job (`cni`) over the given targets at
 * a 1 s interval, its TSDB in a fresh temp dir (also its HOME and cwd, so nothing is written
 * elsewhere), and waits for `/-/ready`. It is ended by its pid, and the dir removed, by `stop()`,
 * by the fixture cleanup (cleanup.ts) after the test, or by the exit hook of a dying test process.
 */
import type { Subprocess } from "bun";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerCleanup } from "./cleanup.ts";

export const PROMETHEUS_BINARY = "/usr/bin/prometheus";

/** The job name of the generated scrape config (the `job` label of every scraped series). */
export const SCRAPE_JOB = "cni";

/** One element of an instant vector; `value` is the sample (NaN and ±Inf as numbers). */
export interface Sample {
  metric: Record<string, string>;
  value: number;
}
export type Vector = Sample[];

export interface RunningPrometheus {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  pid: number;
  /** An instant query (`/api/v1/query`, evaluated now); a scalar answers as one sample without labels. */
  query(promql: string): Promise<Vector>;
  /**
   * Waits until every target has been scraped successfully (`up` == 1) at least `n` more times than
   * when called (default 1); throws after a bounded wait (default: n + 2 intervals + 15 s), with
   * the targets' last errors.
   */
  waitForScrapes(n?: number, timeoutMs?: number): Promise<void>;
  /** What Prometheus logged so far (for failure messages). */
  log(): string;
  /** SIGTERM (SIGKILL after 5 s) to its pid, then removes its dir. Safe to call twice. */
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** Scrape interval in whole seconds (default 1). */
  scrapeIntervalS?: number;
  /** How long to wait for `/-/ready` (default 30 000 ms). */
  readyTimeoutMs?: number;
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (bound to :0 and released). Another process
 * may take it before the caller binds it: callers retry on a failed bind.
 */
export async function freeLoopbackPort(): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error("no port from a bind to 127.0.0.1:0"))));
    });
  });
}

/** The generated prometheus.yml: one job scraping `targets` every `intervalS` seconds. */
export function prometheusConfig(targets: string[], intervalS: number): string {
  const every = `${intervalS}s`;
  return [
    "global:",
    `  scrape_interval: ${every}`,
    `  scrape_timeout: ${every}`,
    `  evaluation_interval: ${every}`,
    "scrape_configs:",
    `  - job_name: ${SCRAPE_JOB}`,
    `    scrape_interval: ${every}`,
    `    scrape_timeout: ${every}`,
    "    metrics_path: /metrics",
    "    static_configs:",
    `      - targets: [${targets.map((t) => JSON.stringify(t)).join(", ")}]`,
    "",
  ].join("\n");
}

function parseValue(v: unknown): number {
  // The API sends sample values as strings: "1", "0.055", "NaN", "+Inf", "-Inf".
  return typeof v === "string" ? Number(v) : Number.NaN;
}

/** Starts Prometheus scraping `targets` ("127.0.0.1:PORT") and waits until it is ready. */
export async function startPrometheus(targets: string[], opts: PrometheusOptions = {}): Promise<RunningPrometheus> {
  if (!existsSync(PROMETHEUS_BINARY)) throw new Error(`${PROMETHEUS_BINARY} is missing (Debian package prometheus; test/setup-host.sh installs it)`);
  if (targets.length === 0) throw new Error("startPrometheus: no targets");
  const intervalS = opts.scrapeIntervalS ?? 1;
  if (!Number.isInteger(intervalS) || intervalS < 1) throw new Error(`startPrometheus: scrapeIntervalS ${intervalS} is not a whole number of seconds >= 1`);
  const readyMs = opts.readyTimeoutMs ?? 30_000;
  const root = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
  const dir = mkdtempSync(join(root, "cni-prometheus-"));
  const configFile = join(dir, "prometheus.yml");
  const logFile = join(dir, "prometheus.log");
  writeFileSync(configFile, prometheusConfig(targets, intervalS));
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "");

  let proc: Subprocess | undefined;
  const kill = () => {
    if (proc !== undefined && proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  };
  const forget = registerCleanup(`prometheus in ${dir}`, () => {
    kill();
    rmSync(dir, { recursive: true, force: true });
  });

  const spawn = (port: number): Subprocess =>
    Bun.spawn(
      [
        PROMETHEUS_BINARY,
        `--config.file=${configFile}`,
        `--web.listen-address=127.0.0.1:${port}`,
        `--storage.tsdb.path=${join(dir, "data")}`,
        "--storage.tsdb.retention.time=1h",
        "--log.level=warn",
      ],
      {
        cwd: dir,
        env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", HOME: dir },
        stdin: "ignore",
        stdout: Bun.file(logFile),
        stderr: Bun.file(logFile),
      },
    );

  // The port is free when picked; another process may take it before Prometheus binds it, and
  // then Prometheus exits at once: pick another (three tries).
  let url = "";
  try {
    for (let attempt = 1; ; attempt++) {
      const port = await freeLoopbackPort();
      url = `http://127.0.0.1:${port}`;
      proc = spawn(port);
      const ready = await waitReady(url, proc, readyMs);
      if (ready === "ready") break;
      kill();
      await proc.exited;
      if (ready === "timeout" || attempt >= 3) throw new Error(`prometheus not ready at ${url} (${ready}); its log:\n${log()}`);
    }
  } catch (err) {
    forget();
    throw err;
  }
  const running = proc!;

  const api = async (path: string, params: Record<string, string> = {}): Promise<any> => {
    const qs = new URLSearchParams(params).toString();
    const res = await fetch(`${url}${path}${qs === "" ? "" : `?${qs}`}`, { signal: AbortSignal.timeout(10_000) });
    const body = (await res.json().catch(() => undefined)) as any;
    if (body?.status !== "success") throw new Error(`prometheus ${path} ${JSON.stringify(params)}: HTTP ${res.status} ${JSON.stringify(body)}`);
    return body.data;
  };

  const query = async (promql: string): Promise<Vector> => {
    const data = await api("/api/v1/query", { query: promql });
    switch (data.resultType) {
      case "vector":
        return (data.result as { metric: Record<string, string>; value: [number, string] }[]).map((s) => ({ metric: s.metric, value: parseValue(s.value[1]) }));
      case "scalar":
        return [{ metric: {}, value: parseValue(data.result[1]) }];
      default:
        throw new Error(`prometheus: ${promql} answers a ${data.resultType}, not an instant vector`);
    }
  };

  /** Successful scrapes so far, per target (`up` is 1 per successful scrape, 0 per failed one). */
  const scrapes = async (): Promise<Map<string, number>> => {
    const counts = new Map<string, number>(targets.map((t) => [t, 0]));
    for (const s of await query(`sum_over_time(up{job="${SCRAPE_JOB}"}[1h])`)) counts.set(s.metric.instance ?? "", s.value);
    return counts;
  };

  const waitForScrapes = async (n = 1, timeoutMs?: number): Promise<void> => {
    const before = await scrapes();
    // n intervals, plus the first scrape's offset (up to one interval), plus slack for a slow host.
    const deadline = Date.now() + (timeoutMs ?? (n + 2) * intervalS * 1000 + 15_000);
    for (;;) {
      const now = await scrapes();
      if (targets.every((t) => (now.get(t) ?? 0) >= (before.get(t) ?? 0) + n)) return;
      if (Date.now() > deadline) {
        const active = ((await api("/api/v1/targets").catch(() => ({ activeTargets: [] }))).activeTargets ?? []) as any[];
        const state = active.map((t) => `${t.labels?.instance}: health=${t.health} lastError=${JSON.stringify(t.lastError)} lastScrape=${t.lastScrape}`).join("; ");
        throw new Error(`prometheus: not ${n} more successful scrapes of ${targets.join(", ")} in time (before ${JSON.stringify([...before])}, now ${JSON.stringify([...now])}); targets: ${state}`);
      }
      await Bun.sleep(200);
    }
  };

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      if (running.exitCode === null && running.signalCode === null) {
        running.kill("SIGTERM");
        const ended = await Promise.race([running.exited.then(() => true), Bun.sleep(5000).then(() => false)]);
        if (!ended) {
          running.kill("SIGKILL");
          await running.exited;
        }
      }
      forget();
    })());

  return { url, pid: running.pid, query, waitForScrapes, log, stop };
}

/** Polls `/-/ready` until it answers 200, the process exits, or `ms` pass. */
async function waitReady(url: string, proc: Subprocess, ms: number): Promise<"ready" | "exited" | "timeout"> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null) return "exited";
    try {
      const res = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) return "ready";
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) return "timeout";
    await Bun.sleep(50);
  }
}
