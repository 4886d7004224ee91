import { describe, expect, test } from "bun:test";
import { nativeCommand } from "../../test/harness/arch.ts";
import { mark, phasesEnabled, phasesReport, spanEnd, spanStart } from "./phases.ts";

describe("phase timer", () => {
  test("off (no CNI_PHASES): records nothing and reports nothing", () => {
    expect(phasesEnabled).toBe(false);
    mark("entry");
    spanEnd("socket", spanStart());
    expect(spanStart()).toBe(0);
    expect(phasesReport()).toBe("");
  });

  test("on: one CNI_PHASES line with marks in order and summed spans", () => {
    const script = `
      import { mark, phasesReport, spanEnd, spanStart } from ${JSON.stringify(`${import.meta.dir}/phases.ts`)};
      mark("entry");
      for (let i = 0; i < 3; i++) { const t = spanStart(); Bun.sleepSync(2); spanEnd("socket", t); }
      mark("handler done");
      process.stdout.write(phasesReport());
    `;
    const r = Bun.spawnSync({ cmd: nativeCommand([process.execPath, "-e", script]), env: { ...process.env, CNI_PHASES: "1" }, stdout: "pipe", stderr: "pipe" });
    expect(r.exitCode).toBe(0);
    const line = r.stdout.toString();
    expect(line.startsWith("CNI_PHASES {")).toBe(true);
    expect(line.endsWith("}\n")).toBe(true);
    const p = JSON.parse(line.slice("CNI_PHASES ".length)) as { origin: number; marks: [string, number][]; spans: Record<string, [number, number]> };
    expect(Math.abs(p.origin - Date.now())).toBeLessThan(60_000);
    expect(p.marks.map(([l]) => l)).toEqual(["entry", "handler done"]);
    expect(p.marks[1]![1]).toBeGreaterThanOrEqual(p.marks[0]![1]);
    expect(p.spans.socket![1]).toBe(3);
    expect(p.spans.socket![0]).toBeGreaterThanOrEqual(6);
  });
});
