/**
 * Test driver: `bun test/run.ts <unit|integration|all>`.
 *
 * - unit: `bun test` over the co-located `*.test.ts` files (shared/ plugins/ ipam/ meta/ build/
 *   test/harness/), junit to .test-out/unit.xml.
 * - integration: as root, `bun test test/integration` inside a throwaway host network namespace
 *   (`unshare --net`, `lo` brought up first), junit to .test-out/integration.xml. As another user it
 *   asks for elevation (@vscode/sudo-prompt, then an interactive `sudo` on a terminal) and runs this
 *   same command as root.
 * - all: both, then the totals.
 *
 * bun's own output goes to stderr. The last line on stdout is `N passed, N failed, N skipped`; the
 * exit status is non-zero when anything failed, a suite crashed, or a suite wrote no junit report.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { isatty } from "node:tty";
import { join, relative } from "node:path";
import {
  combineTotals,
  formatTotals,
  parseBunSummary,
  parseJunit,
  type JunitCounts,
  type SuiteTotals,
} from "./harness/junit.ts";
import { DIST_BIN, REPO_ROOT, TEST_OUT } from "./harness/paths.ts";
import { netnsIdOf, SANDBOX_ENV } from "./harness/sandbox.ts";

const UNIT_ROOTS = ["shared", "plugins", "ipam", "meta", "build", "test/harness"];
const INTEGRATION_DIR = "test/integration";
const INTEGRATION_TEST_TIMEOUT_MS = 60_000;
const EXPECTED_LINKS = ["loopback", "host-local", "static"];

type Suite = "unit" | "integration";

function log(text: string): void {
  process.stderr.write(`${text}\n`);
}

function summaryFile(suite: Suite): string {
  return join(TEST_OUT, `${suite}.summary.json`);
}

function junitFile(suite: Suite): string {
  return join(TEST_OUT, `${suite}.xml`);
}

function failedSuite(problem: string): SuiteTotals {
  return { passed: 0, failed: 1, skipped: 0, problems: [problem] };
}

function saveTotals(suite: Suite, totals: SuiteTotals): SuiteTotals {
  writeFileSync(summaryFile(suite), `${JSON.stringify(totals)}\n`);
  return totals;
}

/** Streams a child's output to our stderr while keeping a copy for the summary parser. */
async function pump(stream: ReadableStream<Uint8Array>, sink: string[]): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) {
    process.stderr.write(chunk);
    sink.push(decoder.decode(chunk, { stream: true }));
  }
}

/** Runs one `bun test` invocation and turns its junit + text summary + exit status into totals. */
async function runBunTest(suite: Suite, argv: string[], env: Record<string, string | undefined>): Promise<SuiteTotals> {
  const report = junitFile(suite);
  rmSync(report, { force: true });
  log(`\n=== ${suite} tests: ${argv.map((a) => relative(REPO_ROOT, a) || a).join(" ")}`);
  const proc = Bun.spawn(argv, { cwd: REPO_ROOT, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const out: string[] = [];
  await Promise.all([pump(proc.stdout, out), pump(proc.stderr, out)]);
  await proc.exited;
  let junit: JunitCounts | undefined;
  if (existsSync(report)) {
    try {
      junit = parseJunit(readFileSync(report, "utf8"));
    } catch {
      junit = undefined;
    }
  }
  return combineTotals(suite, junit, parseBunSummary(out.join("")), {
    code: proc.exitCode,
    signal: proc.signalCode === null ? null : String(proc.signalCode),
  });
}

function findUnitTests(): string[] {
  const files: string[] = [];
  const glob = new Bun.Glob("**/*.test.ts");
  for (const root of UNIT_ROOTS) {
    const dir = join(REPO_ROOT, root);
    if (!existsSync(dir)) continue;
    for (const f of glob.scanSync({ cwd: dir, onlyFiles: true })) {
      if (f.split("/").includes("node_modules")) continue;
      files.push(`./${root}/${f}`);
    }
  }
  return files.sort();
}

async function runUnit(): Promise<SuiteTotals> {
  const files = findUnitTests();
  if (files.length === 0) return saveTotals("unit", failedSuite(`unit: no *.test.ts files under ${UNIT_ROOTS.join(", ")}`));
  const argv = [process.execPath, "test", ...files, "--reporter=junit", `--reporter-outfile=${junitFile("unit")}`];
  return saveTotals("unit", await runBunTest("unit", argv, { ...process.env }));
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** Root only: the integration suite inside a fresh network namespace. */
async function runIntegrationAsRoot(): Promise<SuiteTotals> {
  const missing = EXPECTED_LINKS.filter((p) => !existsSync(join(DIST_BIN, p)));
  if (missing.length > 0) {
    log(`integration: dist/bin lacks ${missing.join(", ")} (run \`make build\`); the affected tests will fail`);
  }
  for (const tool of ["unshare", "nsenter", "ip"]) {
    if (Bun.which(tool) === null) {
      return saveTotals("integration", failedSuite(`integration: required tool \`${tool}\` is not installed (run test/setup-host.sh)`));
    }
  }
  const argv = [
    "unshare",
    "--net",
    "--",
    "/bin/sh",
    "-c",
    'ip link set lo up && exec "$@"',
    "sh",
    process.execPath,
    "test",
    `./${INTEGRATION_DIR}`,
    `--timeout=${INTEGRATION_TEST_TIMEOUT_MS}`,
    "--reporter=junit",
    `--reporter-outfile=${junitFile("integration")}`,
  ];
  const hostNetns = netnsIdOf("self");
  return saveTotals("integration", await runBunTest("integration", argv, { ...process.env, [SANDBOX_ENV]: hostNetns }));
}

/** Non-root: run `bun test/run.ts integration` as root, then read the totals it saved. */
async function runIntegrationElevated(): Promise<SuiteTotals> {
  rmSync(summaryFile("integration"), { force: true });
  const command = `${shellQuote(process.execPath)} ${shellQuote(join(REPO_ROOT, "test", "run.ts"))} integration`;
  log("integration: these tests need root (network namespaces); asking for elevation");
  let ok = await elevateWithPrompt(command);
  if (!ok && isatty(0) && Bun.which("sudo") !== null) {
    log("integration: graphical elevation unavailable; falling back to sudo on this terminal");
    const proc = Bun.spawn(["sudo", "--", "/bin/sh", "-c", `cd ${shellQuote(REPO_ROOT)} && ${command}`], {
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    });
    await proc.exited;
    ok = true;
  }
  if (existsSync(summaryFile("integration"))) {
    return JSON.parse(readFileSync(summaryFile("integration"), "utf8")) as SuiteTotals;
  }
  return failedSuite(
    ok
      ? "integration: the elevated run produced no results"
      : "integration: could not get root; run `sudo make test-integration` (or `make test` as root)",
  );
}

async function elevateWithPrompt(command: string): Promise<boolean> {
  const { exec } = await import("@vscode/sudo-prompt");
  return new Promise((resolve) => {
    exec(
      `cd ${shellQuote(REPO_ROOT)} && ${command}`,
      { name: "CNI plugins integration tests", env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin" } },
      (error, stdout, stderr) => {
        if (stderr) process.stderr.write(stderr.toString());
        if (stdout) process.stderr.write(stdout.toString());
        if (error) log(`integration: elevation: ${error.message}`);
        // A failing test run also reports an error; the saved summary tells the two apart.
        resolve(existsSync(summaryFile("integration")));
      },
    );
  });
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

async function runIntegration(): Promise<SuiteTotals> {
  return isRoot() ? runIntegrationAsRoot() : runIntegrationElevated();
}

function finish(results: SuiteTotals[]): never {
  const total = results.reduce(
    (acc, r) => ({ passed: acc.passed + r.passed, failed: acc.failed + r.failed, skipped: acc.skipped + r.skipped }),
    { passed: 0, failed: 0, skipped: 0 },
  );
  const problems = results.flatMap((r) => r.problems);
  if (problems.length > 0) {
    log("\nproblems:");
    for (const p of problems) log(`  - ${p}`);
  }
  process.stdout.write(`${formatTotals(total)}\n`);
  process.exit(total.failed > 0 || problems.length > 0 ? 1 : 0);
}

async function main(): Promise<void> {
  const mode = process.argv[2] ?? "";
  mkdirSync(TEST_OUT, { recursive: true });
  switch (mode) {
    case "unit":
      finish([await runUnit()]);
    case "integration":
      finish([await runIntegration()]);
    case "all": {
      const unit = await runUnit();
      const integration = await runIntegration();
      log(`\nunit: ${formatTotals(unit)}\nintegration: ${formatTotals(integration)}`);
      finish([unit, integration]);
    }
    default:
      log("usage: bun test/run.ts <unit|integration|all>");
      process.exit(2);
  }
}

await main();
