import { describe, expect, test } from "bun:test";
import { goIP, goIPConfig, goIPNet, goRoute, goScope } from "./go-format.ts";

describe("Go %v renderings", () => {
  test("net.IPNet", () => {
    expect(goIPNet("0.0.0.0/0")).toBe("{0.0.0.0 00000000}");
    expect(goIPNet("10.1.2.3/24", true)).toBe("{IP:10.1.2.3 Mask:ffffff00}");
    expect(goIPNet("fd00::/64")).toBe("{fd00:: ffffffffffffffff0000000000000000}");
  });
  test("IPConfig, Route, Scope, nil IP", () => {
    expect(goIPConfig({ address: "10.1.2.3/24", gateway: "10.1.2.1", interface: 1 })).toBe(
      "{Interface:1 Address:{IP:10.1.2.3 Mask:ffffff00} Gateway:10.1.2.1}",
    );
    expect(goRoute({ dst: "0.0.0.0/0", table: 5 })).toBe(
      "{Dst:{IP:0.0.0.0 Mask:00000000} GW:<nil> MTU:0 AdvMSS:0 Priority:0 Table:5 Scope:<nil>}",
    );
    expect(goIP(undefined)).toBe("<nil>");
    expect([0, 200, 253, 254, 255, 7].map(goScope)).toEqual(["universe", "site", "link", "host", "nowhere", "unknown"]);
  });
});
