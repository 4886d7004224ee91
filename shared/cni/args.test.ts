import { describe, expect, test } from "bun:test";
import { parseCniArgs, parseCniArgsLenient } from "./args.ts";
import { CniError } from "./errors.ts";

function failure(fn: () => unknown): [number, string] {
  try {
    fn();
  } catch (err) {
    if (err instanceof CniError) return [err.code, err.message];
    throw err;
  }
  throw new Error("expected an error");
}

describe("parseCniArgs", () => {
  test("parses known keys", () => {
    expect(parseCniArgs("IP=10.0.0.2;MAC=aa:bb:cc:dd:ee:ff", ["IP", "MAC"])).toEqual({
      IP: "10.0.0.2",
      MAC: "aa:bb:cc:dd:ee:ff",
    });
  });
  test("returns nothing for an empty string", () => {
    expect(parseCniArgs("", ["IP"])).toEqual({});
  });
  test("matches keys case-sensitively, as Go field names", () => {
    expect(failure(() => parseCniArgs("ip=10.20.0.3", ["IP"]))).toEqual([4, 'ARGS: unknown args ["ip=10.20.0.3"]']);
  });
  test("lists every unknown pair", () => {
    expect(failure(() => parseCniArgs("A=1;IP=1.2.3.4;B=2", ["IP"]))[1]).toBe('ARGS: unknown args ["A=1" "B=2"]');
  });
  test.each(["1", "true", "TRUE", "t"])("ignores unknown keys with IgnoreUnknown=%s", (v) => {
    expect(parseCniArgs(`K8S_POD_NAME=x;IgnoreUnknown=${v};IP=1.2.3.4`, ["IP"])).toEqual({ IP: "1.2.3.4" });
  });
  test("rejects IgnoreUnknown=0 with unknown keys", () => {
    expect(failure(() => parseCniArgs("IgnoreUnknown=0;X=1", []))[1]).toBe('ARGS: unknown args ["X=1"]');
  });
  test("rejects a non-boolean IgnoreUnknown", () => {
    expect(failure(() => parseCniArgs("IgnoreUnknown=yes", []))[1]).toBe(
      'ARGS: error parsing value of pair "IgnoreUnknown=yes": boolean unmarshal error: invalid input yes',
    );
  });
  test.each(["IP", "IP=a=b", "IP=1;", ";"])("rejects the malformed pair list %p", (raw) => {
    const [code, msg] = failure(() => parseCniArgs(raw, ["IP"]));
    expect(code).toBe(4);
    expect(msg).toStartWith("ARGS: invalid pair ");
  });
  test("runs value validators with upstream wording", () => {
    const ip = (v: string) => {
      if (!/^\d+\.\d+\.\d+\.\d+$/.test(v)) throw new Error(`invalid IP address: ${v}`);
    };
    expect(failure(() => parseCniArgs("IP=abc", ["IP"], { IP: ip }))[1]).toBe(
      'ARGS: error parsing value of pair "IP=abc": invalid IP address: abc',
    );
  });
});

describe("parseCniArgsLenient", () => {
  test("skips malformed pairs and keeps values with =", () => {
    expect(parseCniArgsLenient("a=1;bogus;b=x=y;;=z")).toEqual({ a: "1", b: "x=y" });
  });
});
