/**
 * The public face of shared/metrics/: counters, gauges and histograms written out for Prometheus.
 * Every file not re-exported here is private to the package; other packages import the modules
 * named here, never this file (build/lint-layers.ts).
 */
export { CONTENT_TYPE, Counter, DURATION_BUCKETS, formatFor, Gauge, Histogram, MetricsRegistry } from "./registry.ts";
export type { Format, LabelValues } from "./registry.ts";
