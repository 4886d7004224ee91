import { expect, test } from "bun:test";
import { formatTraceParent, newSpanId, newTraceId, parseTraceParent } from "./trace-context.ts";

const T = "4bf92f3577b34da6a3ce929d0e0e4736";
const S = "00f067aa0ba902b7";

test("traceparent: valid values parse, invalid ones do not", () => {
  expect(parseTraceParent(`00-${T}-${S}-01`)).toEqual({ traceId: T, spanId: S, sampled: true });
  expect(parseTraceParent(`00-${T}-${S}-00`)).toEqual({ traceId: T, spanId: S, sampled: false });
  expect(parseTraceParent(`01-${T}-${S}-03-future`)).toEqual({ traceId: T, spanId: S, sampled: true });
  for (const bad of [undefined, "", `00-${T}-${S}-01-extra`, `ff-${T}-${S}-01`, `00-${T.toUpperCase()}-${S}-01`, `00-${"0".repeat(32)}-${S}-01`, `00-${T}-${"0".repeat(16)}-01`, `00-${T}-${S}`]) {
    expect(parseTraceParent(bad)).toBeUndefined();
  }
  expect(formatTraceParent(T, S, true)).toBe(`00-${T}-${S}-01`);
});

test("new ids are random hex of the right length", () => {
  const ids = new Set(Array.from({ length: 100 }, () => newTraceId()));
  expect(ids.size).toBe(100);
  for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
  expect(newSpanId()).toMatch(/^[0-9a-f]{16}$/);
});
