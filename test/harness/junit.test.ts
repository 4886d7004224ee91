import { describe, expect, test } from "bun:test";
import { combineTotals, formatTotals, parseBunSummary, parseJunit } from "./junit.ts";

const REPORT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="bun test" tests="5" failures="1" skipped="2">
  <testsuite name="a.test.ts" tests="5" failures="1" skipped="2">
    <testcase name="passes" classname="" time="0" />
    <testcase name="fails" classname="" time="0"><failure type="AssertionError" message="x">boom</failure></testcase>
    <testcase name="skipped" classname="" time="0"><skipped /></testcase>
    <testcase name="todo" classname="" time="0"><skipped message="TODO" /></testcase>
    <testsuite name="nested" tests="1"><testcase name="inner" classname="nested" time="0" /></testsuite>
  </testsuite>
</testsuites>`;

const TEXT_OK = " 2 pass\n 2 skip\n 1 fail\nRan 5 tests across 1 file. [5.00ms]\n";

describe("junit totals", () => {
  test("parseJunit counts test cases, failures and skips including nested suites", () => {
    expect(parseJunit(REPORT)).toEqual({ tests: 5, failures: 1, skipped: 2 });
  });

  test("parseBunSummary reads bun's closing block", () => {
    expect(parseBunSummary(" 3 pass\n 1 skip\n 1 todo\n 2 fail\n 1 error\nRan 7 tests across 2 files. [9ms]")).toEqual({
      pass: 3,
      fail: 2,
      skip: 1,
      todo: 1,
      errors: 1,
      finished: true,
    });
  });

  test("combineTotals takes junit counts when the run is consistent", () => {
    const t = combineTotals("unit", parseJunit(REPORT), parseBunSummary(TEXT_OK), { code: 1, signal: null });
    expect(t).toEqual({ passed: 2, failed: 1, skipped: 2, problems: [] });
  });

  test("combineTotals counts a missing junit report as a failure", () => {
    const t = combineTotals("unit", undefined, parseBunSummary(""), { code: 0, signal: null });
    expect(t.failed).toBe(1);
    expect(t.problems[0]).toContain("no junit report");
  });

  test("combineTotals counts a file that failed to load (text fail without a junit case)", () => {
    const junit = { tests: 1, failures: 0, skipped: 0 };
    const t = combineTotals("unit", junit, parseBunSummary(" 1 pass\n 1 fail\n 1 error\nRan 2 tests across 2 files."), {
      code: 1,
      signal: null,
    });
    expect(t.failed).toBe(1);
    expect(t.problems[0]).toContain("outside any test case");
  });

  test("combineTotals counts an unhandled error between tests", () => {
    const junit = { tests: 2, failures: 0, skipped: 0 };
    const t = combineTotals("unit", junit, parseBunSummary(" 2 pass\n 0 fail\n 1 error\nRan 2 tests across 1 file."), {
      code: 1,
      signal: null,
    });
    expect(t.failed).toBe(1);
  });

  test("combineTotals counts a crash (signal, no closing summary) as a failure, never 0 failed", () => {
    const junit = { tests: 3, failures: 0, skipped: 0 };
    const t = combineTotals("integration", junit, parseBunSummary("(pass) a\n"), { code: null, signal: "SIGSEGV" });
    expect(t.failed).toBe(1);
    expect(t.problems.join("\n")).toContain("SIGSEGV");
  });

  test("combineTotals counts a non-zero exit without failed tests as a failure", () => {
    const junit = { tests: 2, failures: 0, skipped: 0 };
    const t = combineTotals("unit", junit, parseBunSummary(" 2 pass\nRan 2 tests across 1 file."), { code: 1, signal: null });
    expect(t.failed).toBe(1);
  });

  test("formatTotals prints the CI summary line", () => {
    expect(formatTotals({ passed: 10, failed: 2, skipped: 3 })).toBe("10 passed, 2 failed, 3 skipped");
  });
});
