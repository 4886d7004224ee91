import { describe, expect, test } from "bun:test";
import { configuredDns } from "./config.ts";
import { ptpAddress } from "./routes.ts";

describe("ptpAddress", () => {
  test("IPv4: masked network, bare IP, /32 host prefix", () => {
    expect(ptpAddress("10.1.2.5/24", "10.1.2.1")).toEqual({
      family: 4,
      ip: "10.1.2.5",
      network: { address: "10.1.2.0", prefixLen: 24 },
      gateway: "10.1.2.1",
      hostPrefixLen: 32,
    });
  });
  test("IPv6: canonical text and /128", () => {
    expect(ptpAddress("FD00:0:0::5/64", "fd00::1")).toEqual({
      family: 6,
      ip: "fd00::5",
      network: { address: "fd00::", prefixLen: 64 },
      gateway: "fd00::1",
      hostPrefixLen: 128,
    });
  });
  test("a missing or mismatched gateway is an error message", () => {
    expect(ptpAddress("10.1.2.5/24", undefined)).toContain("has no gateway");
    expect(ptpAddress("10.1.2.5/24", "")).toContain("has no gateway");
    expect(ptpAddress("10.1.2.5/24", "fd00::1")).toContain("invalid gateway");
    expect(ptpAddress("10.1.2.500/24", "10.1.2.1")).toContain("invalid IP address");
  });
});

describe("configuredDns (upstream dnsConfSet)", () => {
  test("absent or all-empty → not set", () => {
    expect(configuredDns(undefined)).toBeUndefined();
    expect(configuredDns({})).toBeUndefined();
    expect(configuredDns({ domain: "" })).toBeUndefined();
  });
  test("any present list, even empty, or a domain → set", () => {
    expect(configuredDns({ nameservers: [] })).toEqual({ nameservers: [] });
    expect(configuredDns({ options: ["ndots:5"] })).toEqual({ options: ["ndots:5"] });
    expect(configuredDns({ domain: "x.example" })).toEqual({ domain: "x.example" });
  });
});
