/** Nested calls (ancestry.ts): the kernel's parent links, cut at processes older than the agent. */
import { describe, expect, test } from "bun:test";
import { descendsFrom, lineageOf, type Lineage } from "./ancestry.ts";

/** A made-up process tree: pid → [parent, started]. */
function tree(t: Record<number, [number, number]>): { read: (pid: number) => Lineage | undefined; reads: number[] } {
  const reads: number[] = [];
  return {
    reads,
    read: (pid) => {
      reads.push(pid);
      const e = t[pid];
      return e === undefined ? undefined : { parent: e[0], started: e[1] };
    },
  };
}

describe("descendsFrom", () => {
  const agent = { pid: 100, started: 500 };

  test("a process whose parent is the agent, or its child or grandchild, descends from it", () => {
    const t = tree({ 200: [100, 600], 300: [200, 700] });
    for (const parent of [100, 200, 300]) expect(descendsFrom(parent, agent, t.read)).toBe(true);
  });

  test("a caller whose parent (the runtime) started before the agent does not; the walk stops there, not at init", () => {
    // shim ← runtime 50 (started before the agent) ← systemd 1
    const t = tree({ 50: [1, 100], 1: [0, 1] });
    expect(descendsFrom(50, agent, t.read)).toBe(false);
    expect(t.reads).toEqual([50]);
  });

  test("younger ancestors are followed until one is older than the agent; a vanished one ends the walk", () => {
    const t = tree({ 800: [700, 800], 700: [60, 550], 60: [1, 40] });
    expect(descendsFrom(800, agent, t.read)).toBe(false);
    expect(t.reads).toEqual([800, 700, 60]);
    expect(descendsFrom(555, agent, tree({}).read)).toBe(false);
  });

  test("for real: a process this one starts descends from it; this process's parent does not", async () => {
    const self = { pid: process.pid, started: lineageOf(process.pid)!.started };
    const child = Bun.spawn(["sh", "-c", "sleep 5 & wait"]);
    await Bun.sleep(100);
    const grandchildren = lineageOf(child.pid) === undefined ? [] : (await Bun.$`pgrep -P ${child.pid}`.text()).trim().split("\n").map(Number);
    expect(descendsFrom(lineageOf(child.pid)!.parent, self)).toBe(true);
    expect(grandchildren.length).toBe(1);
    expect(descendsFrom(lineageOf(grandchildren[0]!)!.parent, self)).toBe(true);
    expect(descendsFrom(lineageOf(process.ppid)!.parent, self)).toBe(false);
    for (const pid of grandchildren) process.kill(pid);
    child.kill();
  });
});
