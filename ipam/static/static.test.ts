/**
 * static, driven through its handlers with a CmdArgs built here (upstream static_test.go scenarios,
 * plus edge cases of the address sources and CHECK). No root needed.
 */
import { describe, expect, test } from "bun:test";
import { CniError } from "../../shared/cni/errors.ts";
import { formatResult } from "../../shared/cni/result/format.ts";
import type { CmdArgs, Command, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS, versionGte } from "../../shared/cni/version.ts";
import { staticPlugin } from "./static.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

function cmdArgs(conf: Record<string, unknown>, opts: { args?: string; command?: Command } = {}): CmdArgs {
  const text = JSON.stringify(conf);
  const v = typeof conf.cniVersion === "string" && conf.cniVersion !== "" ? conf.cniVersion : "0.1.0";
  return withDelegate({
    command: opts.command ?? "ADD",
    containerID: "dummy",
    netns: "/some/where",
    ifName: "eth0",
    args: opts.args ?? "",
    path: "/usr/lib/cni",
    stdinData: new TextEncoder().encode(text),
    config: JSON.parse(text) as Record<string, unknown>,
    cniVersion: v,
    env: {},
    stderr: () => {},
    scope: PROCESS_SCOPE,
  });
}

function add(conf: Record<string, unknown>, args?: string): Result {
  return staticPlugin.add(cmdArgs(conf, args === undefined ? {} : { args })) as Result;
}

function addError(conf: Record<string, unknown>, args?: string): CniError {
  try {
    add(conf, args);
  } catch (err) {
    expect(err).toBeInstanceOf(CniError);
    return err as CniError;
  }
  throw new Error("expected ADD to fail");
}

function check(conf: Record<string, unknown>, args = ""): void {
  staticPlugin.check!(cmdArgs(conf, { args, command: "CHECK" }));
}

function checkError(conf: Record<string, unknown>): CniError {
  try {
    check(conf);
  } catch (err) {
    expect(err).toBeInstanceOf(CniError);
    return err as CniError;
  }
  throw new Error("expected CHECK to fail");
}

const hasIPVersion = (v: string) => versionGte(v, "0.3.0") && !versionGte(v, "1.0.0");
const hasMultipleIPs = (v: string) => versionGte(v, "0.3.0");

const DNS = { nameservers: ["8.8.8.8"], domain: "example.com", search: ["example.com"] };

function baseConf(ver: string, ipam: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { cniVersion: ver, name: "mynet", type: "ipvlan", master: "foo0", ipam: { type: "static", ...ipam }, ...extra };
}

for (const ver of ALL_VERSIONS) {
  describe(`[${ver}]`, () => {
    test("allocates and releases addresses with ADD/DEL (and CHECK)", () => {
      const conf = baseConf(ver, {
        addresses: [
          { address: "10.10.0.1/24", gateway: "10.10.0.254" },
          { address: "3ffe:ffff:0:01ff::1/64", gateway: "3ffe:ffff:0::1" },
        ],
        routes: [{ dst: "0.0.0.0/0" }, { dst: "192.168.0.0/16", gw: "10.10.5.1" }, { dst: "3ffe:ffff:0:01ff::1/64" }],
        dns: DNS,
      });
      const result = add(conf);
      expect(result).toEqual({
        ips: [
          { address: "10.10.0.1/24", gateway: "10.10.0.254" },
          { address: "3ffe:ffff:0:1ff::1/64", gateway: "3ffe:ffff::1" },
        ],
        routes: [{ dst: "0.0.0.0/0" }, { dst: "192.168.0.0/16", gw: "10.10.5.1" }, { dst: "3ffe:ffff:0:1ff::1/64" }],
        dns: DNS,
      });
      const printed = formatResult(result, ver);
      expect(printed.includes('"version":')).toBe(hasIPVersion(ver));
      if (versionGte(ver, "0.4.0")) check({ ...conf, prevResult: JSON.parse(printed) });
      expect(staticPlugin.del(cmdArgs(conf, { command: "DEL" }))).toBeUndefined();
    });

    test("keeps multiple gateways for the same destination (ECMP)", () => {
      const routes = [
        { dst: "0.0.0.0/0", gw: "10.10.0.1" },
        { dst: "0.0.0.0/0", gw: "10.10.0.2" },
      ];
      const result = add(baseConf(ver, { addresses: [{ address: "10.10.0.5/24" }], routes }));
      expect(result.routes).toEqual(routes);
      expect(formatResult(result, ver).match(/"dst": "0\.0\.0\.0\/0"/g)).toHaveLength(2);
    });

    test("doesn't error when passed an unknown ID on DEL (the config is not even read)", () => {
      expect(staticPlugin.del(cmdArgs(baseConf(ver, {}), { command: "DEL" }))).toBeUndefined();
      expect(staticPlugin.del(cmdArgs({ name: "x", ipam: "garbage" }, { command: "DEL" }))).toBeUndefined();
    });

    test("allocates with ENV variables (CNI_ARGS IP + GATEWAY)", () => {
      const routes = [{ dst: "0.0.0.0/0" }, { dst: "192.168.0.0/16", gw: "10.10.5.1" }];
      const result = add(baseConf(ver, { routes, dns: DNS }), "IP=10.10.0.1/24;GATEWAY=10.10.0.254");
      expect(result).toEqual({ ips: [{ address: "10.10.0.1/24", gateway: "10.10.0.254" }], routes, dns: DNS });
      expect(formatResult(result, ver).includes('"version":')).toBe(hasIPVersion(ver));
    });

    test("allocates multiple addresses with ENV variables", () => {
      const conf = baseConf(ver, {});
      const args = "IP=10.10.0.1/24,11.11.0.1/24;GATEWAY=10.10.0.254";
      if (!hasMultipleIPs(ver)) {
        const err = addError(conf, args);
        expect(err.message).toBe(`CNI version ${ver} does not support more than 1 address per family`);
        expect(err.code).toBe(7);
        return;
      }
      expect(add(conf, args).ips).toEqual([{ address: "10.10.0.1/24", gateway: "10.10.0.254" }, { address: "11.11.0.1/24" }]);
    });

    const routes = [
      { dst: "0.0.0.0/0", gw: "10.10.0.254" },
      { dst: "3ffe:ffff:0:01ff::1/64", gw: "3ffe:ffff:0::1" },
    ];
    const canonicalRoutes = [
      { dst: "0.0.0.0/0", gw: "10.10.0.254" },
      { dst: "3ffe:ffff:0:1ff::1/64", gw: "3ffe:ffff::1" },
    ];

    test("allocates multiple addresses from RuntimeConfig", () => {
      const conf = baseConf(
        ver,
        { routes, dns: DNS },
        { capabilities: { ips: true }, RuntimeConfig: { ips: ["10.10.0.1/24", "3ffe:ffff:0:01ff::1/64"] } },
      );
      const result = add(conf);
      expect(result.ips).toEqual([{ address: "10.10.0.1/24" }, { address: "3ffe:ffff:0:1ff::1/64" }]);
      expect(result.routes).toEqual(canonicalRoutes);
      expect(result.dns).toEqual(DNS);
    });

    test("allocates multiple addresses from args", () => {
      const conf = baseConf(ver, { routes, dns: DNS }, { args: { cni: { ips: ["10.10.0.1/24", "3ffe:ffff:0:01ff::1/64"] } } });
      const result = add(conf);
      expect(result.ips).toEqual([{ address: "10.10.0.1/24" }, { address: "3ffe:ffff:0:1ff::1/64" }]);
      expect(result.routes).toEqual(canonicalRoutes);
    });

    test("allocates from RuntimeConfig/ARGS/CNI_ARGS: runtimeConfig wins", () => {
      const conf = baseConf(
        ver,
        { routes, dns: DNS },
        {
          capabilities: { ips: true },
          RuntimeConfig: { ips: ["10.10.0.1/24", "3ffe:ffff:0:01ff::1/64"] },
          args: { cni: { ips: ["10.10.0.2/24", "3ffe:ffff:0:01ff::2/64"] } },
        },
      );
      const result = add(conf, "IP=10.10.0.3/24,11.11.0.3/24;GATEWAY=10.10.0.254");
      expect(result.ips).toEqual([{ address: "10.10.0.1/24" }, { address: "3ffe:ffff:0:1ff::1/64" }]);
      expect(result.routes).toEqual(canonicalRoutes);
    });

    test("is returning an error on missing ipam key when args are set", () => {
      const conf = { cniVersion: ver, name: "mynet", type: "ipvlan", master: "foo0" };
      const err = addError(conf, "IP=10.10.0.1/24;GATEWAY=10.10.0.254");
      expect(err.message).toBe("IPAM config missing 'ipam' key");
      expect(err.code).toBe(7);
    });

    test("is returning an error on missing ipam key when runtimeConfig is set", () => {
      const conf = { cniVersion: ver, name: "mynet", type: "ipvlan", master: "foo0", runtimeConfig: { ips: ["10.10.0.1/24"] } };
      expect(addError(conf).message).toBe("IPAM config missing 'ipam' key");
    });

    test("errors when passed an invalid CIDR via ipam config", () => {
      const err = addError(baseConf(ver, { addresses: [{ address: "10.10.0.1" }] }));
      expect(err.message).toBe("the 'address' field is expected to be in CIDR notation, got: '10.10.0.1'");
      expect(err.code).toBe(7);
    });

    test("errors when passed an invalid CIDR via CNI_ARGS", () => {
      const err = addError(baseConf(ver, { routes: [{ dst: "0.0.0.0/0" }] }), "IP=10.10.0.1");
      expect(err.message).toBe("the 'ip' field is expected to be in CIDR notation, got: '10.10.0.1'");
      expect(err.code).toBe(7);
    });

    test("errors when passed an invalid CIDR via args", () => {
      const err = addError(baseConf(ver, { routes: [{ dst: "0.0.0.0/0" }] }, { args: { cni: { ips: ["10.10.0.1"] } } }));
      expect(err.message).toBe("an entry in the 'ips' field is NOT in CIDR notation, got: '10.10.0.1'");
    });

    test("errors when passed an invalid CIDR via RuntimeConfig", () => {
      const err = addError(baseConf(ver, { routes: [{ dst: "0.0.0.0/0" }] }, { RuntimeConfig: { ips: ["10.10.0.1"] } }));
      expect(err.message).toBe("an entry in the 'ips' field is NOT in CIDR notation, got: '10.10.0.1'");
    });
  });
}

describe("address sources", () => {
  test("CNI_ARGS IP is appended to the config addresses", () => {
    const result = add(baseConf("1.0.0", { addresses: [{ address: "10.10.0.1/24" }] }), "IP=10.10.1.1/24");
    expect(result.ips).toEqual([{ address: "10.10.0.1/24" }, { address: "10.10.1.1/24" }]);
  });

  test("GATEWAY applies only to the CNI_ARGS addresses whose subnet contains it [observed]", () => {
    const result = add(
      baseConf("0.4.0", { addresses: [{ address: "10.10.0.1/24" }] }),
      "IP=10.10.1.1/24;GATEWAY=10.10.0.254,10.10.1.254",
    );
    expect(result.ips).toEqual([{ address: "10.10.0.1/24" }, { address: "10.10.1.1/24", gateway: "10.10.1.254" }]);
  });

  test("CNI_ARGS items and gateways are trimmed; a later gateway for the same subnet wins", () => {
    const result = add(baseConf("0.4.0", {}), "IP= 10.10.0.1/24 , fd00::5/64;GATEWAY=10.10.0.1, 10.10.0.2 ,fd00::1");
    expect(result.ips).toEqual([
      { address: "10.10.0.1/24", gateway: "10.10.0.2" },
      { address: "fd00::5/64", gateway: "fd00::1" },
    ]);
  });

  test("an invalid CNI_ARGS gateway is reported untrimmed", () => {
    const err = addError(baseConf("0.4.0", {}), "IP=10.10.0.1/24;GATEWAY= zz");
    expect(err.message).toBe("invalid gateway address:  zz");
    expect(err.code).toBe(7);
  });

  test("an empty CNI_ARGS IP item is an error", () => {
    expect(addError(baseConf("0.4.0", {}), "IP=10.10.0.1/24,").message).toBe(
      "the 'ip' field is expected to be in CIDR notation, got: ''",
    );
  });

  test("CNI_ARGS keys are checked (code 4) unless IgnoreUnknown is set", () => {
    const conf = baseConf("0.4.0", { addresses: [{ address: "10.10.0.1/24" }] });
    const err = addError(conf, "IP=1.2.3.4/8;FOO=1");
    expect(err.message).toBe('ARGS: unknown args ["FOO=1"]');
    expect(err.code).toBe(4);
    expect(add(conf, "IgnoreUnknown=1;FOO=1;IP=1.2.3.4/8").ips).toHaveLength(2);
    expect(addError(conf, "ip=1.2.3.4/8").message).toBe('ARGS: unknown args ["ip=1.2.3.4/8"]');
  });

  test("replaced config addresses are never validated", () => {
    const conf = baseConf("1.0.0", { addresses: [{ address: "garbage" }] }, { runtimeConfig: { ips: ["10.1.1.1/24"] } });
    expect(add(conf).ips).toEqual([{ address: "10.1.1.1/24" }]);
  });

  test("empty runtimeConfig.ips / args.cni.ips do not replace anything", () => {
    const conf = baseConf(
      "1.0.0",
      { addresses: [{ address: "10.1.1.1/24" }] },
      { runtimeConfig: { ips: [] }, args: { cni: { ips: [] } } },
    );
    expect(add(conf).ips).toEqual([{ address: "10.1.1.1/24" }]);
  });

  test("0.1.0/0.2.0 allow one address per family, across families", () => {
    const two = { addresses: [{ address: "10.1.1.1/24" }, { address: "fd00::1/64" }] };
    expect(add(baseConf("0.2.0", two)).ips).toHaveLength(2);
    expect(addError(baseConf("0.2.0", { addresses: [{ address: "fd00::1/64" }, { address: "fd00::2/64" }] })).message).toBe(
      "CNI version 0.2.0 does not support more than 1 address per family",
    );
    const noVersion = { name: "n", ipam: { addresses: [{ address: "10.1.1.1/24" }, { address: "10.1.1.2/24" }] } };
    expect(addError(noVersion).message).toBe("CNI version  does not support more than 1 address per family");
  });

  test("host bits are kept and addresses printed in Go's form (IPv4-mapped included)", () => {
    const result = add(baseConf("0.4.0", { addresses: [{ address: "::ffff:10.1.2.3/120", gateway: "::ffff:10.1.2.1" }] }));
    expect(result.ips).toEqual([{ address: "10.1.2.3/24", gateway: "10.1.2.1" }]);
    expect(formatResult(result, "0.4.0")).toContain('"version": "4"');
  });
});

describe("config errors", () => {
  test("a bad gateway or route is refused with Go's message, code 7", () => {
    const bad = addError(baseConf("0.4.0", { addresses: [{ address: "10.10.0.1/24", gateway: "x" }] }));
    expect([bad.code, bad.message]).toEqual([7, "invalid IP address: x"]);
    const route = addError(baseConf("0.4.0", { routes: [{ dst: "x" }] }));
    expect([route.code, route.message]).toEqual([7, "invalid CIDR address: x"]);
    expect(addError(baseConf("0.4.0", { routes: [{ gw: "10.1.1.1" }] })).message).toBe('ipam.routes[0]: missing "dst"');
  });

  test("type mismatches fail like Go's decoder", () => {
    const err = addError(baseConf("0.4.0", { addresses: "10.1.1.1/24" }));
    expect(err.code).toBe(7);
    expect(err.message).toStartWith("json: cannot unmarshal string into Go struct field");
    expect(addError({ cniVersion: "0.4.0", name: "n", ipam: "x" }).message).toStartWith("json: cannot unmarshal string");
  });

  test("the untagged Go field `Address` is not the `address` key", () => {
    expect(addError(baseConf("0.4.0", { addresses: [{ Address: "10.10.0.1/24" }] })).message).toBe(
      "json: cannot unmarshal string into Go struct field Address.ipam.addresses.Address of type net.IPNet",
    );
    // Any other spelling folds onto `address`, as in Go.
    expect(add(baseConf("0.4.0", { addresses: [{ ADDRESS: "10.10.0.1/24" }] })).ips).toEqual([{ address: "10.10.0.1/24" }]);
  });

  test("Go's re-serialised `Address` object (and `Version`) is accepted when it agrees with `address`", () => {
    const v4 = { address: "10.10.0.1/24", gateway: "10.10.0.254", Address: { IP: "10.10.0.1", Mask: "////AA==" }, Version: "4" };
    const conf = baseConf("1.0.0", { addresses: [v4] });
    expect(add(conf).ips).toEqual([{ address: "10.10.0.1/24", gateway: "10.10.0.254" }]);
    const prev = { cniVersion: "1.0.0", ips: [{ address: "10.10.0.1/24", gateway: "10.10.0.254" }] };
    expect(() => staticPlugin.check!(cmdArgs({ ...conf, prevResult: prev }, { command: "CHECK" }))).not.toThrow();
    // IPv4 mask in 16-byte form, IPv6, and a zero net.IPNet ({"IP":"","Mask":null}) all agree.
    const mapped = { address: "10.10.0.1/24", Address: { IP: "::ffff:10.10.0.1", Mask: Buffer.from("ffffffffffffffffffffffffffffff00", "hex").toString("base64") } };
    const v6 = { address: "fd00::1/64", Address: { IP: "fd00::1", Mask: Buffer.from("ffffffffffffffff0000000000000000", "hex").toString("base64") }, Version: "6" };
    const zero = { address: "10.10.1.1/24", Address: { IP: "", Mask: null } };
    expect(add(baseConf("1.0.0", { addresses: [mapped, v6, zero] })).ips).toEqual([
      { address: "10.10.0.1/24" },
      { address: "fd00::1/64" },
      { address: "10.10.1.1/24" },
    ]);
  });

  test("`Address` or `Version` disagreeing with `address` is refused (code 7, naming the entry)", () => {
    const wrongIp = addError(baseConf("1.0.0", { addresses: [{ address: "10.10.0.1/24", Address: { IP: "10.10.0.2", Mask: "////AA==" } }] }));
    expect(wrongIp.code).toBe(7);
    expect(wrongIp.message).toBe('ipam.addresses[0]: Address 10.10.0.2/24 disagrees with "address" "10.10.0.1/24"');
    const wrongMask = addError(baseConf("1.0.0", { addresses: [{ address: "10.10.0.1/24" }, { address: "10.10.0.9/24", Address: { IP: "10.10.0.9", Mask: "//8AAA==" } }] }));
    expect(wrongMask.message).toBe('ipam.addresses[1]: Address 10.10.0.9/16 disagrees with "address" "10.10.0.9/24"');
    expect(addError(baseConf("1.0.0", { addresses: [{ address: "10.10.0.1/24", Version: "6" }] })).message).toBe(
      'ipam.addresses[0]: Version "6" disagrees with "address" "10.10.0.1/24"',
    );
    expect(addError(baseConf("1.0.0", { addresses: [{ address: "10.10.0.1/24", Address: { IP: "nope" } }] })).message).toBe(
      'ipam.addresses[0].Address.IP: invalid IP address: "nope"',
    );
    expect(addError(baseConf("1.0.0", { addresses: [{ address: "10.10.0.1/24", Address: { Mask: "//8A" } }] })).message).toBe(
      'ipam.addresses[0].Address.Mask: not a base64 netmask: "//8A"',
    );
    // Only `Address`: upstream derives everything from `address`, which is then empty.
    expect(addError(baseConf("1.0.0", { addresses: [{ Address: { IP: "10.10.0.1", Mask: "////AA==" } }] })).message).toBe(
      "the 'address' field is expected to be in CIDR notation, got: ''",
    );
    // Config addresses replaced by runtimeConfig.ips are not looked at, as upstream.
    const replaced = { ...baseConf("1.0.0", { addresses: [{ address: "10.10.0.1/24", Version: "6" }] }), runtimeConfig: { ips: ["10.2.0.1/24"] } };
    expect(add(replaced).ips).toEqual([{ address: "10.2.0.1/24" }]);
  });

  test("an empty address list succeeds with no IPs (and cannot be printed as 0.2.0)", () => {
    const result = add(baseConf("0.4.0", {}));
    expect(result).toEqual({});
    expect(formatResult(result, "0.4.0")).toBe('{\n    "cniVersion": "0.4.0",\n    "dns": {}\n}');
    expect(() => formatResult(result, "0.2.0")).toThrow("cannot convert: no valid IP addresses");
  });

  test("the top-level dns is ignored; ipam.dns is used", () => {
    const conf = baseConf("1.0.0", { addresses: [{ address: "10.1.1.1/24" }] }, { dns: { nameservers: ["9.9.9.9"] } });
    expect(add(conf).dns).toBeUndefined();
  });
});

describe("CHECK", () => {
  const ipam = { addresses: [{ address: "10.10.0.1/24", gateway: "10.10.0.9" }, { address: "fd00::1/64" }] };
  const prev = (gw: string | undefined) => ({
    cniVersion: "1.0.0",
    ips: [{ address: "10.10.0.1/24", ...(gw ? { gateway: gw } : {}) }],
  });

  test("passes when the configured gateway matches", () => {
    check(baseConf("1.0.0", ipam, { prevResult: prev("10.10.0.9") }));
  });

  test("a configured address missing from prevResult is not an error", () => {
    check(baseConf("1.0.0", ipam, { prevResult: { cniVersion: "1.0.0", ips: [{ address: "10.99.0.1/24" }] } }));
  });

  test("a different or missing gateway fails with upstream's message", () => {
    for (const gw of ["10.10.0.8", undefined]) {
      const err = checkError(baseConf("1.0.0", ipam, { prevResult: prev(gw) }));
      expect(err.message).toBe("static: Failed to match addr 10.10.0.1 on interface eth0");
      expect(err.code).toBe(999);
    }
  });

  test("requires prevResult", () => {
    const err = checkError(baseConf("1.0.0", ipam));
    expect(err.message).toBe("Required prevResult missing");
    expect(checkError(baseConf("1.0.0", ipam, { prevResult: null })).message).toBe("Required prevResult missing");
  });

  test("a prevResult of another version family is refused (code 6)", () => {
    const err = checkError(baseConf("0.4.0", ipam, { prevResult: prev("10.10.0.9") }));
    expect(err.code).toBe(6);
    expect(err.message).toBe(
      'could not parse prevResult: result type supports [0.3.0 0.3.1 0.4.0] but unmarshalled CNIVersion is "1.0.0"',
    );
  });

  test("the generic NetConf is decoded too (`failed to load netconf`)", () => {
    const err = checkError(baseConf("1.0.0", ipam, { dns: "x", prevResult: prev("10.10.0.9") }));
    expect(err.message).toBe("failed to load netconf: json: cannot unmarshal string into Go struct field NetConf.dns of type types.DNS");
  });

  test("config errors come first", () => {
    expect(checkError(baseConf("1.0.0", { addresses: [{ address: "x" }] })).message).toBe(
      "the 'address' field is expected to be in CIDR notation, got: 'x'",
    );
  });
});

describe("STATUS and GC", () => {
  test("succeed without doing anything", () => {
    expect(staticPlugin.status!(cmdArgs({ cniVersion: "1.1.0", name: "n" }, { command: "STATUS" }))).toBeUndefined();
    expect(staticPlugin.gc!(cmdArgs({ cniVersion: "1.1.0", name: "n" }, { command: "GC" }))).toBeUndefined();
  });

  test("the spec advertises every version", () => {
    expect(staticPlugin.name).toBe("static");
    expect(staticPlugin.versions).toEqual(ALL_VERSIONS);
  });
});
