import { describe, expect, test } from "bun:test";
import { parsePhases, phasesOf } from "./scenarios.ts";

describe("phase breakdown of one call", () => {
  const line = `CNI_PHASES ${JSON.stringify({
    origin: 1000,
    marks: [
      ["entry", 10],
      ["plugin loaded", 14],
      ["stdin read", 14.5],
      ["config parsed", 15],
      ["handler done", 40],
      ["result formatted", 41],
      ["result written", 42],
    ],
    spans: { delegate: [6, 1], socket: [5, 60], setns: [1, 8], decode: [0.5, 3], dlopen: [0.7, 1] },
  })}`;

  test("finds the CNI_PHASES line among other stderr output", () => {
    expect(parsePhases(`warning: x\n${line}\n`)?.origin).toBe(1000);
    expect(parsePhases("nothing here\n")).toBeUndefined();
  });

  test("phases add up to the call's wall time, from spawn to reaped", () => {
    const p = phasesOf(parsePhases(line)!, 1002, 1045);
    expect(p["process start (exec to cli/dispatch.ts)"]).toBe(8);
    expect(p["plugin module load"]).toBe(4);
    expect(p["stdin read and JSON parse"]).toBe(1);
    expect(p["IPAM (host-local, in process)"]).toBe(6);
    expect(p["netlink and setns"]).toBe(6);
    expect(p["firewall, sysctl and plugin logic"]).toBe(13);
    expect(p["result (convert and write)"]).toBe(2);
    expect(p["exit (to reaped)"]).toBe(3);
    expect(p.total).toBe(43);
    const parts = Object.entries(p).filter(([k]) => k !== "total" && !k.startsWith(" "));
    expect(parts.reduce((a, [, v]) => a + v, 0)).toBeCloseTo(p.total!, 9);
  });

  test("a missing mark is an error, not a zero", () => {
    expect(() => phasesOf({ origin: 0, marks: [["entry", 1]], spans: {} }, 0, 5)).toThrow('phase mark "plugin loaded" missing');
  });
});
