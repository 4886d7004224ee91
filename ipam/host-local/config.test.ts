/** Config loading (upstream config_test.go scenarios plus the observed 1.1.1 error texts). */
import { describe, expect, test } from "bun:test";
import { CniError } from "../../shared/cni/errors.ts";
import { formatIP } from "../../shared/ip/addr.ts";
import { formatRange } from "../../shared/ipam/range.ts";
import { resultRoutes } from "../../shared/ipam/config.ts";
import { loadHostLocalConfig, type IPAMConfig } from "./config.ts";

function load(conf: Record<string, unknown>, args = ""): IPAMConfig {
  return loadHostLocalConfig({ config: conf, args });
}

function loadError(conf: Record<string, unknown>, args = ""): { code: number; msg: string } {
  try {
    load(conf, args);
  } catch (err) {
    expect(err).toBeInstanceOf(CniError);
    return { code: (err as CniError).code, msg: (err as Error).message };
  }
  throw new Error("expected a config error");
}

/** The range sets as `start-end` strings. */
function sets(c: IPAMConfig): string[][] {
  return c.rangeSets.map((s) => s.map(formatRange));
}

function net(ipam: Record<string, unknown>, top: Record<string, unknown> = {}): Record<string, unknown> {
  return { cniVersion: "0.3.1", name: "mynet", ipam: { type: "host-local", ...ipam }, ...top };
}

describe("loadHostLocalConfig", () => {
  test("config parses an old-style (single range) config", () => {
    const c = load(
      net({ subnet: "10.1.2.0/24", rangeStart: "10.1.2.9", rangeEnd: "10.1.2.20", gateway: "10.1.2.30", dataDir: "/tmp/x" }),
    );
    expect(sets(c)).toEqual([["10.1.2.9-10.1.2.20"]]);
    expect(formatIP(c.rangeSets[0]![0]!.gateway!)).toBe("10.1.2.30");
    expect(c.name).toBe("mynet");
    expect(c.dataDir).toBe("/tmp/x");
  });

  test("config parses a new-style config and fills defaults", () => {
    const c = load(
      net({
        ranges: [[{ subnet: "10.1.2.0/24" }, { subnet: "10.2.2.0/24" }], [{ subnet: "2001:db8:1::/64" }]],
        routes: [{ dst: "0.0.0.0/0" }],
        resolvConf: "/etc/resolv.conf",
      }),
    );
    expect(sets(c)).toEqual([
      ["10.1.2.1-10.1.2.254", "10.2.2.1-10.2.2.254"],
      ["2001:db8:1::1-2001:db8:1:0:ffff:ffff:ffff:ffff"],
    ]);
    expect(c.dataDir).toBe("/var/lib/cni/networks");
    expect(c.resolvConf).toBe("/etc/resolv.conf");
    expect(c.requestedIPs).toEqual([]);
  });

  test("config orders range sets: runtime ipRanges, then the legacy range, then ranges", () => {
    const c = load(
      net(
        { subnet: "10.0.0.0/24", ranges: [[{ subnet: "10.2.0.0/24" }]] },
        { runtimeConfig: { ipRanges: [[{ subnet: "10.9.0.0/24" }]] } },
      ),
    );
    expect(sets(c)).toEqual([["10.9.0.1-10.9.0.254"], ["10.0.0.1-10.0.0.254"], ["10.2.0.1-10.2.0.254"]]);
  });

  test("config ignores a legacy block without subnet", () => {
    const c = load(net({ rangeStart: "10.0.0.5", ranges: [[{ subnet: "10.2.0.0/24" }]] }));
    expect(sets(c)).toEqual([["10.2.0.1-10.2.0.254"]]);
  });

  test("config reads CNI_ARGS IP with and without prefix", () => {
    const base = net({ ranges: [[{ subnet: "10.1.2.0/24" }]] });
    expect(load(base, "IP=10.1.2.3").requestedIPs.map(formatIP)).toEqual(["10.1.2.3"]);
    expect(load(base, "IP=10.1.2.3/24").requestedIPs.map(formatIP)).toEqual(["10.1.2.3"]);
    expect(load(base, "IP=").requestedIPs).toEqual([]);
    expect(load(base, "IgnoreUnknown=1;K8S_POD_NAME=p;IP=10.1.2.4").requestedIPs.map(formatIP)).toEqual(["10.1.2.4"]);
  });

  test("config combines CNI_ARGS, args.cni.ips and runtimeConfig.ips in that order, without duplicates", () => {
    const c = load(
      net(
        { ranges: [[{ subnet: "10.1.2.0/24" }], [{ subnet: "2001:db8:1::/64" }]] },
        { args: { cni: { ips: ["10.1.2.4/24", "2001:db8:1::9"] } }, runtimeConfig: { ips: ["10.1.2.5", "10.1.2.4"] } },
      ),
      "IP=10.1.2.3",
    );
    expect(c.requestedIPs.map(formatIP)).toEqual(["10.1.2.3", "10.1.2.4", "2001:db8:1::9", "10.1.2.5"]);
  });

  test("config rejects invalid requested IPs with upstream's texts", () => {
    const base = { ranges: [[{ subnet: "10.1.2.0/24" }]] };
    expect(loadError(net(base), "IP=zzz")).toEqual({
      code: 4,
      msg: 'ARGS: error parsing value of pair "IP=zzz": invalid IP address zzz',
    });
    expect(loadError(net(base), "ip=10.1.2.3")).toEqual({ code: 4, msg: 'ARGS: unknown args ["ip=10.1.2.3"]' });
    expect(loadError(net(base, { args: { cni: { ips: ["zzz"] } } }))).toEqual({ code: 7, msg: "invalid IP address zzz" });
    expect(loadError(net(base, { runtimeConfig: { ips: ["10.0.0.9/33"] } }))).toEqual({
      code: 7,
      msg: "invalid IP address 10.0.0.9/33",
    });
    expect(loadError(net(base, { runtimeConfig: { ips: [""] } }))).toEqual({
      code: 7,
      msg: "cannot understand ip: IP <nil> not v4 nor v6",
    });
  });

  test("config reports missing ipam and missing ranges", () => {
    expect(loadError({ cniVersion: "0.3.1", name: "n" })).toEqual({ code: 7, msg: "IPAM config missing 'ipam' key" });
    expect(loadError({ cniVersion: "0.3.1", name: "n", ipam: null })).toEqual({
      code: 7,
      msg: "IPAM config missing 'ipam' key",
    });
    expect(loadError(net({}))).toEqual({ code: 7, msg: "no IP ranges specified" });
  });

  test("config wraps range errors with the range-set index", () => {
    expect(loadError(net({ ranges: [[{ subnet: "10.0.0.0/24" }], [{ subnet: "10.1.0.1/31" }]] })).msg).toBe(
      "invalid range set 1: Network has host bits set. For a subnet mask of length 31 the network address is 10.1.0.0",
    );
    expect(loadError(net({ ranges: [[{ rangeStart: "10.0.0.3" }]] })).msg).toBe(
      "invalid range set 0: IP <nil> not v4 nor v6",
    );
    expect(loadError(net({ ranges: [[]] })).msg).toBe("invalid range set 0: empty range set");
    expect(loadError(net({ ranges: [null] })).msg).toBe("invalid range set 0: empty range set");
    expect(loadError(net({ ranges: [[{ subnet: "10.0.0.0/24" }, { subnet: "fd00::/64" }]] })).msg).toBe(
      "invalid range set 0: mixed address families",
    );
    expect(
      loadError(net({ ranges: [[{ subnet: "10.0.0.0/24" }, { subnet: "10.0.0.0/24", rangeStart: "10.0.0.100" }]] })).msg,
    ).toBe("invalid range set 0: subnets 10.0.0.1-10.0.0.254 and 10.0.0.100-10.0.0.254 overlap");
  });

  test("config rejects overlapping range sets", () => {
    expect(loadError(net({ ranges: [[{ subnet: "10.0.0.0/24" }], [{ subnet: "10.0.0.0/16" }]] }))).toEqual({
      code: 7,
      msg: "range set 0 overlaps with 1",
    });
    expect(
      loadError(net({ ranges: [[{ subnet: "10.0.0.0/24" }], [{ subnet: "fd00::/64" }], [{ subnet: "10.0.0.128/25" }]] })).msg,
    ).toBe("range set 0 overlaps with 2");
  });

  test("config limits 0.2.0 and older to one range set per family", () => {
    const two = { ranges: [[{ subnet: "10.0.0.0/24" }], [{ subnet: "10.1.0.0/24" }]] };
    expect(loadError({ ...net(two), cniVersion: "0.2.0" }).msg).toBe(
      "CNI version 0.2.0 does not support more than 1 address per family",
    );
    const { cniVersion: _drop, ...noVersion } = net(two);
    expect(loadError(noVersion).msg).toBe("CNI version  does not support more than 1 address per family");
    expect(sets(load({ ...net(two), cniVersion: "0.3.0" }))).toHaveLength(2);
    const dual = { ranges: [[{ subnet: "10.0.0.0/24" }], [{ subnet: "fd00::/64" }]] };
    expect(sets(load({ ...net(dual), cniVersion: "0.2.0" }))).toHaveLength(2);
  });

  test("config decoding errors name the field like Go", () => {
    expect(loadError(net({ dataDir: 5, ranges: [[{ subnet: "10.0.0.0/24" }]] }))).toEqual({
      code: 7,
      msg: "json: cannot unmarshal number into Go struct field IPAMConfig.ipam.dataDir of type string",
    });
    expect(loadError(net({ ranges: [{ subnet: "10.0.0.0/24" }] })).msg).toBe(
      "json: cannot unmarshal object into Go struct field IPAMConfig.ipam.ranges of type allocator.RangeSet",
    );
    expect(loadError(net({ ranges: [[{ subnet: "foo" }]] })).msg).toBe("invalid CIDR address: foo");
    expect(loadError(net({ ranges: [[{ subnet: "10.0.0.0/24", rangeStart: "bar" }]] })).msg).toBe(
      "invalid IP address: bar",
    );
  });

  test("config refuses path fields no Linux path can be (NUL byte, beyond PATH_MAX) with code 7 naming the field", () => {
    const r = { ranges: [[{ subnet: "10.0.0.0/24" }]] };
    expect(loadError(net({ ...r, dataDir: "/tmp/a\u0000b" }))).toEqual({
      code: 7,
      msg: 'invalid dataDir "/tmp/a\\u0000b": a path cannot contain a NUL byte',
    });
    expect(loadError(net({ ...r, resolvConf: "/etc/resolv.conf\u0000" })).msg).toStartWith("invalid resolvConf ");
    expect(loadError(net({ ...r, dataDir: `/${"d".repeat(4095)}` }))).toEqual({ code: 7, msg: "invalid dataDir: longer than 4095 bytes" });
    expect(load(net({ ...r, dataDir: `/${"d".repeat(4094)}` })).dataDir).toHaveLength(4095);
  });

  test("config reads `exclude` on ranges and on the legacy range; a bad entry is code 7 naming exclude", () => {
    const c = load(net({ ranges: [[{ subnet: "10.1.0.0/24", exclude: ["10.1.0.2", "10.1.0.16/28"] }]] }));
    expect(c.rangeSets[0]![0]!.exclude).toHaveLength(2);
    expect(load(net({ subnet: "10.1.0.0/24", exclude: ["10.1.0.9"] })).rangeSets[0]![0]!.exclude).toHaveLength(1);
    expect(loadError(net({ ranges: [[{ subnet: "10.1.0.0/24", exclude: ["10.1.0.300"] }]] }))).toEqual({
      code: 7,
      msg: 'invalid range set 0: invalid exclude entry "10.1.0.300": not an IP address or CIDR',
    });
    expect(loadError(net({ ranges: [[{ subnet: "10.1.0.0/24", exclude: [null] }]] })).msg).toContain("invalid exclude entry");
    expect(loadError(net({ ranges: [[{ subnet: "10.1.0.0/24", exclude: "10.1.0.2" }]] }))).toEqual({
      code: 7,
      msg: "json: cannot unmarshal string into Go struct field Range.ipam.ranges.exclude of type []string",
    });
  });

  test("config accepts keys case-insensitively", () => {
    const c = load({ cniVersion: "0.3.1", name: "n", IPAM: { Ranges: [[{ Subnet: "10.0.0.0/24" }]], DATADIR: "/d" } });
    expect(sets(c)).toEqual([["10.0.0.1-10.0.0.254"]]);
    expect(c.dataDir).toBe("/d");
  });

  test("config keeps routes as upstream prints them", () => {
    const c = load(
      net({
        ranges: [[{ subnet: "10.0.0.0/24" }]],
        routes: [
          { dst: "0.0.0.0/0" },
          { dst: "10.1.2.3/8", gw: "::ffff:1.2.3.4", mtu: 0, advmss: 1400, priority: 5, table: 0, scope: 253 },
        ],
      }),
    );
    expect(resultRoutes(c.routes)).toEqual([
      { dst: "0.0.0.0/0" },
      { dst: "10.1.2.3/8", gw: "1.2.3.4", advmss: 1400, priority: 5, table: 0, scope: 253 },
    ]);
    expect(loadError(net({ ranges: [[{ subnet: "10.0.0.0/24" }]], routes: [{ dst: "bad" }] })).msg).toBe(
      "invalid CIDR address: bad",
    );
    const noDst = load(net({ ranges: [[{ subnet: "10.0.0.0/24" }]], routes: [{ gw: "10.0.0.1" }] }));
    expect(() => resultRoutes(noDst.routes)).toThrow("invalid route: missing dst");
  });
});
