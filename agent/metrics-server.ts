/**
 * The agent's metrics endpoint (`--metrics-address`): GET /metrics in the Prometheus text format,
 * or in OpenMetrics when the scraper's Accept asks for it. Nothing else is served.
 */
import { CONTENT_TYPE, formatFor } from "../shared/metrics/registry.ts";
import type { MetricsAddress } from "./flags.ts";
import type { AgentMetrics } from "./metrics.ts";

export interface MetricsServer {
  /** Where it listens (the port the kernel chose when 0 was asked for). */
  readonly url: string;
  stop(): void;
}

/** Listens at `address`; throws when it cannot (the port is taken, the address is not the node's). */
export function serveMetrics(address: MetricsAddress, metrics: AgentMetrics): MetricsServer {
  const server = Bun.serve({
    hostname: address.hostname,
    port: address.port,
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path !== "/metrics") return new Response("not found: the metrics are at /metrics\n", { status: 404 });
      if (req.method !== "GET" && req.method !== "HEAD") return new Response("method not allowed\n", { status: 405, headers: { Allow: "GET, HEAD" } });
      const format = formatFor(req.headers.get("accept"));
      return new Response(metrics.expose(format), { headers: { "Content-Type": CONTENT_TYPE[format] } });
    },
  });
  const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname;
  return {
    url: `http://${host}:${server.port}/metrics`,
    stop: () => void server.stop(true),
  };
}
