/**
 * Sample spans for the exporter's tests and the receiver's conformance test: a root span and an
 * erring child with every kind of attribute value and microsecond start and end times.
 */
import { SPAN_KIND_INTERNAL, SPAN_KIND_SERVER, STATUS_CODE_ERROR, STATUS_CODE_OK, type SpanData } from "../span.ts";

export const SAMPLE_RESOURCE = { "service.name": "cni-plugins", "host.name": "node-1", "process.pid": 4242 } as const;
export const SAMPLE_SCOPE = { name: "cni-plugins", version: "1.2.3" } as const;

export const ROOT_SPAN: SpanData = {
  traceId: "0af7651916cd43dd8448eb211c80319c",
  spanId: "b7ad6b7169203331",
  parentSpanId: "",
  traceState: "",
  name: "cni ADD bridge",
  kind: SPAN_KIND_SERVER,
  startMs: 1_700_000_000_123.456,
  endMs: 1_700_000_000_130.789,
  attributes: { "cni.command": "ADD", "cni.plugin": "bridge", "cni.ifname": "eth0", "cni.exit_code": 0, "cni.cached": false, "cni.ratio": 0.5 },
  status: { code: STATUS_CODE_OK, message: "" },
};

export const CHILD_SPAN: SpanData = {
  traceId: "0af7651916cd43dd8448eb211c80319c",
  spanId: "00f067aa0ba902b7",
  parentSpanId: "b7ad6b7169203331",
  traceState: "vendor=a,other=b",
  name: "ipam allocate",
  kind: SPAN_KIND_INTERNAL,
  startMs: 1_700_000_000_124.001,
  endMs: 1_700_000_000_125.5,
  attributes: { "error.type": "ENOSPC", "retries": -3, "big": 9_007_199_254_740_991, "empty": "", "unicode": "réseau ✓", "yes": true },
  status: { code: STATUS_CODE_ERROR, message: "no address left in 10.0.0.0/30" },
};

/** A span with a fresh span id (`n` as its last digits), for tests that need many. */
export function numberedSpan(n: number): SpanData {
  return { ...ROOT_SPAN, spanId: n.toString(16).padStart(16, "0"), name: `span ${n}` };
}
