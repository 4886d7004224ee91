/**
 * The exporter's two encodings against the official definitions: what encode-proto.ts writes,
 * decoded by protoc, and what encode-json.ts writes, read by the OTLP JSON rules, are the same
 * spans as those encoded. Also the receiver's modes, for the integration tests that use it.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { exportConfigFrom } from "../../shared/telemetry/otlp/config.ts";
import { encodeTraceRequestJson } from "../../shared/telemetry/otlp/encode-json.ts";
import { encodeTraceRequestProto } from "../../shared/telemetry/otlp/encode-proto.ts";
import { BatchSpanExporter, type DropReason } from "../../shared/telemetry/otlp/exporter.ts";
import { CHILD_SPAN, numberedSpan, ROOT_SPAN, SAMPLE_RESOURCE, SAMPLE_SCOPE } from "../../shared/telemetry/otlp/testing.ts";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./otlp-receiver.ts";

const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.stop()));
});

function started(mode: "ok" | "error500" | "slow", slowMs?: number): OtlpReceiver {
  const receiver = slowMs === undefined ? startOtlpReceiver({ mode }) : startOtlpReceiver({ mode, slowMs });
  receivers.push(receiver);
  return receiver;
}

function post(receiver: OtlpReceiver, contentType: string, body: Uint8Array | string, signal?: AbortSignal): Promise<Response> {
  return fetch(`${receiver.endpoint}/v1/traces`, { method: "POST", headers: { "content-type": contentType }, body, ...(signal === undefined ? {} : { signal }) });
}

const RESOURCE = { "service.name": "cni-plugins", "host.name": "node-1", "process.pid": 4242 };
const SCOPE = { name: "cni-plugins", version: "1.2.3" };

/** The spans of testing.ts as a receiver must see them (written out, not derived by the encoders' code). */
const EXPECTED: ReceivedSpan[] = [
  {
    traceId: "0af7651916cd43dd8448eb211c80319c",
    spanId: "b7ad6b7169203331",
    parentSpanId: "",
    traceState: "",
    name: "cni ADD bridge",
    kind: 2,
    startNs: 1_700_000_000_123_456_000n,
    endNs: 1_700_000_000_130_789_000n,
    attributes: { "cni.command": "ADD", "cni.plugin": "bridge", "cni.ifname": "eth0", "cni.exit_code": 0, "cni.cached": false, "cni.ratio": 0.5 },
    status: { code: 1, message: "" },
    resource: RESOURCE,
    scope: SCOPE,
  },
  {
    traceId: "0af7651916cd43dd8448eb211c80319c",
    spanId: "00f067aa0ba902b7",
    parentSpanId: "b7ad6b7169203331",
    traceState: "vendor=a,other=b",
    name: "ipam allocate",
    kind: 1,
    startNs: 1_700_000_000_124_001_000n,
    endNs: 1_700_000_000_125_500_000n,
    attributes: { "error.type": "ENOSPC", retries: -3, big: 9_007_199_254_740_991, empty: "", unicode: "réseau ✓", yes: true },
    status: { code: 2, message: "no address left in 10.0.0.0/30" },
    resource: RESOURCE,
    scope: SCOPE,
  },
];

describe("the encodings decode to the spans encoded", () => {
  test("protobuf, decoded by protoc against the official definitions", async () => {
    const receiver = started("ok");
    const response = await post(receiver, "application/x-protobuf", encodeTraceRequestProto(SAMPLE_RESOURCE, SAMPLE_SCOPE, [ROOT_SPAN, CHILD_SPAN]));
    expect(receiver.decodeErrors()).toEqual([]);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/x-protobuf");
    expect(receiver.spans()).toEqual(EXPECTED);
  });

  test("JSON, read by the OTLP JSON rules", async () => {
    const receiver = started("ok");
    const response = await post(receiver, "application/json", encodeTraceRequestJson(SAMPLE_RESOURCE, SAMPLE_SCOPE, [ROOT_SPAN, CHILD_SPAN]));
    expect(receiver.decodeErrors()).toEqual([]);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({});
    expect(receiver.spans()).toEqual(EXPECTED);
  });

  test("fractional doubles, large ints and non-finite doubles agree in both encodings", async () => {
    const receiver = started("ok");
    const span = { ...ROOT_SPAN, attributes: { third: 1 / 3, huge: 1e300, negative: -(2 ** 40), inf: Infinity, neg_inf: -Infinity, nan: NaN } };
    await post(receiver, "application/x-protobuf", encodeTraceRequestProto({}, SAMPLE_SCOPE, [span]));
    await post(receiver, "application/json", encodeTraceRequestJson({}, SAMPLE_SCOPE, [span]));
    expect(receiver.decodeErrors()).toEqual([]);
    const [fromProto, fromJson] = receiver.spans();
    expect(fromProto!.attributes).toEqual({ third: 1 / 3, huge: 1e300, negative: -(2 ** 40), inf: Infinity, neg_inf: -Infinity, nan: NaN });
    expect(fromJson!.attributes).toEqual(fromProto!.attributes);
    expect(fromProto!.resource).toEqual({});
  });

  test("a body the definitions do not read is a decode error, answered 400", async () => {
    const receiver = started("ok");
    // field 16 (Span.flags in newer definitions) is not in the transcribed subset: strictness shows it
    const unknownField = Uint8Array.from([0x0a, 0x0a, 0x12, 0x08, 0x12, 0x06, 0x85, 0x01, 0x01, 0x00, 0x00, 0x00]);
    expect((await post(receiver, "application/x-protobuf", unknownField)).status).toBe(400);
    expect((await post(receiver, "application/x-protobuf", Uint8Array.from([0x0a, 0xff]))).status).toBe(400);
    expect((await post(receiver, "application/json", '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AAE="}]}]}]}')).status).toBe(400);
    expect((await post(receiver, "text/plain", "x")).status).toBe(400);
    expect(receiver.decodeErrors()).toHaveLength(4);
    expect(receiver.requests).toBe(4);
    expect(receiver.spans()).toEqual([]);
  });
});

describe("the exporter through the receiver", () => {
  for (const protocol of ["http/protobuf", "http/json"] as const) {
    test(`${protocol}: configured from the environment, spans arrive with the resource`, async () => {
      const receiver = started("ok");
      const config = exportConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_RESOURCE_ATTRIBUTES: "k8s.node.name=n1" });
      const exported: number[] = [];
      const exporter = new BatchSpanExporter(config!, { dropped: () => {}, exported: (n) => exported.push(n) });
      for (let i = 0; i < 3; i++) exporter.add(numberedSpan(i));
      await exporter.flush(3000);
      exporter.close();
      expect(receiver.decodeErrors()).toEqual([]);
      expect(receiver.contentTypes()).toEqual([protocol === "http/json" ? "application/json" : "application/x-protobuf"]);
      expect(receiver.spans().map((s) => s.name)).toEqual(["span 0", "span 1", "span 2"]);
      expect(receiver.spans()[0]!.resource).toEqual({ "service.name": "cni-plugins", "k8s.node.name": "n1" });
      expect(exported).toEqual([3]);
    });
  }
});

describe("receiver modes", () => {
  test("error500 decodes, then answers 500; the exporter counts the batch as dropped", async () => {
    const receiver = started("error500");
    const dropped: Array<[number, DropReason]> = [];
    const exporter = new BatchSpanExporter(exportConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint })!, { dropped: (n, r) => dropped.push([n, r]) });
    exporter.add(numberedSpan(1));
    await exporter.flush(3000);
    exporter.close();
    expect(dropped).toEqual([[1, "export_failed"]]);
    expect(receiver.spans().map((s) => s.name)).toEqual(["span 1"]);
  });

  test("slow answers after slowMs, a client may give up first, and stop does not wait for it", async () => {
    const receiver = started("slow", 150);
    const t0 = performance.now();
    const response = await post(receiver, "application/json", encodeTraceRequestJson({}, SAMPLE_SCOPE, [ROOT_SPAN]));
    expect(response.status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);

    const impatient = post(receiver, "application/json", encodeTraceRequestJson({}, SAMPLE_SCOPE, [ROOT_SPAN]), AbortSignal.timeout(30));
    await expect(impatient).rejects.toThrow();
    expect(receiver.requests).toBe(2);

    const slowest = started("slow");
    const pending = post(slowest, "application/json", encodeTraceRequestJson({}, SAMPLE_SCOPE, [ROOT_SPAN])).catch(() => undefined);
    await slowest.waitForSpans(1);
    const s0 = performance.now();
    await slowest.stop();
    await pending;
    expect(performance.now() - s0).toBeLessThan(1000);
  });
});
