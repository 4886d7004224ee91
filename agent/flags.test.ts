import { expect, test } from "bun:test";
import { availableParallelism } from "node:os";
import { defaultMaxWorkers, METRICS_PORT, parseServeFlags, ServeUsageError } from "./flags.ts";

test("--metrics-address: off by default; HOST:PORT and [IPv6]:PORT", () => {
  expect(parseServeFlags([]).metricsAddress).toBeUndefined();
  expect(parseServeFlags(["--metrics-address", `127.0.0.1:${METRICS_PORT}`]).metricsAddress).toEqual({ hostname: "127.0.0.1", port: METRICS_PORT });
  expect(parseServeFlags([`--metrics-address=[::]:${METRICS_PORT}`]).metricsAddress).toEqual({ hostname: "::", port: METRICS_PORT });
  expect(parseServeFlags(["--metrics-address", "node-1.example:0"]).metricsAddress).toEqual({ hostname: "node-1.example", port: 0 });
  for (const bad of ["", "9584", ":9584", "::1:9584", "127.0.0.1:65536", "127.0.0.1:port", "[::1]"]) {
    expect(() => parseServeFlags(["--metrics-address", bad]), bad).toThrow(ServeUsageError);
  }
  expect(() => parseServeFlags(["--metrics-address"])).toThrow("--metrics-address needs HOST:PORT");
});

test("--max-workers: one more than the CPUs by default, between 2 and 16, and never below --min-workers", () => {
  expect([1, 2, 3, 8, 15, 16, 64].map(defaultMaxWorkers)).toEqual([2, 3, 4, 9, 16, 16, 16]);
  expect(parseServeFlags([]).maxWorkers).toBe(defaultMaxWorkers(availableParallelism()));
  expect(parseServeFlags(["--max-workers", "5"]).maxWorkers).toBe(5);
  expect(parseServeFlags(["--min-workers", "20"]).maxWorkers).toBe(20);
  expect(() => parseServeFlags(["--min-workers", "4", "--max-workers", "3"])).toThrow("--max-workers (3) is below --min-workers (4)");
});
