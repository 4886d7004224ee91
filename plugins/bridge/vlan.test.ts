import { describe, expect, test } from "bun:test";
import { collectVlanTrunk, validateAccessVlan } from "./vlan.ts";

describe("collectVlanTrunk (upstream table)", () => {
  const ok: [string, Parameters<typeof collectVlanTrunk>[0], number[] | undefined][] = [
    ["absent list → undefined", undefined, undefined],
    ["empty list → none, but configured", [], []],
    ["min/max range", [{ minID: 100, maxID: 103 }], [100, 101, 102, 103]],
    ["single id", [{ id: 100 }], [100]],
    ["id + range, merged, sorted, unique", [{ id: 202 }, { minID: 200, maxID: 203 }, { id: 5 }], [5, 200, 201, 202, 203]],
    ["range bounds 1 and 4094", [{ minID: 1, maxID: 1 }, { id: 4094 }], [1, 4094]],
  ];
  for (const [name, input, want] of ok) test(name, () => expect(collectVlanTrunk(input)).toEqual(want));

  const bad: [string, Parameters<typeof collectVlanTrunk>[0], string][] = [
    ["maxID missing", [{ minID: 100 }], "minID and maxID should be configured simultaneously, maxID is missing"],
    ["minID missing", [{ maxID: 100 }], "minID and maxID should be configured simultaneously, minID is missing"],
    ["minID negative", [{ minID: -100, maxID: 200 }], "incorrect trunk minID parameter"],
    ["minID > 4094", [{ minID: 5000, maxID: 6000 }], "incorrect trunk minID parameter"],
    ["minID 0", [{ minID: 0, maxID: 10 }], "incorrect trunk minID parameter"],
    ["maxID > 4094", [{ minID: 100, maxID: 5000 }], "incorrect trunk maxID parameter"],
    ["maxID negative", [{ minID: 100, maxID: -200 }], "incorrect trunk maxID parameter"],
    ["id > 4094", [{ id: 5000 }], "incorrect trunk id parameter"],
    ["id negative", [{ id: -100 }], "incorrect trunk id parameter"],
    ["maxID < minID", [{ minID: 500, maxID: 100 }], "minID is greater than maxID in trunk parameter"],
  ];
  for (const [name, input, msg] of bad) {
    test(`${name} → "${msg}"`, () => {
      expect(() => collectVlanTrunk(input)).toThrow(msg);
    });
  }
});

describe("validateAccessVlan", () => {
  test("accepts 0..4094", () => {
    for (const v of [0, 1, 100, 4094]) expect(() => validateAccessVlan(v)).not.toThrow();
  });
  test("refuses out-of-range ids with upstream's message", () => {
    expect(() => validateAccessVlan(-1)).toThrow("invalid VLAN ID -1 (must be between 0 and 4094)");
    expect(() => validateAccessVlan(5000)).toThrow("invalid VLAN ID 5000 (must be between 0 and 4094)");
  });
});
