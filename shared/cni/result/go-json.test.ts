import { describe, expect, test } from "bun:test";
import { goJsonMarshal, goJsonMarshalIndent, goJsonNumber, goJsonString, sortKeysDeep } from "./go-json.ts";

describe("goJsonString", () => {
  test("escapes HTML characters like Go", () => {
    expect(goJsonString("<a href='x'>&</a>")).toBe(String.raw`"\u003ca href='x'\u003e\u0026\u003c/a\u003e"`);
  });
  test("escapes quotes, backslashes and control characters", () => {
    expect(goJsonString('a"b\\c')).toBe(String.raw`"a\"b\\c"`);
    expect(goJsonString("\n\r\t\b\f")).toBe(String.raw`"\n\r\t\b\f"`);
    expect(goJsonString("\u0000\u0001\u001f")).toBe(String.raw`"\u0000\u0001\u001f"`);
  });
  test("escapes U+2028 and U+2029 but not DEL or other non-ASCII", () => {
    expect(goJsonString("\u2028x\u2029")).toBe(String.raw`"\u2028x\u2029"`);
    expect(goJsonString("\u007fé€😀")).toBe('"\u007fé€😀"');
  });
  test("replaces lone surrogates with U+FFFD", () => {
    expect(goJsonString("a\ud800b\udc00")).toBe('"a\ufffdb\ufffd"');
  });
});

describe("goJsonNumber", () => {
  test("matches Go's float64 formatting thresholds", () => {
    expect(goJsonNumber(1500)).toBe("1500");
    expect(goJsonNumber(4294967295)).toBe("4294967295");
    expect(goJsonNumber(0.5)).toBe("0.5");
    expect(goJsonNumber(1e21)).toBe("1e+21");
    expect(goJsonNumber(1e20)).toBe("100000000000000000000");
    expect(goJsonNumber(0.000001)).toBe("0.000001");
    expect(goJsonNumber(1.5e-7)).toBe("1.5e-7");
    expect(goJsonNumber(-0)).toBe("-0");
  });
  test("rejects values Go cannot encode", () => {
    expect(() => goJsonNumber(Number.NaN)).toThrow("unsupported value");
    expect(() => goJsonNumber(Infinity)).toThrow("unsupported value");
  });
});

describe("goJsonMarshalIndent", () => {
  test("indents with four spaces, keeps insertion order, no trailing newline", () => {
    const text = goJsonMarshalIndent({ code: 7, msg: "bad <config>", details: "x", nested: { b: [1, { c: true }], a: null } });
    expect(text).toBe(
      [
        "{",
        '    "code": 7,',
        '    "msg": "bad \\u003cconfig\\u003e",',
        '    "details": "x",',
        '    "nested": {',
        '        "b": [',
        "            1,",
        "            {",
        '                "c": true',
        "            }",
        "        ],",
        '        "a": null',
        "    }",
        "}",
      ].join("\n"),
    );
  });
  test("omits undefined members and prints empty containers inline", () => {
    expect(goJsonMarshalIndent({ a: undefined, b: [], c: {} })).toBe('{\n    "b": [],\n    "c": {}\n}');
    expect(goJsonMarshalIndent({})).toBe("{}");
    expect(goJsonMarshalIndent([])).toBe("[]");
  });
});

describe("goJsonMarshal", () => {
  test("is compact", () => {
    expect(goJsonMarshal({ a: [1, 2], b: { c: "&" } })).toBe('{"a":[1,2],"b":{"c":"\\u0026"}}');
  });
});

describe("sortKeysDeep", () => {
  test("sorts keys byte-wise at every level, upper case first", () => {
    const sorted = sortKeysDeep({ b: 1, a: { z: 1, Z: 2, y: [{ d: 1, c: 2 }] }, CNIVersion: "x", cniVersion: "y" });
    expect(goJsonMarshal(sorted)).toBe('{"CNIVersion":"x","a":{"Z":2,"y":[{"c":2,"d":1}],"z":1},"b":1,"cniVersion":"y"}');
  });
  test("drops undefined members", () => {
    expect(goJsonMarshal(sortKeysDeep({ b: undefined, a: 1 }))).toBe('{"a":1}');
  });
});
