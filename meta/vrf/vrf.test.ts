import { describe, expect, test } from "bun:test";
import { freeVrfTable } from "./vrf.ts";

describe("vrf table selection (upstream findFreeRoutingTableID)", () => {
  test("empty → 1; the lowest unused id ≥ 1 otherwise", () => {
    expect(freeVrfTable([])).toBe(1);
    expect(freeVrfTable([{ table: 1 }, { table: 2 }, { table: 4 }])).toBe(3);
  });
  test("works with 999 VRFs", () => {
    expect(freeVrfTable(Array.from({ length: 999 }, (_, i) => ({ table: i + 1 })))).toBe(1000);
  });
});
