import { expect, test } from "bun:test";
import { CallTelemetry } from "./call.ts";
import { decodeCallReport, InvalidReportError } from "./report.ts";

function sample() {
  const call = new CallTelemetry("bridge", { CNI_COMMAND: "ADD", TRACEPARENT: `00-${"a".repeat(32)}-${"b".repeat(16)}-01` }, { sample: () => true, recordSpans: true });
  const r = call.finish(1, JSON.stringify({ code: 11, msg: "busy" }));
  r.ipam.push({ plugin: "host-local", network: "net-1", range: "10.1.0.0/16", used: 3, free: 65530 });
  r.phases.push(["link", 0.002]);
  return r;
}

test("a report survives its JSON round trip", () => {
  const r = sample();
  expect(decodeCallReport(JSON.stringify(r))).toEqual(r);
});

test("what a sender could make up is refused", () => {
  const r = sample();
  const bad: [string, unknown][] = [
    ["command", { ...r, command: "PWN" }],
    ["code", { ...r, code: 1000 }],
    ["code", { ...r, code: 1.5 }],
    ["plugin", { ...r, plugin: 'a"b' }],
    ["plugin", { ...r, plugin: "x".repeat(300) }],
    ["phase", { ...r, phases: [["kernel", 1]] }],
    ["durationS", { ...r, durationS: -1 }],
    ["ipam network", { ...r, ipam: [{ ...r.ipam[0], network: "" }] }],
    ["ipam", { ...r, ipam: Array.from({ length: 65 }, () => r.ipam[0]) }],
    ["span traceId", { ...r, spans: [{ ...r.spans![0], traceId: "xyz" }] }],
    ["span attributes", { ...r, spans: [{ ...r.spans![0], attributes: { a: { nested: 1 } } }] }],
    ["not JSON", "{"],
  ];
  for (const [why, value] of bad) {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    expect(() => decodeCallReport(text), why).toThrow(InvalidReportError);
  }
  expect(() => decodeCallReport("x".repeat(300 * 1024))).toThrow("too large");
});
