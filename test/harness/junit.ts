/**
 * Totals from a bun junit report and bun's text summary, combined so that a crashed or silently
 * truncated test process always counts as a failure, never as "0 failed".
 */

export interface SuiteTotals {
  passed: number;
  failed: number;
  skipped: number;
  /** Why the suite counts as failed beyond its test cases (crash, no report, load errors). */
  problems: string[];
}

export interface JunitCounts {
  tests: number;
  failures: number;
  skipped: number;
}

/** Counts `<testcase>` elements, those with a `<failure>`/`<error>` child, and those `<skipped>`. */
export function parseJunit(xml: string): JunitCounts {
  let tests = 0;
  let failures = 0;
  let skipped = 0;
  const re = /<testcase\b[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const m of xml.matchAll(re)) {
    tests++;
    const body = m[2] ?? "";
    if (/<(failure|error)\b/.test(body)) failures++;
    else if (/<skipped\b/.test(body)) skipped++;
  }
  return { tests, failures, skipped };
}

export interface BunTextSummary {
  pass: number;
  fail: number;
  skip: number;
  todo: number;
  errors: number;
  /** True when bun printed its closing "Ran N tests across M files" line. */
  finished: boolean;
}

/** Reads bun's closing block (` 5 pass`, ` 1 fail`, ` 1 error`, `Ran 7 tests across 1 file.`). */
export function parseBunSummary(text: string): BunTextSummary {
  const count = (word: string): number => {
    const all = [...text.matchAll(new RegExp(`^\\s*(\\d+) ${word}\\s*$`, "gm"))];
    const last = all[all.length - 1];
    return last ? Number(last[1]) : 0;
  };
  return {
    pass: count("pass"),
    fail: count("fail"),
    skip: count("skip"),
    todo: count("todo"),
    errors: count("errors?"),
    finished: /^Ran \d+ tests? across \d+ files?\./m.test(text),
  };
}

/**
 * Combines the junit counts (authoritative per test case), bun's text summary and the exit status.
 * Failures that junit does not show (a file that failed to load, an unhandled error between tests,
 * a crash, no report at all) are added as extra failures with a reason.
 */
export function combineTotals(
  suite: string,
  junit: JunitCounts | undefined,
  text: BunTextSummary,
  exit: { code: number | null; signal: string | null },
): SuiteTotals {
  const problems: string[] = [];
  if (junit === undefined) {
    problems.push(`${suite}: no junit report was written`);
    const failed = Math.max(text.fail, 1);
    return { passed: text.pass, failed, skipped: text.skip + text.todo, problems };
  }
  // bun counts a file that fails to load both as a "fail" and as an "error"; count it once.
  const outside = Math.max(text.fail - junit.failures, text.errors, 0);
  let failed = junit.failures + outside;
  if (outside > 0) {
    problems.push(`${suite}: ${outside} failure(s) outside any test case (a file that did not load, an unhandled error)`);
  }
  if (!text.finished) problems.push(`${suite}: bun did not finish its run (no closing summary)`);
  if (exit.signal !== null) problems.push(`${suite}: bun test was killed by ${exit.signal}`);
  else if (exit.code !== 0 && failed === 0) problems.push(`${suite}: bun test exited ${exit.code} without a failed test`);
  if (problems.length > 0 && failed === junit.failures) failed += 1;
  return { passed: junit.tests - junit.failures - junit.skipped, failed, skipped: junit.skipped, problems };
}

/** `N passed, N failed, N skipped`. */
export function formatTotals(t: Pick<SuiteTotals, "passed" | "failed" | "skipped">): string {
  return `${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`;
}
