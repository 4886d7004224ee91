import { describe, expect, test } from "bun:test";
import { clockTicks, idleShare, processCpuMs, statCpuTicks, statusField, statusNumber } from "./proc.ts";

describe("/proc of a process", () => {
  test("CPU ticks from a stat line: own (utime + stime) and reaped children's (cutime + cstime)", () => {
    // Fields 14-17: utime 1200, stime 340, cutime 56, cstime 7.
    const line = "4242 (cni-plugins) S 1 4242 4242 0 -1 4194560 9000 0 0 0 1200 340 56 7 20 0 17 0 123456 700000000 30000 18446744073709551615";
    expect(statCpuTicks(line)).toEqual({ own: 1540, children: 63 });
  });

  test("a command name with spaces and parentheses does not shift the fields", () => {
    const line = "77 (a) b (c d) R 1 77 77 0 -1 0 0 0 0 0 10 20 30 40 20 0 1 0 5 100 10 0";
    expect(statCpuTicks(line)).toEqual({ own: 30, children: 70 });
  });

  test("a line that is not a stat line is an error, not zero", () => {
    expect(() => statCpuTicks("no parentheses here")).toThrow("not a /proc/<pid>/stat line");
    expect(() => statCpuTicks("1 (x) S 1 2")).toThrow("no CPU times");
  });

  test("status fields by name, NaN when missing", () => {
    const status = "Name:\tbun\nVmHWM:\t  218188 kB\nVmRSS:\t   13520 kB\nThreads:\t17\n";
    expect(statusField(status, "VmHWM")).toBe(218188);
    expect(statusField(status, "VmRSS")).toBe(13520);
    expect(statusField(status, "Threads")).toBe(17);
    expect(statusField(status, "VmSwap")).toBeNaN();
  });

  test("this process: its CPU time in /proc agrees with what the runtime counts (to two clock ticks)", () => {
    expect(clockTicks()).toBeGreaterThan(0);
    const tick = 1000 / clockTicks();
    const runtimeMs = () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    };
    const [procBefore, runtimeBefore] = [processCpuMs(process.pid), runtimeMs()];
    let x = 0;
    while (runtimeMs() - runtimeBefore < 150) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    const procDelta = processCpuMs(process.pid) - procBefore;
    expect(Math.abs(procDelta - (runtimeMs() - runtimeBefore))).toBeLessThanOrEqual(2 * tick);
    expect(statusNumber(process.pid, "VmRSS")).toBeGreaterThan(1000);
  });

  test("the machine's idle share between two /proc/stat readings: idle and iowait over all ticks", () => {
    const before = "cpu  1000 10 500 8000 100 0 50 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
    // +60 user, +20 system, +100 idle, +20 iowait: 120 of 200 ticks idle.
    const after = "cpu  1060 10 520 8100 120 0 50 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
    expect(idleShare(before, after)).toBeCloseTo(0.6, 9);
    expect(idleShare(before, before)).toBe(1);
    expect(() => idleShare("intr 1 2 3", after)).toThrow("not /proc/stat");
  });
});
