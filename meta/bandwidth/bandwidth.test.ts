/**
 * Unit tests (no root): config decoding and validation, the upstream TBF numbers, IFB naming and
 * ownership.
 */
import { describe, expect, test } from "bun:test";
import { CniError } from "../../shared/cni/errors.ts";
import type { CmdArgs } from "../../shared/cni/types.ts";
import { loadBandwidthConfig, validateRateAndBurst } from "./config.ts";
import { derivedIfbName, ifbAlias, ifbBelongsTo, upstreamIfbName } from "./ifb-name.ts";
import { bufferTicks, limitBytes, tbfNumbers } from "./tbf-params.ts";
import { quantumFor } from "./htb-setup.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

function args(config: Record<string, unknown>): CmdArgs {
  return withDelegate({
    command: "ADD",
    containerID: "c1",
    netns: "",
    ifName: "eth0",
    args: "",
    path: "",
    stdinData: new Uint8Array(),
    config: { cniVersion: "1.0.0", name: "net", type: "bandwidth", ...config },
    cniVersion: "1.0.0",
    env: {},
    stderr: () => {},
    scope: PROCESS_SCOPE,
  });
}

function errorOf(f: () => unknown): CniError {
  try {
    f();
  } catch (err) {
    if (err instanceof CniError) return err;
    throw err;
  }
  throw new Error("no error");
}

describe("config", () => {
  test("static limits; a direction is shaped only with rate and burst", () => {
    const c = loadBandwidthConfig(args({ ingressRate: 800000, ingressBurst: 80000 }));
    expect(c.bandwidth).toEqual({ ingress: { rate: 800000, burst: 80000 }, egress: undefined });
  });
  test("runtimeConfig.bandwidth only when no top-level limit key is present (keys match case-insensitively)", () => {
    const rc = { runtimeConfig: { bandwidth: { egressRate: 8000, egressBurst: 80 } } };
    expect(loadBandwidthConfig(args(rc)).bandwidth.egress).toEqual({ rate: 8000, burst: 80 });
    expect(loadBandwidthConfig(args({ ...rc, IngressRate: 0 })).bandwidth).toEqual({ ingress: undefined, egress: undefined });
  });
  test("upstream validation messages", () => {
    expect(errorOf(() => validateRateAndBurst(1, 0)).message).toBe("if rate is set, burst must also be set");
    expect(errorOf(() => validateRateAndBurst(0, 1)).message).toBe("if burst is set, rate must also be set");
    expect(errorOf(() => validateRateAndBurst(1, 8 * 0xffffffff)).message).toBe("burst cannot be more than 4GB");
    expect(() => validateRateAndBurst(1, 8 * 0xffffffff - 1)).not.toThrow();
    expect(errorOf(() => loadBandwidthConfig(args({ egressRate: 5 }))).code).toBe(7);
    expect(errorOf(() => loadBandwidthConfig(args({ egressRate: -5, egressBurst: 1 }))).message).toContain("egressRate");
  });
});

describe("subnet lists (extension; upstream v1.5 keys and messages)", () => {
  test("unshapedSubnets / shapedSubnets select the mode; empty lists mean no selection", () => {
    const u = loadBandwidthConfig(args({ egressRate: 8000, egressBurst: 80, unshapedSubnets: ["10.1.2.3/16", "2001:db8::/64"] })).subnets!;
    expect(u.mode).toBe("unshaped");
    expect(u.prefixes.map((p) => [p.text, p.prefixLen, p.bytes.byteLength])).toEqual([["10.1.2.3/16", 16, 4], ["2001:db8::/64", 64, 16]]);
    expect(loadBandwidthConfig(args({ shapedSubnets: ["10.0.0.0/8"] })).subnets?.mode).toBe("shaped");
    expect(loadBandwidthConfig(args({ shapedSubnets: [], unshapedSubnets: null })).subnets).toBeUndefined();
  });
  test("lists come from the top level, else from runtimeConfig.bandwidth, independently of the limits", () => {
    const rc = { runtimeConfig: { bandwidth: { egressRate: 8000, egressBurst: 80, shapedSubnets: ["10.9.0.0/16"] } } };
    const fromRuntime = loadBandwidthConfig(args(rc));
    expect(fromRuntime.subnets?.prefixes[0]?.text).toBe("10.9.0.0/16");
    expect(fromRuntime.bandwidth.egress).toEqual({ rate: 8000, burst: 80 });
    const mixed = loadBandwidthConfig(args({ ...rc, unshapedSubnets: ["10.8.0.0/16"] }));
    expect(mixed.subnets).toMatchObject({ mode: "unshaped", prefixes: [{ text: "10.8.0.0/16" }] });
    expect(mixed.bandwidth.egress).toEqual({ rate: 8000, burst: 80 });
  });
  test("validation: both lists, bad prefixes (code 7); DEL does not validate the lists", () => {
    const both = errorOf(() => loadBandwidthConfig(args({ shapedSubnets: ["10.0.0.0/8"], unshapedSubnets: ["10.1.0.0/16"] })));
    expect(both.code).toBe(7);
    expect(both.message).toBe("unshapedSubnets and shapedSubnets cannot be both specified, one of them should be discarded");
    const bad = errorOf(() => loadBandwidthConfig(args({ unshapedSubnets: ["10.0.0.0/33"] })));
    expect(bad.code).toBe(7);
    expect(bad.message).toBe('bad subnet "10.0.0.0/33" provided, details invalid CIDR address: 10.0.0.0/33');
    expect(errorOf(() => loadBandwidthConfig(args({ shapedSubnets: ["10.0.0.1"] }))).message).toContain("bad subnet");
    expect(errorOf(() => loadBandwidthConfig(args({ shapedSubnets: "10.0.0.0/8" }))).code).toBe(7);
    expect(loadBandwidthConfig(args({ shapedSubnets: ["x"], unshapedSubnets: ["y"] }), { forDel: true }).subnets).toBeUndefined();
  });
  test("HTB quantum: rate / 10 within the kernel's bounds", () => {
    expect(quantumFor(1000)).toBe(1000);
    expect(quantumFor(100000)).toBe(10000);
    expect(quantumFor(12_500_000_000)).toBe(200000);
  });
});

describe("TBF numbers (as the Go plugin)", () => {
  const TICK = 15.625;
  test("800 kbit/s, 80 kbit burst → 100000 B/s, 10000 B, 1562500 ticks, limit 12500", () => {
    expect(tbfNumbers({ rate: 800000, burst: 80000 }, TICK)).toEqual({ rate: 100000, burst: 10000, buffer: 1562500, limit: 12500 });
  });
  test("bits are converted to bytes (PR #169): 8000 bit/s, 80 bit → 1000 B/s, 10 B", () => {
    expect(tbfNumbers({ rate: 8000, burst: 80 }, TICK)).toEqual({ rate: 1000, burst: 10, buffer: 156250, limit: 35 });
  });
  test("truncations: microseconds first, then ticks; limit in whole bytes", () => {
    // 3 B at 7 B/s = 428571.43 us → 428571 us → 6696421.875 ticks → 6696421
    expect(bufferTicks(7, 3, TICK)).toBe(6696421);
    expect(limitBytes(7, 3)).toBe(3); // 7 B/s × 25 ms = 0.175 B → 0
    expect(limitBytes(125001, 0)).toBe(3125);
  });
});

describe("IFB names", () => {
  test("upstream: bwp + 12 hex of sha512(network + containerID)", () => {
    const n = upstreamIfbName("net", "c1");
    expect(n).toMatch(/^bwp[0-9a-f]{12}$/);
    const hex = new Bun.CryptoHasher("sha512").update("netc1").digest("hex");
    expect(n).toBe(`bwp${hex.slice(0, 12)}`);
  });
  test("a second interface gets a different, stable name", () => {
    expect(derivedIfbName("net", "c1", "eth1")).toMatch(/^bwp[0-9a-f]{12}$/);
    expect(derivedIfbName("net", "c1", "eth1")).not.toBe(upstreamIfbName("net", "c1"));
    expect(derivedIfbName("net", "c1", "eth1")).toBe(derivedIfbName("net", "c1", "eth1"));
    expect(derivedIfbName("net", "c1", "eth1")).not.toBe(derivedIfbName("net", "c1", "eth2"));
  });
  test("ownership by alias; an IFB without our alias (Go) belongs to whoever asks", () => {
    expect(ifbBelongsTo(ifbAlias("c1", "eth0"), "c1", "eth0")).toBe(true);
    expect(ifbBelongsTo(ifbAlias("c1", "eth0"), "c1", "eth1")).toBe(false);
    expect(ifbBelongsTo(undefined, "c1", "eth1")).toBe(true);
    expect(ifbBelongsTo("something else", "c1", "eth1")).toBe(true);
  });
});
