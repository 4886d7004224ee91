import { describe, expect, test } from "bun:test";
import { decode, getField, t } from "./decode.ts";
import { CniError } from "./errors.ts";

const NetConf = t.object("NetConf", {
  name: t.string(),
  mtu: t.int(),
  isGateway: t.bool(),
  ipam: t.object("IPAMConfig", {
    type: t.string(),
    ranges: t.array(t.array(t.object("Range", { subnet: t.string() }))),
  }),
  sysctl: t.map(t.string()),
  extra: t.raw(),
});

function failure(fn: () => unknown): [number, string] {
  try {
    fn();
  } catch (err) {
    if (err instanceof CniError) return [err.code, err.message];
    throw err;
  }
  throw new Error("expected an error");
}

describe("decode", () => {
  test("t.path: a NUL byte is refused naming the field (code 7), other strings pass", () => {
    const Conf = t.object("Conf", { dataDir: t.path(), ipam: t.object("IPAM", { socket: t.path() }) });
    expect(decode(Conf, { dataDir: "/run/x", ipam: { socket: "" } })).toEqual({ dataDir: "/run/x", ipam: { socket: "" } });
    expect(failure(() => decode(Conf, { dataDir: "/run/\0x" }))).toEqual([7, "invalid dataDir: a path cannot contain a NUL byte"]);
    expect(failure(() => decode(Conf, { ipam: { socket: "\0" } }))).toEqual([7, "invalid ipam.socket: a path cannot contain a NUL byte"]);
    expect(failure(() => decode(Conf, { dataDir: 5 }))).toEqual([7, "json: cannot unmarshal number into Go struct field Conf.dataDir of type string"]);
  });
  test("matches keys case-insensitively and ignores unknown keys", () => {
    const out = decode(NetConf, { NAME: "n", MTU: 1400, isgateway: true, unknown: 1, IPAM: { Type: "host-local" } });
    expect(out).toEqual({ name: "n", mtu: 1400, isGateway: true, ipam: { type: "host-local" } });
  });
  test("lets the last of two differently-cased keys win", () => {
    expect(decode(NetConf, { mtu: 1, MTU: 2 }).mtu).toBe(2);
  });
  test("leaves a null field unset", () => {
    expect(decode(NetConf, { mtu: null })).toEqual({});
  });
  test("names the field on a type mismatch, in Go's words", () => {
    expect(failure(() => decode(NetConf, { mtu: "abc" }))).toEqual([
      7,
      "json: cannot unmarshal string into Go struct field NetConf.mtu of type int",
    ]);
  });
  test("rejects a non-integral int", () => {
    expect(failure(() => decode(NetConf, { mtu: 1.5 }))[1]).toBe(
      "json: cannot unmarshal number 1.5 into Go struct field NetConf.mtu of type int",
    );
  });
  test("names nested fields by path", () => {
    expect(failure(() => decode(NetConf, { ipam: { ranges: [[{ subnet: 5 }]] } }))[1]).toBe(
      "json: cannot unmarshal number into Go struct field Range.ipam.ranges.subnet of type string",
    );
  });
  test("a package-qualified struct: its fields are named without the package, the struct itself with it", () => {
    const Conf = t.object("main.NetConf", { ipam: t.object("main.IPAMConfig", { priority: t.int(), provide: t.array(t.object("main.ProvideOption", {})) }) });
    expect(failure(() => decode(Conf, { ipam: { priority: "x" } }))[1]).toBe("json: cannot unmarshal string into Go struct field IPAMConfig.ipam.priority of type int");
    expect(failure(() => decode(Conf, { ipam: { provide: "x" } }))[1]).toBe(
      "json: cannot unmarshal string into Go struct field IPAMConfig.ipam.provide of type []main.ProvideOption",
    );
    expect(failure(() => decode(Conf, { ipam: 5 }))[1]).toBe("json: cannot unmarshal number into Go struct field NetConf.ipam of type main.IPAMConfig");
  });
  test("rejects a non-object top level like Go", () => {
    expect(failure(() => decode(NetConf, []))[1]).toBe("json: cannot unmarshal array into Go value of type NetConf");
  });
  test("decodes maps and keeps raw values", () => {
    expect(decode(NetConf, { sysctl: { "net.ipv4.ip_forward": "1" }, extra: { a: [1] } })).toEqual({
      sysctl: { "net.ipv4.ip_forward": "1" },
      extra: { a: [1] },
    });
  });
  test("parsed values run their parser", () => {
    const S = t.object("S", {
      ip: t.parsed("net.IP", (s) => {
        if (s !== "1.2.3.4") throw new Error(`invalid IP address: ${s}`);
        return s;
      }),
    });
    expect(decode(S, { ip: "1.2.3.4" })).toEqual({ ip: "1.2.3.4" });
    expect(() => decode(S, { ip: "x" })).toThrow("invalid IP address: x");
  });
});

describe("getField", () => {
  test("prefers the exact key, then any case", () => {
    expect(getField({ prevResult: 1, PREVRESULT: 2 }, "prevResult")).toBe(1);
    expect(getField({ PrevResult: 2 }, "prevResult")).toBe(2);
    expect(getField({}, "prevResult")).toBeUndefined();
  });
});
