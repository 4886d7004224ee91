import { describe, expect, test } from "bun:test";
import { checkAllowlist, checkDuplicateSysctlKeys, parseAllowlist, sysctlFileName } from "./sysctl-keys.ts";

describe("duplicate sysctl keys (raw text)", () => {
  test("a repeated key in sysctl is refused with upstream's message", () => {
    const text = `{"name":"n","sysctl":{"net.core.somaxconn":"1","net.core.somaxconn":"2"}}`;
    expect(() => checkDuplicateSysctlKeys(text)).toThrow("duplicated sysctl keys are not allowed");
  });
  test("the field name matches case-insensitively and keys across two sysctl objects count together", () => {
    expect(() => checkDuplicateSysctlKeys(`{"SysCtl":{"a":"1"},"sysctl":{"a":"2"}}`)).toThrow("duplicated");
  });
  test("unique keys, escaped keys, nested objects elsewhere and args.cni.sysctl are fine", () => {
    const text = `{"args":{"cni":{"sysctl":{"a":"1"}}},"prevResult":{"sysctl":{"x":"1","x":"2"}},"sysctl":{"a":"1","a\\u0062":"2","s":"{\\"}"}}`;
    expect(() => checkDuplicateSysctlKeys(text)).not.toThrow();
    expect(() => checkDuplicateSysctlKeys(`{"sysctl":{"a\\u0062":"1","ab":"2"}}`)).toThrow("duplicated");
  });
});

describe("key → /proc/sys path", () => {
  test("dots become slashes and IFNAME is substituted after, so dotted interface names work", () => {
    expect(sysctlFileName("net.ipv4.conf.IFNAME.rp_filter", "eth0.100")).toBe("/proc/sys/net/ipv4/conf/eth0.100/rp_filter");
    expect(sysctlFileName("net/core/somaxconn", "eth0")).toBe("/proc/sys/net/core/somaxconn");
  });
  test("only the first IFNAME is replaced", () => {
    expect(sysctlFileName("net.IFNAME.IFNAME", "e0")).toBe("/proc/sys/net/e0/IFNAME");
  });
  test("keys outside /proc/sys/net are refused, traversal included", () => {
    expect(() => sysctlFileName("kernel.hostname", "eth0")).toThrow('invalid net sysctl key: "kernel.hostname"');
    // `..` is neutralised: its dots become separators.
    expect(sysctlFileName("net/../kernel/x", "eth0")).toBe("/proc/sys/net/kernel/x");
    expect(() => sysctlFileName("net", "eth0")).toThrow("invalid net sysctl key");
  });
});

describe("allow-list", () => {
  test("lines are trimmed and empty ones dropped", () => {
    expect(parseAllowlist(" ^net\\.core\\..* \n\n net.ipv4.conf.IFNAME.rp_filter\n")).toEqual(["^net\\.core\\..*", "net.ipv4.conf.IFNAME.rp_filter"]);
  });
  test("patterns match whole keys (anchored), unlike upstream", () => {
    const allow = ["net\\.ipv4\\.conf\\.IFNAME\\.rp_filter", "net\\.core\\..*"];
    expect(() => checkAllowlist(["net.ipv4.conf.IFNAME.rp_filter", "net.core.somaxconn"], allow)).not.toThrow();
    expect(() => checkAllowlist(["net.ipv4.conf.IFNAME.rp_filter_x"], allow)).toThrow(
      "Sysctl net.ipv4.conf.IFNAME.rp_filter_x is not allowed. Only the following sysctls are allowed: [net\\.ipv4\\.conf\\.IFNAME\\.rp_filter net\\.core\\..*]",
    );
    expect(() => checkAllowlist(["xnet.core.somaxconn"], allow)).toThrow("is not allowed");
  });
  test("an invalid pattern is an error", () => {
    expect(() => checkAllowlist(["a"], ["("])).toThrow("error parsing regexp");
  });
});
