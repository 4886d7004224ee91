/**
 * The agent's metrics (docs/observability.md): every plugin call it serves or hears of (a
 * standalone process reports its calls over the report socket, report-socket.ts), its own pool and
 * admission, the address usage allocating IPAM plugins report, the dhcp daemon's leases and the
 * span export. Recording never waits and never fails a call; label values come from bounded sets
 * (plugins of this build, CNI commands, codes 0-999, refusal reasons, phases) or from the node's
 * own network configuration (IPAM networks and ranges, at most MAX_IPAM_SERIES of them).
 */
import { Counter, Gauge, Histogram, MetricsRegistry, type Format } from "../shared/metrics/registry.ts";
import type { CallReport } from "../shared/telemetry/report.ts";
import { REFUSAL_REASONS, type RefusalReason } from "./refusal.ts";

/** The most IPAM (network, range) pairs followed; more are not (an operator has fewer). */
const MAX_IPAM_SERIES = 4096;

/** What the pool says at a scrape. */
export interface PoolFigures {
  inFlight: number;
  threads: number;
}

export class AgentMetrics {
  readonly #registry = new MetricsRegistry();
  readonly #calls: Counter;
  readonly #callDuration: Histogram;
  readonly #phaseDuration: Histogram;
  readonly #inFlight: Gauge;
  readonly #workers: Gauge;
  readonly #queueWait: Histogram;
  readonly #refusals: Counter;
  readonly #restarts: Counter;
  readonly #ipam: Gauge;
  readonly #ipamSeries = new Set<string>();
  readonly #reports: Counter;
  readonly #spansExported: Counter;
  readonly #spansDropped: Counter;
  readonly #dhcpLeases: Gauge;
  readonly #dhcpRenewals: Counter;
  readonly #dhcpFailures: Counter;
  readonly #pool: () => PoolFigures;

  /** `restarts`: how often this agent restarted itself before this image (carried across execve). */
  constructor(pool: () => PoolFigures, restarts: number) {
    const r = this.#registry;
    this.#pool = pool;
    this.#calls = r.counter("cni_plugin_calls_total", "Plugin calls by plugin, CNI command and result code (0: success, else the CNI error code).", ["plugin", "command", "code"]);
    this.#callDuration = r.histogram("cni_plugin_call_duration_seconds", "Time a plugin call took, from its start to its answer.", ["plugin", "command"]);
    this.#phaseDuration = r.histogram("cni_plugin_phase_duration_seconds", "Time one call spent in each phase it met (config, ipam, delegate, netns, link, address, route, firewall, tc).", ["plugin", "command", "phase"]);
    this.#inFlight = r.gauge("cni_agent_calls_in_flight", "Calls the agent runs or holds unaccepted now.");
    this.#workers = r.gauge("cni_agent_workers", "Worker threads of the agent now.");
    this.#queueWait = r.histogram("cni_agent_queue_wait_seconds", "Time an accepted call waited for a worker thread or for its attachment.");
    this.#refusals = r.counter("cni_agent_refusals_total", "Calls the agent refused (their shims ran the standalone executable), by reason.", ["reason"]);
    this.#restarts = r.counter("cni_agent_restarts_total", "Graceful restarts of the agent (SIGHUP, --max-requests, --max-rss) since it was started.");
    this.#ipam = r.gauge("cni_ipam_addresses", "Addresses of an IPAM range used and free, as the last ADD, DEL or GC on this node left them.", ["plugin", "network", "range", "state"]);
    this.#reports = r.counter("cni_agent_standalone_reports_total", "Reports of calls run standalone received on the report socket, by outcome (accepted, invalid).", ["outcome"]);
    this.#spansExported = r.counter("cni_agent_spans_exported_total", "Spans the OTLP collector accepted.");
    this.#spansDropped = r.counter("cni_agent_spans_dropped_total", "Spans never exported, by reason (queue_full, export_failed, timeout).", ["reason"]);
    this.#dhcpLeases = r.gauge("cni_dhcp_leases", "DHCP leases the dhcp daemon in the agent holds now.");
    this.#dhcpRenewals = r.counter("cni_dhcp_lease_renewals_total", "DHCP lease renewals and rebinds by the dhcp daemon in the agent, by outcome (ok, failed).", ["outcome"]);
    this.#dhcpFailures = r.counter("cni_dhcp_lease_failures_total", "DHCP leases the dhcp daemon in the agent could not acquire or lost, by stage (acquire, renew, release).", ["stage"]);
    this.#restarts.inc([], restarts);
    // Every reason shows, at 0 until it happens: an alert's rate() then starts from a sample.
    for (const reason of REFUSAL_REASONS) this.#refusals.inc([reason], 0);
  }

  /** One finished plugin invocation (a delegated IPAM call is one of its own). */
  call(r: CallReport): void {
    this.#calls.inc([r.plugin, r.command, String(r.code)]);
    this.#callDuration.observe([r.plugin, r.command], r.durationS);
    for (const [phase, s] of r.phases) this.#phaseDuration.observe([r.plugin, r.command, phase], s);
    for (const u of r.ipam) {
      const key = `${u.plugin}\0${u.network}\0${u.range}`;
      if (!this.#ipamSeries.has(key)) {
        if (this.#ipamSeries.size >= MAX_IPAM_SERIES) continue;
        this.#ipamSeries.add(key);
      }
      this.#ipam.set([u.plugin, u.network, u.range, "used"], u.used);
      this.#ipam.set([u.plugin, u.network, u.range, "free"], u.free);
    }
  }

  refused(reason: RefusalReason): void {
    this.#refusals.inc([reason]);
  }

  queueWait(seconds: number): void {
    this.#queueWait.observe([], seconds);
  }

  standaloneReport(outcome: "accepted" | "invalid"): void {
    this.#reports.inc([outcome]);
  }

  spansExported(n: number): void {
    this.#spansExported.inc([], n);
  }

  spansDropped(n: number, reason: string): void {
    this.#spansDropped.inc([reason], n);
  }

  /**
   * The events of the dhcp daemon running in the agent (ipam/dhcp/daemon/lease.ts LeaseEvents);
   * from now on its metrics show, at 0 until something happens.
   */
  dhcpEvents() {
    this.#dhcpLeases.add([], 0);
    for (const outcome of ["ok", "failed"]) this.#dhcpRenewals.inc([outcome], 0);
    for (const stage of ["acquire", "renew", "release"]) this.#dhcpFailures.inc([stage], 0);
    return {
      held: (n: number) => this.#dhcpLeases.set([], n),
      renewal: (ok: boolean) => this.#dhcpRenewals.inc([ok ? "ok" : "failed"]),
      failure: (stage: "acquire" | "renew" | "release") => this.#dhcpFailures.inc([stage]),
    };
  }

  /** The exposition, with the pool's figures of now. */
  expose(format: Format): string {
    const pool = this.#pool();
    this.#inFlight.set([], pool.inFlight);
    this.#workers.set([], pool.threads);
    return this.#registry.expose(format);
  }
}
