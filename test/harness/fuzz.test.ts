import { describe, expect, test } from "bun:test";
import { fuzzConfigs, seededRandom } from "./fuzz.ts";

const base = { cniVersion: "1.0.0", name: "n", type: "bridge", mtu: 1400, ipam: { type: "host-local", ranges: [[{ subnet: "10.1.0.0/24" }]] } };
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("fuzzConfigs", () => {
  test("the same seed gives the same cases; another seed other ones", () => {
    const a = fuzzConfigs(base, seededRandom(7), 40, ["type", "number", "nest", "nul", "dup", "truncate"]);
    const b = fuzzConfigs(base, seededRandom(7), 40, ["type", "number", "nest", "nul", "dup", "truncate"]);
    const c = fuzzConfigs(base, seededRandom(8), 40, ["type", "number", "nest", "nul", "dup", "truncate"]);
    expect(a.map((x) => [x.label, text(x.stdin)])).toEqual(b.map((x) => [x.label, text(x.stdin)]));
    expect(a.map((x) => x.label)).not.toEqual(c.map((x) => x.label));
  });

  test("text that is not JSON (cut, raw NUL, nesting beyond 10000) must fail with code 6; the rest parses", () => {
    for (const c of fuzzConfigs(base, seededRandom(1), 60, ["rawnul", "truncate", "deep", "type", "number", "nest", "nul", "dup"])) {
      const s = text(c.stdin);
      if (c.mutation === "deep") {
        expect(c.expectCode).toBe(6);
        expect(Math.max(...s.match(/\[+/g)!.map((run) => run.length))).toBeGreaterThan(10_000);
      } else if (c.mutation === "rawnul" || c.mutation === "truncate") {
        expect(c.expectCode).toBe(6);
        expect(() => JSON.parse(s)).toThrow();
      } else {
        expect(c.expectCode).toBeUndefined();
        expect(typeof JSON.parse(s)).toBe("object");
      }
    }
  });

  test("nul puts a NUL into a string value; huge is a 10 MB stdin", () => {
    const [nul] = fuzzConfigs(base, seededRandom(3), 1, ["nul"]);
    expect(JSON.stringify(JSON.parse(text(nul!.stdin)))).toContain("\\u0000");
    const [huge] = fuzzConfigs(base, seededRandom(3), 1, ["huge"]);
    expect(huge!.stdin.byteLength).toBeGreaterThan(10 * 1024 * 1024);
  });
});
