import { describe, expect, test } from "bun:test";
import { CallTelemetry } from "./call.ts";
import { delegateTraceParent, describeCall, phaseEnd, phaseStart, recordingCall, reportIpamUsage } from "./invocation.ts";
import { STATUS_CODE_ERROR } from "./span.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const always = { sample: () => true, recordSpans: true };
/** The default sampler (a root is sampled, a child as its parent), no span recorded: an agent that exports none. */
const notExporting = { sample: (_trace: string, parent: boolean | undefined) => parent ?? true, recordSpans: false };

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe("CallTelemetry", () => {
  test("phases marked inside an invocation are its own; outside one they are nothing", async () => {
    const t = phaseStart();
    phaseEnd("link", t);
    expect(recordingCall()).toBe(false);
    const call = new CallTelemetry("bridge", { CNI_COMMAND: "ADD" }, always);
    await call.run(async () => {
      expect(recordingCall()).toBe(true);
      for (const phase of ["link", "link", "address", "link"] as const) {
        const s = phaseStart();
        busy(1);
        phaseEnd(phase, s);
      }
      await Bun.sleep(1); // the context follows the awaits
      const s = phaseStart();
      const inner = phaseStart(); // nested: counted as part of the outer phase
      busy(1);
      phaseEnd("route", inner);
      phaseEnd("firewall", s);
    });
    const r = call.finish(0, "");
    expect(r.phases.map(([p]) => p)).toEqual(["link", "address", "firewall"]); // in PHASES order
    const link = r.phases.find(([p]) => p === "link")![1];
    expect(link).toBeGreaterThanOrEqual(0.003);
    // Consecutive operations of one kind make one span: link ×2, address, link, firewall.
    const phaseSpans = r.spans!.slice(1);
    expect(phaseSpans.map((s) => [s.name, s.attributes["cni.phase.operations"]])).toEqual([
      ["link", 2],
      ["address", 1],
      ["link", 1],
      ["firewall", 1],
    ]);
  });

  test("the call span: parent from TRACEPARENT, attributes, phases its children; delegates get its context", async () => {
    const env = { CNI_COMMAND: "ADD", CNI_IFNAME: "eth0", CNI_CONTAINERID: "c1", TRACEPARENT: `00-${TRACE}-${PARENT}-01`, TRACESTATE: "a=b" };
    const call = new CallTelemetry("bridge", env, always);
    let passed: string | undefined;
    await call.run(async () => {
      describeCall("net1", "1.0.0");
      passed = delegateTraceParent();
      const s = phaseStart();
      phaseEnd("netns", s);
    });
    const [span, phase] = call.finish(0, "").spans!;
    expect(span).toMatchObject({ traceId: TRACE, parentSpanId: PARENT, traceState: "a=b", name: "cni.ADD bridge", kind: 2 });
    expect(span!.attributes).toEqual({
      "cni.plugin": "bridge",
      "cni.command": "ADD",
      "cni.network": "net1",
      "cni.ifname": "eth0",
      "cni.container_id": "c1",
      "cni.version": "1.0.0",
      "cni.code": 0,
    });
    expect(passed).toBe(`00-${TRACE}-${span!.spanId}-01`);
    expect(phase).toMatchObject({ traceId: TRACE, parentSpanId: span!.spanId, name: "netns", kind: 1 });
    expect(phase!.startMs).toBeGreaterThanOrEqual(span!.startMs);
    expect(phase!.endMs).toBeLessThanOrEqual(span!.endMs);
    expect(delegateTraceParent()).toBeUndefined();
  });

  test("an invalid or absent TRACEPARENT starts a trace of its own", () => {
    for (const tp of [undefined, "garbage", `00-${"0".repeat(32)}-${PARENT}-01`, `ff-${TRACE}-${PARENT}-01`]) {
      const [span] = new CallTelemetry("ptp", { CNI_COMMAND: "DEL", ...(tp ? { TRACEPARENT: tp } : {}) }, always).finish(0, "").spans!;
      expect(span!.parentSpanId).toBe("");
      expect(span!.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(span!.traceId).not.toBe(TRACE);
    }
  });

  test("sampling: no spans when the sampler says no or nobody exports; delegates get the sampler's flag", async () => {
    const env = { CNI_COMMAND: "ADD", TRACEPARENT: `00-${TRACE}-${PARENT}-01` };
    expect(new CallTelemetry("bridge", env, { sample: () => false, recordSpans: true }).finish(0, "").spans).toBeUndefined();
    const off = new CallTelemetry("bridge", env, notExporting);
    let passed: string | undefined;
    await off.run(async () => {
      passed = delegateTraceParent();
    });
    expect(off.finish(0, "").spans).toBeUndefined();
    expect(passed).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
    const unsampled = new CallTelemetry("bridge", { ...env, TRACEPARENT: `00-${TRACE}-${PARENT}-00` }, notExporting);
    await unsampled.run(async () => {
      passed = delegateTraceParent();
    });
    expect(passed).toEndWith("-00");
  });

  test("the code of a failed call comes from its error JSON (999 without one); an unknown command is 'other'", () => {
    const failed = new CallTelemetry("bridge", { CNI_COMMAND: "ADD" }, always).finish(1, JSON.stringify({ code: 7, msg: "bad mtu" }));
    expect(failed.code).toBe(7);
    expect(failed.spans![0]!.status).toEqual({ code: STATUS_CODE_ERROR, message: "bad mtu" });
    expect(failed.spans![0]!.attributes["cni.code"]).toBe(7);
    expect(new CallTelemetry("bridge", { CNI_COMMAND: "ADD" }, always).finish(2, "internal error").code).toBe(999);
    expect(new CallTelemetry("bridge", { CNI_COMMAND: "x".repeat(50) }, always).finish(1, "").command).toBe("other");
  });

  test("IPAM usage: the last report of a range wins", async () => {
    const call = new CallTelemetry("host-local", { CNI_COMMAND: "ADD" }, notExporting);
    await call.run(async () => {
      reportIpamUsage({ plugin: "host-local", network: "n", range: "10.0.0.0/24", used: 1, free: 252 });
      reportIpamUsage({ plugin: "host-local", network: "n", range: "10.0.1.0/24", used: 0, free: 253 });
      reportIpamUsage({ plugin: "host-local", network: "n", range: "10.0.0.0/24", used: 2, free: 251 });
    });
    expect(call.finish(0, "").ipam).toEqual([
      { plugin: "host-local", network: "n", range: "10.0.0.0/24", used: 2, free: 251 },
      { plugin: "host-local", network: "n", range: "10.0.1.0/24", used: 0, free: 253 },
    ]);
  });
});
