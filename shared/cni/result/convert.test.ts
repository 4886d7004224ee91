import { describe, expect, test } from "bun:test";
import { CniError } from "../errors.ts";
import { ALL_VERSIONS, resultFamily } from "../version.ts";
import { convertResult, convertVersioned, registerConverter } from "./convert.ts";
import { versionedJson } from "./format.ts";
import { goJsonMarshalIndent } from "./go-json.ts";
import { createResult } from "./prevresult.ts";
import type { ResultV040 } from "./wire.ts";
import { golden, richResult } from "./testdata/fixtures.ts";

function relabel(text: string, to: string): string {
  return text.replace(/^(\{\n {4}"cniVersion": )"[^"]*"/, `$1"${to}"`);
}

/**
 * What the rich result looks like in `to` after starting out printed in `from`: what `from` cannot
 * express is gone for good (0.x has no interface mtu/socketPath/pciID; 0.1.0/0.2.0 has no interfaces,
 * one address per family and only dst/gw in routes).
 */
function expected(from: string, to: string): string {
  const f = resultFamily(from);
  const t = resultFamily(to);
  if (f === "100" || t === "020") return golden(`rich-${to}.json`);
  if (f === "040") return t === "040" ? golden(`rich-${to}.json`) : relabel(golden("rich-via-0.4.0-1.1.0.json"), to);
  return relabel(golden(t === "040" ? "rich-via-0.2.0-0.4.0.json" : "rich-via-0.2.0-1.1.0.json"), to);
}

describe("every version pair", () => {
  for (const from of ALL_VERSIONS) {
    for (const to of ALL_VERSIONS) {
      test(`${from} → ${to}`, () => {
        const start = createResult(from, JSON.parse(golden(`rich-${from}.json`)));
        const converted = convertVersioned(start, to);
        expect(converted.cniVersion).toBe(to);
        expect(goJsonMarshalIndent(versionedJson(converted))).toBe(expected(from, to));
      });
    }
  }
});

describe("convertVersioned", () => {
  test("the same version returns the same object", () => {
    const r = createResult("0.4.0", JSON.parse(golden("rich-0.4.0.json")));
    expect(convertVersioned(r, "0.4.0")).toBe(r);
  });

  test("conversion copies: changing the output leaves the input alone", () => {
    const r = createResult("0.4.0", JSON.parse(golden("rich-0.4.0.json")));
    const out = convertVersioned(r, "0.3.1") as ResultV040;
    out.ips![0]!.address = "1.1.1.1/32";
    out.routes![0]!.gw = "1.1.1.1";
    out.dns!.nameservers!.push("9.9.9.9");
    expect(goJsonMarshalIndent(versionedJson(r))).toBe(golden("rich-0.4.0.json"));
  });

  test("an empty target means 0.1.0", () => {
    expect(convertVersioned(createResult("1.1.0", JSON.parse(golden("rich-1.1.0.json"))), "").cniVersion).toBe("0.1.0");
  });

  test("unknown versions on either side fail with upstream's message", () => {
    const r = createResult("1.1.0", JSON.parse(golden("rich-1.1.0.json")));
    expect(() => convertVersioned(r, "1.0")).toThrow("no converter for CNI result version 1.1.0 to 1.0");
    expect(() => convertVersioned({ ...r, cniVersion: "2.0.0" }, "1.1.0")).toThrow(
      "no converter for CNI result version 2.0.0 to 1.1.0",
    );
  });
});

describe("convertResult", () => {
  test("returns the versioned object of the target version", () => {
    const v040 = convertResult(richResult(), "0.4.0");
    expect(v040.cniVersion).toBe("0.4.0");
    expect((v040 as { ips: { version: string }[] }).ips.map((ip) => ip.version)).toEqual(["4", "6", "4", "6"]);
    const v020 = convertResult(richResult(), "0.2.0") as { ip4?: { ip: string }; ip6?: { ip: string } };
    expect(v020.ip4?.ip).toBe("10.1.2.3/24");
    expect(v020.ip6?.ip).toBe("2001:db8::3/64");
  });

  test("ignores the label on the input: a Result is always the current type", () => {
    expect(convertResult({ ...richResult(), cniVersion: "0.4.0" }, "1.0.0").cniVersion).toBe("1.0.0");
    expect(goJsonMarshalIndent(versionedJson(convertResult({ ...richResult(), cniVersion: "0.4.0" }, "1.1.0")))).toBe(
      golden("rich-1.1.0.json"),
    );
  });
});

describe("registerConverter", () => {
  test("rejects a second converter for a registered pair, like libcni", () => {
    convertResult(richResult(), "0.4.0"); // built-ins registered on first use
    let err: unknown;
    try {
      registerConverter("100", "040", (r) => r);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CniError);
    expect((err as Error).message).toBe("converter already registered for 100 to 040");
  });
});
