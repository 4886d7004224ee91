import { describe, expect, test } from "bun:test";
import { CniError } from "../errors.ts";
import type { Result } from "../types.ts";
import { formatResult } from "./format.ts";
import { parsePrevResult, parseResult, prevResultOf } from "./prevresult.ts";
import { golden, richResult } from "./testdata/fixtures.ts";

function cniError(f: () => unknown): CniError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(CniError);
    return err as CniError;
  }
  throw new Error("expected a CniError");
}

/** The rich result as it survives a trip through `v` (0.x loses what that version cannot say). */
function richAfter(v: string): Result {
  const r = richResult();
  if (v.startsWith("0.")) {
    r.interfaces = r.interfaces!.map(({ name, mac, sandbox }) => ({ name, mac: mac!, sandbox: sandbox! }));
  }
  return r;
}

describe("round trips through printed text", () => {
  for (const v of ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]) {
    test(`${v} → current → ${v} is stable`, () => {
      const parsed = parsePrevResult(JSON.parse(golden(`rich-${v}.json`)), v);
      expect(parsed).toEqual({ cniVersion: "1.1.0", ...richAfter(v) });
      expect(formatResult(parsed, v)).toBe(golden(`rich-${v}.json`));
    });
  }
  for (const v of ["0.1.0", "0.2.0"]) {
    test(`${v} → current → ${v} is stable`, () => {
      const parsed = parsePrevResult(JSON.parse(golden(`rich-${v}.json`)), v);
      expect(formatResult(parsed, v)).toBe(golden(`rich-${v}.json`));
    });
  }

  test("0.2.0 → current: ip4 then ip6 become ips, their routes become top-level routes", () => {
    const parsed = parsePrevResult(JSON.parse(golden("rich-0.2.0.json")), "0.2.0");
    expect(parsed).toEqual({
      cniVersion: "1.1.0",
      ips: [
        { address: "10.1.2.3/24", gateway: "10.1.2.1" },
        { address: "2001:db8::3/64", gateway: "2001:db8::1" },
      ],
      routes: [
        { dst: "0.0.0.0/0", gw: "10.1.2.1" },
        { dst: "192.168.0.0/16" },
        { dst: "::/0", gw: "2001:db8::1" },
        { dst: "2001:db8:1::/48" },
      ],
      dns: richResult().dns!,
    });
  });

  test("0.4.0 → current drops `version`, and the family is re-derived from the address on the way back", () => {
    const raw = { cniVersion: "0.4.0", ips: [{ version: "6", address: "10.0.0.2/24" }] };
    const parsed = parsePrevResult(raw, "0.4.0");
    expect(parsed.ips).toEqual([{ address: "10.0.0.2/24" }]);
    expect(formatResult(parsed, "0.4.0")).toContain('"version": "4"');
  });
});

describe("parsePrevResult: version rules", () => {
  test("a prevResult from another family is rejected with upstream's message, code 6", () => {
    const err = cniError(() => parsePrevResult({ cniVersion: "1.0.0" }, "0.4.0"));
    expect(err.code).toBe(6);
    expect(err.message).toBe('could not parse prevResult: result type supports [0.3.0 0.3.1 0.4.0] but unmarshalled CNIVersion is "1.0.0"');
    expect(cniError(() => parsePrevResult({ cniVersion: "0.4.0" }, "1.1.0")).message).toBe(
      'could not parse prevResult: result type supports [1.0.0 1.1.0] but unmarshalled CNIVersion is "0.4.0"',
    );
    expect(cniError(() => parsePrevResult({ cniVersion: "0.4.0" }, "0.2.0")).message).toBe(
      'could not parse prevResult: result type supports [ 0.1.0 0.2.0] but unmarshalled CNIVersion is "0.4.0"',
    );
  });

  test("versions of the same family are accepted", () => {
    expect(parsePrevResult({ cniVersion: "0.3.0" }, "0.4.0")).toEqual({ cniVersion: "1.1.0" });
    expect(parsePrevResult({ cniVersion: "1.0.0" }, "1.1.0")).toEqual({ cniVersion: "1.1.0" });
    expect(parsePrevResult({ cniVersion: "0.1.0" }, "0.2.0")).toEqual({ cniVersion: "1.1.0" });
  });

  test("a missing cniVersion takes the config's version", () => {
    const parsed = parsePrevResult({ ips: [{ version: "4", address: "1.2.3.4/8" }] }, "0.4.0");
    expect(parsed).toEqual({ cniVersion: "1.1.0", ips: [{ address: "1.2.3.4/8" }] });
    expect(parsePrevResult({}, "1.0.0")).toEqual({ cniVersion: "1.1.0" });
  });

  test("an empty lower-case cniVersion wins over the injected one (it sorts after `CNIVersion`)", () => {
    expect(cniError(() => parsePrevResult({ cniVersion: "" }, "0.4.0")).message).toBe(
      'could not parse prevResult: result type supports [0.3.0 0.3.1 0.4.0] but unmarshalled CNIVersion is ""',
    );
  });

  test("an explicit `CNIVersion` key is used when no lower-case key exists", () => {
    expect(parsePrevResult({ CNIVersion: "0.3.0" }, "0.4.0")).toEqual({ cniVersion: "1.1.0" });
    expect(cniError(() => parsePrevResult({ CNIVersion: "1.0.0" }, "0.4.0")).message).toContain('is "1.0.0"');
  });

  test("decoding errors carry Go's wording", () => {
    expect(cniError(() => parsePrevResult({ cniVersion: 4 }, "0.4.0")).message).toBe(
      "could not parse prevResult: json: cannot unmarshal number into Go struct field Result.cniVersion of type string",
    );
    expect(cniError(() => parsePrevResult({ ips: [{ version: "4", address: "1.2.3.4" }] }, "0.4.0")).message).toBe(
      "could not parse prevResult: invalid CIDR address: 1.2.3.4",
    );
    expect(cniError(() => parsePrevResult({ ips: [{ address: "1.2.3.4/8", gateway: "x" }] }, "1.0.0")).message).toBe(
      "could not parse prevResult: invalid IP address: x",
    );
    expect(cniError(() => parsePrevResult([], "1.0.0")).code).toBe(6);
    expect(cniError(() => parsePrevResult("x", "1.0.0")).message).toContain("cannot unmarshal string");
  });

  test("entries Go would keep as unusable zero values are rejected", () => {
    expect(cniError(() => parsePrevResult({ ips: [{ gateway: "1.1.1.1" }] }, "1.0.0")).message).toBe(
      'could not parse prevResult: ips[0]: missing "address"',
    );
    expect(cniError(() => parsePrevResult({ routes: [{ gw: "1.1.1.1" }] }, "0.4.0")).message).toBe(
      'could not parse prevResult: routes[0]: missing "dst"',
    );
  });

  test("keys match case-insensitively, unknown keys are dropped, an empty gateway is unset", () => {
    const parsed = parsePrevResult(
      { CniVersion: "1.0.0", IPs: [{ Address: "10.0.0.2/24", gateway: "" }], extra: 1, Interfaces: [{ NAME: "eth0", Foo: 1 }] },
      "1.1.0",
    );
    expect(parsed).toEqual({ cniVersion: "1.1.0", interfaces: [{ name: "eth0" }], ips: [{ address: "10.0.0.2/24" }] });
  });

  test("addresses are canonicalised as Go's net types do", () => {
    const parsed = parsePrevResult({ cniVersion: "1.0.0", ips: [{ address: "2001:DB8:0::3/64", gateway: "2001:db8:0::1" }] }, "1.0.0");
    expect(parsed.ips).toEqual([{ address: "2001:db8::3/64", gateway: "2001:db8::1" }]);
  });

  test("prevResultOf finds the key like Go and treats null as absent", () => {
    expect(prevResultOf({ prevResult: { a: 1 } })).toEqual({ a: 1 });
    expect(prevResultOf({ PrevResult: { b: 1 } })).toEqual({ b: 1 });
    expect(prevResultOf({ prevResult: null })).toBeUndefined();
    expect(prevResultOf({})).toBeUndefined();
  });
});

describe("parseResult (delegate output)", () => {
  const ipam = '{"ips":[{"address":"10.1.0.5/16","gateway":"10.1.0.1"}],"routes":[{"dst":"0.0.0.0/0"}],"dns":{}}';

  test("a missing cniVersion is fixed up to the config's version", () => {
    expect(parseResult(ipam, "1.1.0")).toEqual({
      cniVersion: "1.1.0",
      ips: [{ address: "10.1.0.5/16", gateway: "10.1.0.1" }],
      routes: [{ dst: "0.0.0.0/0" }],
    });
    // For a 0.4.0 config the same text is read as a 0.4.0 result; `version` is optional there.
    expect(parseResult(ipam, "0.4.0").ips).toEqual([{ address: "10.1.0.5/16", gateway: "10.1.0.1" }]);
  });

  test("an empty or non-string cniVersion is fixed up too", () => {
    expect(parseResult('{"cniVersion":"","ips":[{"address":"10.1.0.5/16"}]}', "1.0.0").ips).toEqual([{ address: "10.1.0.5/16" }]);
    expect(parseResult('{"cniVersion":5}', "1.0.0")).toEqual({ cniVersion: "1.1.0" });
    expect(parseResult("null", "1.0.0")).toEqual({ cniVersion: "1.1.0" });
  });

  test("a result's own version is respected and converted", () => {
    const text = '{"cniVersion":"0.2.0","ip4":{"ip":"10.1.0.5/16","routes":[{"dst":"0.0.0.0/0"}]},"dns":{}}';
    expect(parseResult(text, "1.1.0")).toEqual({
      cniVersion: "1.1.0",
      ips: [{ address: "10.1.0.5/16" }],
      routes: [{ dst: "0.0.0.0/0" }],
    });
  });

  test("bad output fails with code 6", () => {
    for (const [text, msg] of [
      ["[]", "failed to unmarshal raw result: json: cannot unmarshal array into Go value of type map[string]interface {} result []"],
      ['{"cniVersion":"9.9.9"}', 'unsupported CNI result version "9.9.9"'],
      ['{"ips":[{"address":"nope"}]}', "invalid CIDR address: nope"],
    ] as const) {
      const err = cniError(() => parseResult(text, "1.0.0"));
      expect(err.code).toBe(6);
      expect(err.message).toBe(msg);
    }
    const err = cniError(() => parseResult("{", "1.0.0"));
    expect(err.code).toBe(6);
    expect(err.message).toStartWith("failed to unmarshal raw result: ");
  });
});
