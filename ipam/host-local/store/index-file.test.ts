import { describe, expect, test } from "bun:test";
import { decodeEntry, decodeIndex, encodeEntries, encodeEntry, IndexBody, IndexCorruptError, type IndexEntry } from "./index-file.ts";

const entry = (name: string, key: string | null, ino = "7"): IndexEntry => ({ name, ino, ctimeNs: "1700000000000000000", size: 9, stable: true, key });

describe("owner index lines", () => {
  test("an entry survives encoding, whatever its name and key contain", () => {
    for (const e of [
      entry("10.0.0.2", "c1\r\neth0"),
      entry("fd00::2", "legacy-id"),
      entry("sub/x", null),
      entry('we\tird\n"name"', 'key\twith\n"all"\\ of \u00e9 it'),
      entry("10.0.0.3", ""),
    ]) {
      const line = encodeEntry(e);
      expect(line.endsWith("\n")).toBe(true);
      expect(line.slice(0, -1).includes("\n")).toBe(false);
      expect(decodeEntry(line.slice(0, -1))).toEqual(e);
    }
  });

  test("malformed lines are refused", () => {
    for (const bad of ["", '"a"\t1\t2\t3\t1', '"a"\tx\t2\t3\t1\t"k"', '"a"\t1\t2\t3\t2\t"k"', 'a\t1\t2\t3\t1\t"k"', '"a"\t1\t2\t3\t1\t5']) {
      expect(() => decodeEntry(bad)).toThrow(IndexCorruptError);
    }
  });
});

describe("IndexBody", () => {
  const body = new IndexBody(
    encodeEntries([entry("10.0.0.2", "a\r\neth0"), entry("10.0.0.3", "b\r\neth0"), entry("10.0.0.4", "a\r\neth0"), entry("10.0.0.5", "a"), entry("10.0.0.6", null)]),
  );

  test("finds names by exact key, never by a key that merely contains it", () => {
    expect(body.namesWithKey("a\r\neth0")).toEqual(["10.0.0.2", "10.0.0.4"]);
    expect(body.namesWithKey("a")).toEqual(["10.0.0.5"]);
    expect(body.namesWithKey("b\r\neth1")).toEqual([]);
    expect(body.namesWithKey("eth0")).toEqual([]);
  });

  test("finds lines by exact name, the first line included", () => {
    expect(body.has("10.0.0.2")).toBe(true);
    expect(body.has("10.0.0.6")).toBe(true);
    expect(body.has("10.0.0.1")).toBe(false);
    expect(body.has("0.0.2")).toBe(false);
  });

  test("tells a line's owner key and leading fields without parsing the line", () => {
    expect(body.hasKey("10.0.0.5", "a")).toBe(true);
    expect(body.hasKey("10.0.0.2", "a")).toBe(false);
    expect(body.hasKey("10.0.0.6", "")).toBe(false); // unreadable (null), not empty
    expect(new IndexBody(encodeEntry(entry("10.0.0.3", ""))).hasKey("10.0.0.3", "")).toBe(true);
    expect(body.hasKey("10.0.0.9", "a")).toBe(false);
    expect(body.lineContinues("10.0.0.3", "7\t1700000000000000000\t9\t1\t")).toBe(true);
    expect(body.lineContinues("10.0.0.3", "8\t")).toBe(false);
    expect(body.lineContinues("10.0.0.9", "7\t")).toBe(false);
  });

  test("after a few lookups it indexes its lines by name and answers exactly as the text search did", () => {
    const names = ["10.0.0.2", "10.0.0.6", "10.0.0.1", "0.0.2", "10.0.0.5", "10.0.0.3", "10.0.0.4", "10.0.0.", "x", "10.0.0.60"];
    const searched = new IndexBody(body.text);
    const bySearch = names.slice(0, 4).map((n) => searched.lineStart(n)); // below the threshold
    const indexed = new IndexBody(body.text);
    for (let i = 0; i < 4; i++) indexed.lineStart("warm-up");
    expect(indexed.indexed).toBe(false);
    indexed.lineStart("warm-up");
    expect(indexed.indexed).toBe(true);
    expect(names.slice(0, 4).map((n) => indexed.lineStart(n))).toEqual(bySearch);
    for (const n of names) expect(indexed.lineStart(n)).toBe(new IndexBody(body.text).lineStart(n));
    expect([...indexed.names()]).toEqual(["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]);
    expect(indexed.wellFormed()).toBe(true);
  });

  test("names that need escapes are indexed by their JSON text; malformed or repeated lines are stray", () => {
    const odd = 'we\tird "name"';
    const text = encodeEntry(entry(odd, "k")) + '"unterminated\t1\t2\t3\t1\t"k"\nno-tab-here\n' + encodeEntry(entry("10.0.0.2", "a"));
    const dup = `${text}${encodeEntry(entry("10.0.0.2", "b"))}`;
    for (const t of [text, dup]) {
      const b = new IndexBody(t);
      expect([...b.names()]).toEqual([odd, "10.0.0.2"]);
      expect(b.wellFormed()).toBe(false);
      expect(b.lineStart(odd)).toBe(0);
      expect(b.hasKey("10.0.0.2", "a")).toBe(true); // the first line of a name wins, as the search
    }
    expect(new IndexBody("").wellFormed()).toBe(true);
  });

  test("removes lines by name, keeping the rest in order", () => {
    const rest = new IndexBody(body.without(["10.0.0.4", "10.0.0.2", "10.0.0.9"]));
    expect(rest.entries().map((e) => e.name)).toEqual(["10.0.0.3", "10.0.0.5", "10.0.0.6"]);
    expect(body.without([])).toBe(body.text);
  });

  test("a torn last line is corrupt", () => {
    expect(() => new IndexBody('"10.0.0.2"\t1\t2\t3\t1\t"a"').entries()).toThrow(IndexCorruptError);
  });
});

describe("decodeIndex", () => {
  const header = (nested: string, stamp: string) => `#host-local owner index v2 nested=${nested} stamp=${stamp}\n`;

  test("reads the stamp and nested flag, and keeps the body unparsed", () => {
    const idx = decodeIndex(header("1", "01795311489977000000") + encodeEntry(entry("10.0.0.2", "a")));
    expect(idx?.stamp).toBe(1795311489977000000n);
    expect(idx?.nested).toBe(true);
    expect(idx?.body.namesWithKey("a")).toEqual(["10.0.0.2"]);
  });

  test("refuses v1 files, bad headers and a torn body", () => {
    for (const bad of [
      '#host-local owner index v1 stamp=01795311489977000000\n{"nested":false,"entries":[]}\n',
      header("2", "01795311489977000000"),
      header("0", "0179531148997700000x"),
      header("0", "01795311489977000000") + '"10.0.0.2"\t1',
      "",
    ]) {
      expect(decodeIndex(bad)).toBeNull();
    }
  });
});
