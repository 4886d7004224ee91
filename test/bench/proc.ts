/**
 * What the bench reads of a running process in /proc: fields of its status (memory, threads), its
 * CPU time from its stat line, and its peak resident set over an interval of the bench's choosing.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { log, sh } from "./lib.ts";

/** A number field of a /proc/<pid>/status text (e.g. "VmRSS", in kB; "Threads"); NaN when absent. */
export function statusField(status: string, field: string): number {
  const line = status.split("\n").find((l) => l.startsWith(`${field}:`));
  return Number(/\d+/.exec(line ?? "")?.[0] ?? Number.NaN);
}

/** A number field of /proc/<pid>/status. */
export function statusNumber(pid: number, field: string): number {
  return statusField(readFileSync(`/proc/${pid}/status`, "utf8"), field);
}

/** VmRSS of a process in MiB. */
export function processRssMiB(pid: number): number {
  return statusNumber(pid, "VmRSS") / 1024;
}

/** The number of threads of a process. */
export function processThreads(pid: number): number {
  return statusNumber(pid, "Threads");
}

/**
 * The CPU time in a /proc/<pid>/stat line, in clock ticks: the process's own (utime + stime, every
 * thread) and that of the children it has reaped (cutime + cstime: the tools its calls ran). The
 * command name (field 2) is in parentheses and may hold spaces or parentheses itself, so the
 * fields are counted from the last ')'.
 */
export function statCpuTicks(stat: string): { own: number; children: number } {
  const close = stat.lastIndexOf(")");
  if (close < 0) throw new Error(`not a /proc/<pid>/stat line: ${stat.slice(0, 80)}`);
  // After ')': field 3 (state) first, so field n is at index n - 3.
  const fields = stat.slice(close + 2).trim().split(" ");
  const [utime, stime, cutime, cstime] = [14, 15, 16, 17].map((n) => Number(fields[n - 3]));
  if (![utime, stime, cutime, cstime].every((x) => Number.isInteger(x))) throw new Error(`no CPU times in /proc/<pid>/stat line: ${stat.slice(0, 80)}`);
  return { own: utime! + stime!, children: cutime! + cstime! };
}

let ticksPerSecond: number | undefined;

/** The kernel's clock ticks per second for the times in /proc/<pid>/stat (CLK_TCK). */
export function clockTicks(): number {
  ticksPerSecond ??= Number(sh(["getconf", "CLK_TCK"]).trim());
  return ticksPerSecond;
}

/** CPU time of a process so far, its own and its reaped children's, in ms. */
export function processCpuMs(pid: number): number {
  const t = statCpuTicks(readFileSync(`/proc/${pid}/stat`, "utf8"));
  return ((t.own + t.children) * 1000) / clockTicks();
}

/** How much VmHWM may stand over VmRSS right after a reset for the reset to count as done. */
const RESET_SLACK_KB = 1024;
const SAMPLE_MS = 20;

/**
 * Starts watching the peak resident set of `pid`; `stop()` returns it in MiB. The kernel keeps the
 * peak (VmHWM) and resets it to the current resident set on `echo 5 > /proc/<pid>/clear_refs`;
 * when that reset does not take on this kernel (VmHWM stays above VmRSS), VmRSS is sampled every
 * 20 ms instead (the event loop must run meanwhile: the calls are made asynchronously).
 */
export function watchPeakRss(pid: number): { method: "VmHWM" | "sampled"; stop(): number } {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  if (statusField(status, "VmHWM") <= statusField(status, "VmRSS") + RESET_SLACK_KB) {
    return { method: "VmHWM", stop: () => statusNumber(pid, "VmHWM") / 1024 };
  }
  let peakKb = statusField(status, "VmRSS");
  const timer = setInterval(() => {
    peakKb = Math.max(peakKb, statusNumber(pid, "VmRSS"));
  }, SAMPLE_MS);
  return {
    method: "sampled",
    stop() {
      clearInterval(timer);
      return Math.max(peakKb, statusNumber(pid, "VmRSS")) / 1024;
    },
  };
}

/**
 * The share of CPU time the machine spent idle between two readings of /proc/stat (its first line:
 * user nice system idle iowait irq softirq steal …, in ticks); idle and iowait count as idle.
 */
export function idleShare(before: string, after: string): number {
  const ticks = (stat: string) => {
    const cpu = stat.split("\n")[0]!.trim().split(/\s+/);
    if (cpu[0] !== "cpu") throw new Error(`not /proc/stat: ${stat.slice(0, 40)}`);
    const fields = cpu.slice(1, 9).map(Number);
    return { total: fields.reduce((a, b) => a + b, 0), idle: fields[3]! + fields[4]! };
  };
  const [a, b] = [ticks(before), ticks(after)];
  return b.total === a.total ? 1 : (b.idle - a.idle) / (b.total - a.total);
}

const QUIET_IDLE_SHARE = 0.75;
const QUIET_WINDOW_MS = 250;
const QUIET_MAX_MS = 5000;

/**
 * Waits until the machine is mostly idle (three quarters of its CPU time over a quarter second), at
 * most 5 s, before the bench measures `what`: the kernel tears down deleted network namespaces and
 * their links in the background (hundreds of them after a burst), and a measurement started
 * meanwhile would pay for it. On a machine that stays busy it says so and returns.
 */
export async function waitForQuiet(what: string): Promise<void> {
  const t0 = performance.now();
  for (;;) {
    const before = readFileSync("/proc/stat", "utf8");
    await Bun.sleep(QUIET_WINDOW_MS);
    if (idleShare(before, readFileSync("/proc/stat", "utf8")) >= QUIET_IDLE_SHARE) return;
    if (performance.now() - t0 >= QUIET_MAX_MS) {
      log(`the machine stayed busy for ${QUIET_MAX_MS / 1000} s before ${what}; measuring anyway`);
      return;
    }
  }
}
