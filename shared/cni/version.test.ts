import { describe, expect, test } from "bun:test";
import { CniError } from "./errors.ts";
import { ALL_VERSIONS, goQuoteList, parseVersion, resultFamily, versionGte, versionsFrom } from "./version.ts";

describe("versions", () => {
  test("compare numerically, not as strings", () => {
    expect(versionGte("0.10.0", "0.4.0")).toBe(true);
    expect(versionGte("0.3.1", "0.4.0")).toBe(false);
    expect(versionGte("1.1.0", "1.1.0")).toBe(true);
    expect(versionGte("1", "0.4.0")).toBe(true);
  });
  test("reject unparsable versions with code 6", () => {
    for (const bad of ["abc", "1.0.0.0", "1.x"]) {
      try {
        parseVersion(bad);
        throw new Error("parsed");
      } catch (err) {
        expect(err).toBeInstanceOf(CniError);
        expect((err as CniError).code).toBe(6);
      }
    }
  });
  test("versionsFrom lists the tail, the versions at or above the given one", () => {
    expect(versionsFrom("0.4.0")).toEqual(["0.4.0", "1.0.0", "1.1.0"]);
    for (const min of ALL_VERSIONS) expect(versionsFrom(min)).toEqual(ALL_VERSIONS.filter((v) => versionGte(v, min)));
  });
  test("every version has a result family", () => {
    for (const v of ALL_VERSIONS) expect(resultFamily(v)).toBeDefined();
    expect(resultFamily("9.9.9")).toBeUndefined();
  });
  test("goQuoteList matches Go's %q of a slice", () => {
    expect(goQuoteList(["0.1.0", "0.2.0"])).toBe('["0.1.0" "0.2.0"]');
  });
});
