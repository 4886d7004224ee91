/**
 * Test driver: `bun test/run.ts <unit|integration|vm|e2e|diff|all>`.
 *
 * - unit: `bun test` over the co-located `*.test.ts` files (shared/ plugins/ ipam/ meta/ operator/ agent/ registry/ cli/ build/
 *   test/harness/ test/bench/), junit to .test-out/unit.xml.
 * - integration: as root, `bun test` over test/integration/*.test.ts (except `*.vm.test.ts`) inside a
 *   throwaway host network namespace (`unshare --net`, `lo` brought up first) AND a private mount
 *   namespace with a tmpfs on /var/lib/cni and /run/cni (plugin state such as portmap's localnet
 *   users, keyed by netns inode, must neither outlive the run nor be found by the next one), junit
 *   to .test-out/integration.xml.
 * - vm: the `*.vm.test.ts` files (tests needing kernel features the host may lack) in ONE throwaway
 *   QEMU VM with Debian's stock kernel (test/vm/vm-run.sh; the repo is shared read-write), again in
 *   a fresh netns, junit to .test-out/vm.xml. No such files: no boot. A VM that cannot boot is a
 *   failure, never a pass. Root as for integration. See test/vm/README.md.
 * - e2e: as root, test/e2e (cnitool, podman, containerd, mixed Go/ours interop) after
 *   test/e2e/setup/prepare.sh (cached builds of cnitool and rc-crictl), inside a throwaway netns AND
 *   a private mount namespace with a tmpfs on /var/lib/cni, junit to .test-out/e2e.xml.
 * - diff: the differential suite against the Go 1.1.1 binaries, same sandbox, .test-out/diff.xml.
 * - integration-agent, e2e-agent, diff-agent: the same lanes with a resident agent
 *   (`cni-plugins serve`, docs/resident.md) started in the lane's sandbox, on the default socket
 *   (/run/cni/plugins.sock, a tmpfs of the sandbox), so every plugin call whose caller shares the
 *   sandbox's namespaces goes through the shim to the agent; the others run standalone, as they
 *   would on a node. The lane fails when the agent served no call at all (its log is
 *   .test-out/<lane>.agent.log).
 * - arm64: the arm64 build (dist/arm64/bin, `make build ARCH=arm64`) on this amd64 host under
 *   qemu-user with a Cortex-A53 CPU (test/harness/aarch64-emulation.ts registers a binfmt_misc
 *   handler for the lane): the unit tests of the architecture-dependent code run by Bun's aarch64
 *   runtime (.test-out/arm64-unit.xml), then test/e2e/arch-diff.test.ts in the diff lane's sandbox
 *   with a node agent per node (.test-out/arm64.xml): every plugin compared with the amd64 build.
 *   Each part has a time limit; the lane fails when it is exceeded.
 * - all: unit, integration, integration-agent, vm, e2e, e2e-agent, diff, diff-agent, arm64, then the
 *   totals.
 *
 * As a normal user, the root lanes (integration, vm, e2e, diff) and the unit lane run in ONE
 * elevated child, `bun test/run.ts elevated <lane,...>` (sudo, or the desktop prompt;
 * test/harness/elevation.ts). When root cannot be had, the unit lane runs as the user (its root-only
 * tests skipped, each saying why) and the root lanes are reported as not run, with the command that
 * runs them, on the line above the totals; they do not fail the run.
 *
 * bun's own output goes to stderr. The last line on stdout is `N passed, N failed, N skipped`; the
 * exit status is non-zero when anything failed, a suite crashed, a suite wrote no junit report, or
 * nothing ran at all.
 */
import { pluginNames } from "../registry/registry.ts";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import {
  forwardedEnv,
  notRunLine,
  prepareElevation,
  returnToCheckoutOwner,
  runAsRoot,
  type PrivilegedLane,
} from "./harness/elevation.ts";
import {
  combineTotals,
  formatTotals,
  parseBunSummary,
  parseJunit,
  type JunitCounts,
  type SuiteTotals,
} from "./harness/junit.ts";
import { DIST_BIN, MULTI_CALL_BINARY, REPO_ROOT, TEST_OUT } from "./harness/paths.ts";
import { netnsIdOf, SANDBOX_ENV } from "./harness/sandbox.ts";
import { NODE_AGENT_LOG_ENV } from "./harness/agent.ts";
import { emulationMissing, emulatorArgv, registerAarch64Handler } from "./harness/aarch64-emulation.ts";

const UNIT_ROOTS = ["shared", "plugins", "ipam", "meta", "operator", "agent", "registry", "cli", "build", "test/harness", "test/bench"];
const INTEGRATION_DIR = "test/integration";
const INTEGRATION_TEST_TIMEOUT_MS = 60_000;
const EXPECTED_LINKS = pluginNames();
/** Tests that need kernel features the host may lack; they run only in the VM lane. */
const VM_TEST_SUFFIX = ".vm.test.ts";
const VM_RUN = "test/vm/vm-run.sh";
const VM_GUEST_SCRIPT = "test/vm/guest-tests.sh";
/** Per test inside the VM: software emulation is several times slower than the host. */
const VM_TEST_TIMEOUT_MS = 120_000;
/** Hard limit for the whole VM (boot + tests + power-off); vm-run.sh exits 124 beyond it. */
const VM_WALL_LIMIT_S = 1500; // every *.vm.test.ts file (vlan, ipvlan, dummy, vrf, bridge vlans, ...) in one VM
/** vm-run.sh's exit statuses for "the VM itself failed" and "the VM ran out of time". */
const VM_INFRA_FAILURE = 125;
const VM_TIMEOUT = 124;

type Suite = "unit" | "integration" | "integration-agent" | "vm" | "e2e" | "e2e-agent" | "diff" | "diff-agent" | "arm64" | "arm64-unit";

/** test/e2e: real runtimes + interop (lane e2e) and the differential suite against Go 1.1.1 (lane diff). */
const E2E_DIR = "test/e2e";
const E2E_FILES = ["cnitool.test.ts", "podman.test.ts", "containerd.test.ts", "interop.test.ts", "dist.test.ts", "image.test.ts", "docker.test.ts", "deb.test.ts", "deb-systemd.test.ts"];
const DIFF_FILES = ["diff.test.ts"];
const E2E_TEST_TIMEOUT_MS = 300_000;
/** The arm64 lane: its build, the unit tests Bun's aarch64 runtime runs, its suite, its limits. */
const ARM64_BIN = join(REPO_ROOT, "dist", "arm64", "bin");
const ARM64_UNIT_ROOTS = ["shared/sys", "shared/sysctl", "shared/netlink"];
const ARM64_FILES = ["arch-diff.test.ts"];
const ARM64_UNIT_LIMIT_S = 240;
const ARM64_LIMIT_S = 420;
/** The last arm64 lane's duration (test/bench/run.ts prints it). */
const ARM64_TIME = join(TEST_OUT, "arm64.time.json");

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

/**
 * Runs one `bun test` invocation and turns its junit + text summary + exit status into totals.
 * `explainExit` may name a failure of the wrapper around bun (the VM) from the exit status.
 */
async function runBunTest(
  suite: Suite,
  argv: string[],
  env: Record<string, string | undefined>,
  explainExit: (code: number | null) => string | undefined = () => undefined,
): Promise<SuiteTotals> {
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
  const totals = combineTotals(suite, junit, parseBunSummary(out.join("")), {
    code: proc.exitCode,
    signal: proc.signalCode === null ? null : String(proc.signalCode),
  });
  const wrapperFailure = explainExit(proc.exitCode);
  if (wrapperFailure === undefined) return totals;
  return {
    ...totals,
    failed: Math.max(totals.failed, 1),
    problems: [wrapperFailure, ...totals.problems.filter((p) => !p.endsWith("no junit report was written"))],
  };
}

function findUnitTests(): string[] {
  const files: string[] = [];
  const glob = new Bun.Glob("**/*.test.ts");
  for (const root of UNIT_ROOTS) {
    const dir = join(REPO_ROOT, root);
    if (!existsSync(dir)) continue;
    for (const f of glob.scanSync({ cwd: dir, onlyFiles: true })) {
      if (f.split("/").includes("node_modules") || f.endsWith(VM_TEST_SUFFIX)) continue;
      files.push(`./${root}/${f}`);
    }
  }
  return files.sort();
}

/** The *.test.ts files under test/integration: the host's (`vm` false) or the VM lane's (`vm` true). */
function findIntegrationTests(vm: boolean): string[] {
  const dir = join(REPO_ROOT, INTEGRATION_DIR);
  if (!existsSync(dir)) return [];
  const files: string[] = [];
  for (const f of new Bun.Glob("**/*.test.ts").scanSync({ cwd: dir, onlyFiles: true })) {
    if (f.split("/").includes("node_modules")) continue;
    if (f.endsWith(VM_TEST_SUFFIX) === vm) files.push(`./${INTEGRATION_DIR}/${f}`);
  }
  return files.sort();
}

async function runUnit(): Promise<SuiteTotals> {
  const files = findUnitTests();
  if (files.length === 0) return saveTotals("unit", failedSuite(`unit: no *.test.ts files under ${UNIT_ROOTS.join(", ")}`));
  const argv = [process.execPath, "test", ...files, "--reporter=junit", `--reporter-outfile=${junitFile("unit")}`];
  return saveTotals("unit", await runBunTest("unit", argv, { ...process.env }));
}

/**
 * Root only: test/e2e files inside `unshare --net --mount` (private propagation) with a tmpfs on
 * /var/lib/cni and one on /run/cni, so libcni caches, host-local stores, tuning backups and
 * firewall records of the runtimes never touch the host's.
 */
async function runE2eAsRoot(suite: "e2e" | "diff" | "e2e-agent" | "diff-agent"): Promise<SuiteTotals> {
  const base = suite.startsWith("e2e") ? "e2e" : "diff";
  const agent = suite.endsWith("-agent");
  for (const tool of ["unshare", "nsenter", "ip", "mount"]) {
    if (Bun.which(tool) === null) return saveTotals(suite, failedSuite(`${suite}: required tool \`${tool}\` is not installed (run test/setup-host.sh)`));
  }
  if (base === "e2e") {
    const prep = Bun.spawnSync(["bash", join(REPO_ROOT, E2E_DIR, "setup", "prepare.sh")], { stdout: "inherit", stderr: "inherit" });
    if (prep.exitCode !== 0) log("e2e: setup/prepare.sh failed; rows needing cnitool / rc-crictl will skip with the reason");
  }
  const files = (base === "e2e" ? E2E_FILES : DIFF_FILES)
    .map((f) => `./${E2E_DIR}/${f}`)
    .filter((f) => existsSync(join(REPO_ROOT, f)));
  if (files.length === 0) return saveTotals(suite, failedSuite(`${suite}: no test files under ${E2E_DIR}`));
  const argv = sandboxArgv(
    ["/var/lib/cni", "/run/cni"],
    [process.execPath, "test", ...files, `--timeout=${E2E_TEST_TIMEOUT_MS}`, "--reporter=junit", `--reporter-outfile=${junitFile(suite)}`],
    agent ? agentLog(suite) : undefined,
  );
  const started = Date.now();
  const totals = await runBunTest(suite, argv, { ...process.env, [SANDBOX_ENV]: netnsIdOf("self"), ...nodeAgentEnv(suite, agent) });
  log(`${suite}: lane took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return saveTotals(suite, agent ? withAgentCheck(suite, totals) : totals);
}

/** The resident agent's log of an agent lane. */
function agentLog(suite: Suite): string {
  return join(TEST_OUT, `${suite}.agent.log`);
}

/** The logs of the agents the tests start on their nodes (test/e2e/lib/node.ts) in an agent lane. */
function nodeAgentLog(suite: Suite): string {
  return join(TEST_OUT, `${suite}.node-agents.log`);
}

/** In an agent lane: tells the tests where node agents log (the file starts empty). */
function nodeAgentEnv(suite: Suite, agent: boolean): Record<string, string> {
  if (!agent) return {};
  writeFileSync(nodeAgentLog(suite), "");
  return { [NODE_AGENT_LOG_ENV]: nodeAgentLog(suite) };
}

/**
 * An agent lane whose agents served no call did not test the agent: that is a failure. Counted over
 * the lane's agent and the node agents (each logs "served N call(s), refused M" when it stops).
 */
function withAgentCheck(suite: Suite, totals: SuiteTotals): SuiteTotals {
  const text = [agentLog(suite), nodeAgentLog(suite)].map((f) => (existsSync(f) ? readFileSync(f, "utf8") : "")).join("\n");
  const summaries = [...text.matchAll(/served (\d+) call\(s\), refused (\d+)/g)];
  const served = summaries.reduce((n, m) => n + Number(m[1]), 0);
  const refused = summaries.reduce((n, m) => n + Number(m[2]), 0);
  log(`${suite}: ${summaries.length} agent(s) ${summaries.length > 0 ? `served ${served} call(s) and refused ${refused} (they ran standalone)` : "left no summary"}`);
  if (served > 0) return totals;
  return { ...totals, failed: totals.failed + 1, problems: [...totals.problems, `${suite}: the resident agent served no call (see ${relative(REPO_ROOT, agentLog(suite))})`] };
}

/**
 * `command` in a throwaway network namespace (`lo` up) and a private mount namespace where each of
 * `stateDirs` is an empty tmpfs, so plugin state of the tests never touches the host's. The tmpfs
 * are 0755, as those directories are on a node (a tmpfs is born 1777, where the agent refuses to
 * make its socket: shared/sys/socket-file.ts checkSocketDirectory). With
 * `agentLogFile`, a resident agent (`cni-plugins serve` on the default socket) runs beside the
 * command in the same namespaces, logging there, and is stopped (SIGTERM, by its pid) after it.
 */
function sandboxArgv(stateDirs: string[], command: string[], agentLogFile?: string): string[] {
  for (const dir of stateDirs) mkdirSync(dir, { recursive: true });
  const mounts = stateDirs.map((d) => `mount -t tmpfs -o mode=0755 cni-test ${d} && `).join("");
  if (agentLogFile === undefined) {
    return ["unshare", "--net", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", `${mounts}ip link set lo up && exec "$@"`, "sh", ...command];
  }
  const agent =
    `"${MULTI_CALL_BINARY}" serve --verbose --max-workers 32 >"${agentLogFile}" 2>&1 & agent=$!; ` +
    `i=0; while [ ! -S /run/cni/plugins.sock ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done; ` +
    `"$@"; status=$?; kill -TERM $agent; wait $agent; exit $status`;
  return ["unshare", "--net", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", `${mounts}ip link set lo up && ${agent}`, "sh", ...command];
}

/** `timeout`'s status when it ended the command; what a part of the arm64 lane then reports. */
const TIMED_OUT = 124;
function overLimit(part: string, limitS: number): (code: number | null) => string | undefined {
  return (code) => (code === TIMED_OUT ? `${part}: exceeded its ${limitS} s limit and was killed` : undefined);
}

/**
 * Root only: the arm64 build under emulation (see the header). Both parts always run; the totals
 * are their sum, saved as the lane's.
 */
async function runArm64AsRoot(): Promise<SuiteTotals> {
  const started = Date.now();
  const missing = emulationMissing() ?? (existsSync(join(ARM64_BIN, "cni-plugins")) ? undefined : `${relative(REPO_ROOT, ARM64_BIN)} is not built (make build ARCH=arm64)`);
  if (missing !== undefined) return saveTotals("arm64", failedSuite(`arm64: ${missing}`));
  const runtime = Bun.spawnSync(["bash", join(REPO_ROOT, "build", "bun-runtime.sh"), "bun-linux-aarch64"], { stderr: "inherit" });
  if (runtime.exitCode !== 0) return saveTotals("arm64", failedSuite("arm64: build/bun-runtime.sh bun-linux-aarch64 failed"));
  const arm64Bun = runtime.stdout.toString().trim();
  let release: () => void;
  try {
    release = registerAarch64Handler();
  } catch (err) {
    return saveTotals("arm64", failedSuite(`arm64: ${(err as Error).message}`));
  }
  try {
    const unitFiles = findUnitTests().filter((f) => ARM64_UNIT_ROOTS.some((root) => f.startsWith(`./${root}/`)));
    const unitArgv = ["timeout", "--kill-after=10", String(ARM64_UNIT_LIMIT_S), ...emulatorArgv(), arm64Bun, "test", ...unitFiles, "--reporter=junit", `--reporter-outfile=${junitFile("arm64-unit")}`];
    const unit = await runBunTest("arm64-unit", unitArgv, { ...process.env }, overLimit("arm64 unit tests", ARM64_UNIT_LIMIT_S));
    log(`arm64: unit tests under Bun's aarch64 runtime took ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const files = ARM64_FILES.map((f) => `./${E2E_DIR}/${f}`);
    const argv = sandboxArgv(["/var/lib/cni", "/run/cni"], ["timeout", "--kill-after=10", String(ARM64_LIMIT_S), process.execPath, "test", ...files, `--timeout=${E2E_TEST_TIMEOUT_MS}`, "--reporter=junit", `--reporter-outfile=${junitFile("arm64")}`]);
    const diffStarted = Date.now();
    const diff = await runBunTest("arm64", argv, { ...process.env, CNI_TEST_BIN_DIR: ARM64_BIN, [SANDBOX_ENV]: netnsIdOf("self"), ...nodeAgentEnv("arm64", true) }, overLimit("arm64 suite", ARM64_LIMIT_S));
    log(`arm64: the arm64 build against the amd64 build took ${((Date.now() - diffStarted) / 1000).toFixed(1)} s`);
    const checked = withAgentCheck("arm64", diff);
    const seconds = (Date.now() - started) / 1000;
    log(`arm64: lane took ${seconds.toFixed(1)} s`);
    // what `make bench` reports as the lane's time
    writeFileSync(ARM64_TIME, `${JSON.stringify({ seconds, unitSeconds: (diffStarted - started) / 1000, at: new Date().toISOString() })}\n`);
    return saveTotals("arm64", {
      passed: unit.passed + checked.passed,
      failed: unit.failed + checked.failed,
      skipped: unit.skipped + checked.skipped,
      problems: [...unit.problems, ...checked.problems],
    });
  } finally {
    release();
  }
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** Root only: the integration suite inside a fresh network namespace (with a resident agent: `agent`). */
async function runIntegrationAsRoot(agent = false): Promise<SuiteTotals> {
  const suite: Suite = agent ? "integration-agent" : "integration";
  const missing = EXPECTED_LINKS.filter((p) => !existsSync(join(DIST_BIN, p)));
  if (missing.length > 0) {
    log(`${suite}: dist/bin lacks ${missing.join(", ")} (run \`make build\`); the affected tests will fail`);
  }
  for (const tool of ["unshare", "nsenter", "ip", "mount"]) {
    if (Bun.which(tool) === null) {
      return saveTotals(suite, failedSuite(`${suite}: required tool \`${tool}\` is not installed (run test/setup-host.sh)`));
    }
  }
  const files = findIntegrationTests(false);
  if (files.length === 0) {
    return saveTotals(suite, failedSuite(`${suite}: no *.test.ts files under ${INTEGRATION_DIR}`));
  }
  const argv = sandboxArgv(
    ["/var/lib/cni", "/run/cni"],
    [process.execPath, "test", ...files, `--timeout=${INTEGRATION_TEST_TIMEOUT_MS}`, "--reporter=junit", `--reporter-outfile=${junitFile(suite)}`],
    agent ? agentLog(suite) : undefined,
  );
  const hostNetns = netnsIdOf("self");
  const started = Date.now();
  const totals = await runBunTest(suite, argv, { ...process.env, [SANDBOX_ENV]: hostNetns, ...nodeAgentEnv(suite, agent) });
  log(`${suite}: lane took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return saveTotals(suite, agent ? withAgentCheck(suite, totals) : totals);
}

/**
 * Root only: the `*.vm.test.ts` files in one VM with Debian's stock kernel. The repo is shared
 * read-write at the same path, so dist/ and node_modules/ are usable in the guest and the junit
 * report comes back.
 */
async function runVmAsRoot(): Promise<SuiteTotals> {
  const files = findIntegrationTests(true);
  if (files.length === 0) {
    log(`\n=== vm tests: no *${VM_TEST_SUFFIX} files under ${INTEGRATION_DIR}; not booting the VM`);
    return saveTotals("vm", { passed: 0, failed: 0, skipped: 0, problems: [] });
  }
  const missing = EXPECTED_LINKS.filter((p) => !existsSync(join(DIST_BIN, p)));
  if (missing.length > 0) {
    log(`vm: dist/bin lacks ${missing.join(", ")} (run \`make build\`); the affected tests will fail`);
  }
  const argv = [
    "bash",
    join(REPO_ROOT, VM_RUN),
    "-d",
    REPO_ROOT,
    "-t",
    String(VM_WALL_LIMIT_S),
    join(REPO_ROOT, VM_GUEST_SCRIPT),
    process.execPath,
    junitFile("vm"),
    String(VM_TEST_TIMEOUT_MS),
    ...forwardedTestEnv(),
    "--",
    ...files,
  ];
  const started = Date.now();
  const totals = await runBunTest("vm", argv, { ...process.env }, (code) => {
    if (code === VM_INFRA_FAILURE) {
      return `vm: the VM could not be set up or booted (${VM_RUN} exit ${VM_INFRA_FAILURE}, infrastructure failure; see its messages above); ${files.length} VM test file(s) did not run`;
    }
    if (code === VM_TIMEOUT) return `vm: the VM lane exceeded its ${VM_WALL_LIMIT_S} s limit and was killed`;
    return undefined;
  });
  log(`vm: lane took ${((Date.now() - started) / 1000).toFixed(1)} s (setup + boot + tests + power-off)`);
  return saveTotals("vm", totals);
}

/** The host's CNI_TEST_* variables (e.g. CNI_TEST_KERNEL_MISSING) as NAME=VALUE, for the guest. */
function forwardedTestEnv(): string[] {
  return forwardedEnv(process.env, ["CNI_TEST_"], [SANDBOX_ENV]);
}

/** A lane the elevated child can run: the root lanes, and the unit lane (whose root-only tests then run too). */
type ElevatedLane = PrivilegedLane | "unit";
const ROOT_LANES: Record<ElevatedLane, () => Promise<SuiteTotals>> = {
  unit: runUnit,
  integration: () => runIntegrationAsRoot(false),
  "integration-agent": () => runIntegrationAsRoot(true),
  vm: runVmAsRoot,
  e2e: () => runE2eAsRoot("e2e"),
  "e2e-agent": () => runE2eAsRoot("e2e-agent"),
  diff: () => runE2eAsRoot("diff"),
  "diff-agent": () => runE2eAsRoot("diff-agent"),
  arm64: runArm64AsRoot,
};
const ALL_ROOT_LANES: PrivilegedLane[] = ["integration", "integration-agent", "vm", "e2e", "e2e-agent", "diff", "diff-agent", "arm64"];
/** What a root run writes in the checkout (`sudo make test` builds and installs, too). */
const OUTPUT_DIRS = [".test-out", "dist", "node_modules"];
/** Written first by the elevated child: proof that elevation worked (its absence: "not run"). */
const ELEVATED_MARKER = join(TEST_OUT, "elevated.started");

/** Root, started by `runWithElevation`: installs missing test tools as `make test` would, runs `lanes`. */
async function runElevatedChild(lanes: ElevatedLane[]): Promise<never> {
  writeFileSync(ELEVATED_MARKER, `${lanes.join(",")}\n`);
  const setup = Bun.spawnSync(["bash", join(REPO_ROOT, "test", "setup-host.sh")], { stdout: "inherit", stderr: "inherit" });
  if (setup.exitCode !== 0) log("elevated: test/setup-host.sh failed; tests needing the missing tools will fail");
  let failed = false;
  for (const lane of lanes) {
    const totals = await ROOT_LANES[lane]();
    failed ||= totals.failed > 0 || totals.problems.length > 0;
  }
  // The totals are in .test-out/<lane>.summary.json; the unprivileged parent reports them.
  returnToCheckoutOwner(REPO_ROOT, OUTPUT_DIRS);
  process.exit(failed ? 1 : 0);
}

/**
 * Not root: `lanes` (and the unit lane, when `withUnit`) in one elevated child, whose saved totals
 * are reported here; the unit lane runs as root there, so its root-only tests run too. When root
 * cannot be had, the unit lane runs as this user (root-only tests skipped, each saying why) and
 * `lanes` are reported as not run with `rerun`, the command that runs them.
 */
async function runWithElevation(lanes: PrivilegedLane[], withUnit: boolean, rerun: string): Promise<never> {
  const elevation = prepareElevation(lanes, log);
  if (elevation.method === "unavailable") log(`${lanes.join(", ")}: will not run: ${elevation.reason}`);
  const ran: [string, SuiteTotals][] = withUnit && elevation.method === "unavailable" ? [["unit", await runUnit()]] : [];
  let notRunReason = elevation.method === "unavailable" ? elevation.reason : undefined;
  if (elevation.method !== "unavailable") {
    const elevated: ElevatedLane[] = withUnit ? ["unit", ...lanes] : lanes;
    for (const f of [ELEVATED_MARKER, ...elevated.map(summaryFile)]) rmSync(f, { force: true });
    log(`\n=== ${elevated.join(", ")}: as root (${elevation.method}), in one run`);
    const argv = [process.execPath, join(REPO_ROOT, "test", "run.ts"), "elevated", elevated.join(",")];
    const ended = await runAsRoot(elevation, argv, forwardedEnv(process.env, ["CNI_", "VM_"], [SANDBOX_ENV]), REPO_ROOT);
    if (!existsSync(ELEVATED_MARKER)) {
      notRunReason = `elevation failed: ${ended}`;
      if (withUnit) ran.push(["unit", await runUnit()]);
    } else {
      for (const lane of elevated) {
        const saved = summaryFile(lane);
        const totals = existsSync(saved)
          ? (JSON.parse(readFileSync(saved, "utf8")) as SuiteTotals)
          : failedSuite(`${lane}: the elevated run ended without a result for this lane (${ended})`);
        ran.push([lane, totals]);
      }
    }
  }
  const lines = ran.map(([name, totals]) => `${name}: ${formatTotals(totals)}`);
  if (notRunReason !== undefined) lines.push(...lanes.map((lane) => `${lane}: not run`));
  if (lines.length > 1) log(`\n${lines.join("\n")}`);
  finish(
    ran.map(([, totals]) => totals),
    notRunReason === undefined ? undefined : notRunLine(lanes, notRunReason, rerun),
  );
}

/** Prints the problems, the not-run line (if any) and the totals; exits. */
function finish(results: SuiteTotals[], notRun?: string): never {
  if (isRoot()) returnToCheckoutOwner(REPO_ROOT, OUTPUT_DIRS);
  const total = results.reduce(
    (acc, r) => ({ passed: acc.passed + r.passed, failed: acc.failed + r.failed, skipped: acc.skipped + r.skipped }),
    { passed: 0, failed: 0, skipped: 0 },
  );
  const problems = results.flatMap((r) => r.problems);
  if (problems.length > 0) {
    log("\nproblems:");
    for (const p of problems) log(`  - ${p}`);
  }
  if (notRun !== undefined) process.stdout.write(`${notRun}\n`);
  process.stdout.write(`${formatTotals(total)}\n`);
  process.exit(total.failed > 0 || problems.length > 0 || results.length === 0 ? 1 : 0);
}

async function main(): Promise<void> {
  const mode = process.argv[2] ?? "";
  mkdirSync(TEST_OUT, { recursive: true });
  switch (mode) {
    case "unit":
      finish([await runUnit()]);
    case "integration":
    case "vm":
    case "e2e":
    case "diff":
    case "integration-agent":
    case "e2e-agent":
    case "diff-agent":
    case "arm64": {
      // `integration`, `e2e` and `diff` run both ways: standalone and with the resident agent.
      const lanes: PrivilegedLane[] = mode === "vm" || mode === "arm64" || mode.endsWith("-agent") ? [mode] : [mode, `${mode as "integration" | "e2e" | "diff"}-agent`];
      if (!isRoot()) return runWithElevation(lanes, false, `sudo make test-${mode.replace(/-agent$/, "")}`);
      const results: SuiteTotals[] = [];
      for (const lane of lanes) results.push(await ROOT_LANES[lane]());
      finish(results);
    }
    case "elevated": {
      const lanes = (process.argv[3] ?? "").split(",").filter((l): l is ElevatedLane => Object.hasOwn(ROOT_LANES, l));
      if (!isRoot() || lanes.length === 0) {
        log(`usage (as root, started by run.ts itself): bun test/run.ts elevated <${Object.keys(ROOT_LANES).join(",")}>`);
        process.exit(2);
      }
      return runElevatedChild(lanes);
    }
    case "all": {
      if (!isRoot()) return runWithElevation(ALL_ROOT_LANES, true, "sudo make test");
      const results: [string, SuiteTotals][] = [["unit", await runUnit()]];
      for (const lane of ALL_ROOT_LANES) results.push([lane, await ROOT_LANES[lane]()]);
      log(`\n${results.map(([lane, totals]) => `${lane}: ${formatTotals(totals)}`).join("\n")}`);
      finish(results.map(([, totals]) => totals));
    }
    default:
      log("usage: bun test/run.ts <unit|integration|vm|e2e|diff|arm64|all> (or integration-agent, e2e-agent, diff-agent alone)");
      process.exit(2);
  }
}

await main();
