/** Candidate order and the free-address count (upstream allocator_test.go scenarios, plus exclude and point-to-point). */
import { describe, expect, test } from "bun:test";
import { formatIP } from "../ip/addr.ts";
import { AllocationError, requestedRange } from "./candidates.ts";
import { hasFreeAddress } from "./free.ts";
import { candidateOrder, ip, rangeSet } from "./testing.ts";

describe("iterateCandidates", () => {
  const twoRanges = rangeSet({ subnet: "192.168.1.0/29" }, { subnet: "192.168.2.0/29" });

  test("iterateCandidates starts at the first rangeStart without a last reservation, skipping gateways", () => {
    expect(candidateOrder(twoRanges, null)).toEqual([
      "192.168.1.2",
      "192.168.1.3",
      "192.168.1.4",
      "192.168.1.5",
      "192.168.1.6",
      "192.168.2.2",
      "192.168.2.3",
      "192.168.2.4",
      "192.168.2.5",
      "192.168.2.6",
    ]);
  });

  test("iterateCandidates loops from the middle and visits the last reservation last", () => {
    expect(candidateOrder(twoRanges, "192.168.1.4")).toEqual([
      "192.168.1.5",
      "192.168.1.6",
      "192.168.2.2",
      "192.168.2.3",
      "192.168.2.4",
      "192.168.2.5",
      "192.168.2.6",
      "192.168.1.2",
      "192.168.1.3",
      "192.168.1.4",
    ]);
  });

  test("iterateCandidates moves to the next range after the end of one, and wraps from the last", () => {
    expect(candidateOrder(twoRanges, "192.168.1.6")[0]).toBe("192.168.2.2");
    expect(candidateOrder(twoRanges, "192.168.2.6")[0]).toBe("192.168.1.2");
  });

  test("iterateCandidates ignores a last reservation outside the set", () => {
    expect(candidateOrder(twoRanges, "10.0.0.1")[0]).toBe("192.168.1.2");
    expect(candidateOrder(twoRanges, "192.168.1.7")[0]).toBe("192.168.1.2"); // broadcast: outside the window
    expect(candidateOrder(twoRanges, "fd00::1")[0]).toBe("192.168.1.2");
  });

  test("iterateCandidates allocates .1 when the gateway is elsewhere", () => {
    expect(candidateOrder(rangeSet({ subnet: "10.20.0.0/29", gw: "10.20.0.6" }), null)).toEqual([
      "10.20.0.1",
      "10.20.0.2",
      "10.20.0.3",
      "10.20.0.4",
      "10.20.0.5",
    ]);
  });

  test("iterateCandidates terminates when the only address is the gateway", () => {
    expect(candidateOrder(rangeSet({ subnet: "10.0.0.0/30", start: "10.0.0.1", end: "10.0.0.1" }), null)).toEqual([]);
    expect(candidateOrder(rangeSet({ subnet: "10.0.0.0/30", start: "10.0.0.1", end: "10.0.0.1" }), "10.0.0.1")).toEqual([]);
  });

  test("iterateCandidates yields every non-gateway address exactly once for random windows and starts", () => {
    let seed = 99;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let i = 0; i < 200; i++) {
      const a = 1 + rnd(100);
      const b = a + rnd(100);
      const c = 1 + rnd(100);
      const d = c + rnd(100);
      const gw = `10.9.0.${1 + rnd(250)}`;
      const s = rangeSet(
        { subnet: "10.8.0.0/24", start: `10.8.0.${a}`, end: `10.8.0.${Math.min(b, 254)}` },
        { subnet: "10.9.0.0/24", start: `10.9.0.${c}`, end: `10.9.0.${Math.min(d, 254)}`, gw },
      );
      const expected = new Set<string>();
      for (const r of s) {
        for (let v = r.rangeStart.value; v <= r.rangeEnd.value; v++) {
          if (v !== r.gateway!.value) expected.add(formatIP({ family: 4, value: v }));
        }
      }
      const last = rnd(3) === 0 ? null : `10.${8 + rnd(2)}.0.${rnd(256)}`;
      const got = candidateOrder(s, last);
      expect(new Set(got).size).toBe(got.length);
      expect(new Set(got)).toEqual(expected);
    }
  });
});


describe("requestedRange", () => {
  test("a requested address outside the set, on the gateway or excluded is refused with upstream's text (code 999)", () => {
    const s = rangeSet({ subnet: "10.1.0.0/24", exclude: ["10.1.0.16/28"] });
    const refusal = (x: string) => {
      try {
        requestedRange(s, ip(x));
      } catch (err) {
        expect(err).toBeInstanceOf(AllocationError);
        expect((err as AllocationError).code).toBe(999);
        return (err as Error).message;
      }
      return "accepted";
    };
    expect(refusal("10.2.0.5")).toBe("10.2.0.5 not in range set 10.1.0.1-10.1.0.254");
    expect(refusal("10.1.0.1")).toBe("requested ip 10.1.0.1 is subnet's gateway");
    expect(refusal("10.1.0.20")).toBe("requested ip 10.1.0.20 is excluded from range 10.1.0.1-10.1.0.254 by exclude 10.1.0.16-10.1.0.31");
    expect(refusal("10.1.0.32")).toBe("accepted");
  });
});

describe("hasFreeAddress", () => {
  test("hasFreeAddress counts only allocatable addresses (exclusions, gateway and reservations not counted twice)", () => {
    const s = rangeSet({ subnet: "10.1.0.0/29", exclude: ["10.1.0.4/30", "10.1.0.1"] }); // window .1-.6: .2 and .3 allocatable
    const res = (...ips: string[]) => ips.map(ip);
    expect(hasFreeAddress(s, res())).toBe(true);
    expect(hasFreeAddress(s, res("10.1.0.2", "10.1.0.5", "10.1.0.4"))).toBe(true);
    expect(hasFreeAddress(s, res("10.1.0.2", "10.1.0.3"))).toBe(false);
    expect(hasFreeAddress(rangeSet({ subnet: "10.1.0.0/30", exclude: ["10.1.0.2"] }), res())).toBe(false); // .1 gateway, .2 excluded
    expect(hasFreeAddress(rangeSet({ subnet: "192.0.2.0/31" }), res("192.0.2.0"))).toBe(true);
    expect(hasFreeAddress(rangeSet({ subnet: "192.0.2.0/31" }), res("192.0.2.0", "192.0.2.1"))).toBe(false);
  });

});
