import { describe, expect, test } from "bun:test";
import { goQuote, goUnquote } from "./go-quote.ts";

describe("Go %q", () => {
  test("escapes like strconv.Quote: short escapes, \\x for C0/DEL, \\u/\\U for other non-printables, never HTML", () => {
    expect(goQuote("plain text")).toBe('"plain text"');
    expect(goQuote('a"b\\c\n\t\x07')).toBe('"a\\"b\\\\c\\n\\t\\a"');
    expect(goQuote("x\u0001\u007f")).toBe('"x\\x01\\x7f"');
    expect(goQuote("\u00a0é😀\u200b")).toBe('"\\u00a0é😀\\u200b"');
    expect(goQuote("\u{e0001}")).toBe('"\\U000e0001"');
    expect(goQuote("<a&b>")).toBe('"<a&b>"');
  });
  test("goUnquote reads back what goQuote prints, and nothing else", () => {
    for (const s of ["", 'a"b\\c', "x\ty\u0001\u00a0é", "😀\u200b\u{10ffff}"]) expect(goUnquote(goQuote(s))).toBe(s);
    expect(goUnquote('"\\q"')).toBeUndefined();
    expect(goUnquote('"\\x41"')).toBeUndefined(); // goQuote prints "A", never \x41
    expect(goUnquote("plain")).toBeUndefined();
  });
});
