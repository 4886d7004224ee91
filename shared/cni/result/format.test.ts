import { describe, expect, test } from "bun:test";
import { CniError } from "../errors.ts";
import { ALL_VERSIONS } from "../version.ts";
import { formatResult, formatResultRelabelled } from "./format.ts";
import { golden, l2Result, loopbackResult, richResult } from "./testdata/fixtures.ts";

function cniError(f: () => unknown): CniError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(CniError);
    return err as CniError;
  }
  throw new Error("expected a CniError");
}

describe("formatResult: golden text for every version", () => {
  for (const v of ALL_VERSIONS) {
    test(v, () => {
      expect(formatResult(richResult(), v)).toBe(golden(`rich-${v}.json`));
    });
  }

  test("an empty target version prints the real 0.1.0 shape", () => {
    expect(formatResult(richResult(), "")).toBe(golden("rich-0.1.0.json"));
  });

  test("0.1.0 and 0.2.0 differ only in the label; likewise within 0.3.x/0.4.0 and 1.x", () => {
    const relabel = (text: string, from: string, to: string) => text.replace(`"cniVersion": "${from}"`, `"cniVersion": "${to}"`);
    expect(relabel(golden("rich-0.1.0.json"), "0.1.0", "0.2.0")).toBe(golden("rich-0.2.0.json"));
    expect(relabel(golden("rich-0.3.0.json"), "0.3.0", "0.4.0")).toBe(golden("rich-0.4.0.json"));
    expect(relabel(golden("rich-0.3.1.json"), "0.3.1", "0.4.0")).toBe(golden("rich-0.4.0.json"));
    expect(relabel(golden("rich-1.0.0.json"), "1.0.0", "1.1.0")).toBe(golden("rich-1.1.0.json"));
  });

  test("never ends with a newline", () => {
    for (const v of ALL_VERSIONS) expect(formatResult(richResult(), v).endsWith("}")).toBe(true);
  });

  test("does not modify its input", () => {
    const r = richResult();
    for (const v of ALL_VERSIONS) formatResult(r, v);
    expect(r).toEqual(richResult());
  });
});

describe("formatResult: shapes", () => {
  test("every version carries dns, an empty object when empty (Go 1.1.1; iSulad's libcni requires it)", () => {
    const r = { ips: [{ address: "10.0.0.2/24" }] };
    expect(formatResult(r, "0.2.0")).toBe('{\n    "cniVersion": "0.2.0",\n    "ip4": {\n        "ip": "10.0.0.2/24"\n    },\n    "dns": {}\n}');
    expect(formatResult(r, "0.4.0")).toContain('"dns": {}');
    expect(formatResult(r, "1.0.0")).toBe(
      '{\n    "cniVersion": "1.0.0",\n    "dns": {},\n    "ips": [\n        {\n            "address": "10.0.0.2/24"\n        }\n    ]\n}',
    );
    expect(formatResult({ ...r, dns: { nameservers: [], search: [] } }, "1.1.0")).toContain('"dns": {},');
    for (const v of ALL_VERSIONS) expect(JSON.parse(formatResult(r, v)).dns).toEqual({});
  });

  test("L2-only results print for 0.3.0+ and fail for 0.1.0/0.2.0 with upstream's message", () => {
    expect(formatResult(l2Result(), "0.4.0")).toBe(golden("l2-0.4.0.json"));
    expect(formatResult(l2Result(), "1.1.0")).toBe(golden("l2-1.1.0.json"));
    for (const v of ["0.1.0", "0.2.0", ""]) {
      const err = cniError(() => formatResult(l2Result(), v));
      expect(err.code).toBe(999);
      expect(err.message).toBe("cannot convert: no valid IP addresses");
    }
  });

  test("0.2.0 keeps only the first address of each family and routes whose family has an address", () => {
    const r = {
      ips: [{ address: "10.0.0.2/24" }, { address: "10.0.1.2/24" }],
      routes: [{ dst: "10.0.0.0/8" }, { dst: "::/0", gw: "fd00::1" }],
    };
    expect(formatResult(r, "0.2.0")).toBe(
      [
        "{",
        '    "cniVersion": "0.2.0",',
        '    "ip4": {',
        '        "ip": "10.0.0.2/24",',
        '        "routes": [',
        "            {",
        '                "dst": "10.0.0.0/8"',
        "            }",
        "        ]",
        "    },",
        '    "dns": {}',
        "}",
      ].join("\n"),
    );
  });

  test("unknown target versions fail with upstream's message", () => {
    const err = cniError(() => formatResult(richResult(), "9.9.9"));
    expect(err.code).toBe(999);
    expect(err.message).toBe("no converter for CNI result version 1.1.0 to 9.9.9");
  });

  test("addresses, gateways and route destinations are printed in Go's canonical form", () => {
    const r = {
      ips: [{ address: "2001:0DB8:0000::0003/64", gateway: "2001:db8:0:0:0:0:0:1" }, { address: "::ffff:10.1.2.3/120" }],
      routes: [{ dst: "3ffe:ffff:0:01ff::1/64", gw: "::ffff:10.1.1.1" }],
    };
    const text = formatResult(r, "0.4.0");
    expect(text).toContain('"address": "2001:db8::3/64"');
    expect(text).toContain('"gateway": "2001:db8::1"');
    // Go prints an IPv4-mapped IPNet with the low 32 bits of its mask [observed, 1.1.1 static].
    expect(text).toContain('"version": "4",\n            "address": "10.1.2.3/24"');
    expect(text).toContain('"dst": "3ffe:ffff:0:1ff::1/64",\n            "gw": "10.1.1.1"');
  });

  test("an invalid address is an error, not garbage output", () => {
    expect(() => formatResult({ ips: [{ address: "10.0.0.2" }] }, "1.1.0")).toThrow("invalid CIDR address: 10.0.0.2");
    expect(() => formatResult({ routes: [{ dst: "0.0.0.0/0", gw: "x" }] }, "1.1.0")).toThrow("invalid IP address: x");
  });

  test("strings use Go escaping", () => {
    const text = formatResult({ ips: [{ address: "10.0.0.2/24" }], dns: { domain: "a<b>&c\u2028" } }, "1.1.0");
    expect(text).toContain(String.raw`"domain": "a\u003cb\u003e\u0026c\u2028"`);
  });

  test("zero route mtu/advmss/priority are omitted, zero table/scope kept; empty interface name kept", () => {
    const text = formatResult(
      { interfaces: [{ name: "" }], routes: [{ dst: "0.0.0.0/0", mtu: 0, advmss: 0, priority: 0, table: 0, scope: 0 }] },
      "1.1.0",
    );
    expect(text).toBe(
      [
        "{",
        '    "cniVersion": "1.1.0",',
        '    "dns": {},',
        '    "interfaces": [',
        "        {",
        '            "name": ""',
        "        }",
        "    ],",
        '    "routes": [',
        "        {",
        '            "dst": "0.0.0.0/0",',
        '            "scope": 0,',
        '            "table": 0',
        "        }",
        "    ]",
        "}",
      ].join("\n"),
    );
  });
});

describe("formatResultRelabelled (loopback quirk)", () => {
  test("prints the 1.x shape under a 0.x label", () => {
    expect(formatResultRelabelled(loopbackResult(), "0.3.1")).toBe(golden("loopback-0.3.1.json"));
  });
  test("0.1.0/0.2.0 labels keep the 1.x shape too", () => {
    const text = formatResultRelabelled(loopbackResult(), "0.2.0");
    expect(text).toBe(golden("loopback-0.3.1.json").replace('"0.3.1"', '"0.2.0"'));
    expect(text).not.toContain("ip4");
  });
  test("an empty label converts for real to 0.1.0", () => {
    expect(formatResultRelabelled(loopbackResult(), "")).toBe(golden("loopback-0.1.0.json"));
  });
  test("a 1.x label is the ordinary 1.x output", () => {
    expect(formatResultRelabelled(richResult(), "1.0.0")).toBe(golden("rich-1.0.0.json"));
  });
});
