/** Allocation order and errors against the in-memory store (upstream allocator_test.go scenarios). */
import { describe, expect, test } from "bun:test";
import { formatIP, parseIP, type IPAddr } from "../../../shared/ip/addr.ts";
import { formatCIDR, parseCIDRDetailed } from "../../../shared/ip/cidr.ts";
import { FakeStore } from "../store/fake.ts";
import { AllocationError, IPAllocator, iterateCandidates } from "./allocator.ts";
import { canonicalizeRangeSet, type RangeSet } from "./range-set.ts";
import type { RangeInput } from "./range.ts";

function ip(s: string): IPAddr {
  const a = parseIP(s);
  if (a === null) throw new Error(`bad test ip ${s}`);
  return a;
}

interface Spec {
  subnet: string;
  start?: string;
  end?: string;
  gw?: string;
}

function set(...specs: Spec[]): RangeSet {
  return canonicalizeRangeSet(
    specs.map((s) => {
      const r: RangeInput = { subnet: parseCIDRDetailed(s.subnet)! };
      if (s.start) r.rangeStart = ip(s.start);
      if (s.end) r.rangeEnd = ip(s.end);
      if (s.gw) r.gateway = ip(s.gw);
      return r;
    }),
  );
}

function order(s: RangeSet, last: string | null): string[] {
  return [...iterateCandidates(s, last === null ? null : ip(last))].map((c) => formatIP(c.ip));
}

function allocText(a: IPAllocator, id: string, ifname = "eth0", requested?: string): string {
  const got = a.get(id, ifname, requested === undefined ? undefined : ip(requested));
  return `${formatCIDR(got.address)} gw ${formatIP(got.gateway)}`;
}

function allocError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AllocationError);
    expect((err as AllocationError).code).toBe(999);
    return (err as Error).message;
  }
  throw new Error("expected an allocation error");
}

describe("iterateCandidates", () => {
  const twoRanges = set({ subnet: "192.168.1.0/29" }, { subnet: "192.168.2.0/29" });

  test("iterateCandidates starts at the first rangeStart without a last reservation, skipping gateways", () => {
    expect(order(twoRanges, null)).toEqual([
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
    expect(order(twoRanges, "192.168.1.4")).toEqual([
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
    expect(order(twoRanges, "192.168.1.6")[0]).toBe("192.168.2.2");
    expect(order(twoRanges, "192.168.2.6")[0]).toBe("192.168.1.2");
  });

  test("iterateCandidates ignores a last reservation outside the set", () => {
    expect(order(twoRanges, "10.0.0.1")[0]).toBe("192.168.1.2");
    expect(order(twoRanges, "192.168.1.7")[0]).toBe("192.168.1.2"); // broadcast: outside the window
    expect(order(twoRanges, "fd00::1")[0]).toBe("192.168.1.2");
  });

  test("iterateCandidates allocates .1 when the gateway is elsewhere", () => {
    expect(order(set({ subnet: "10.20.0.0/29", gw: "10.20.0.6" }), null)).toEqual([
      "10.20.0.1",
      "10.20.0.2",
      "10.20.0.3",
      "10.20.0.4",
      "10.20.0.5",
    ]);
  });

  test("iterateCandidates terminates when the only address is the gateway", () => {
    expect(order(set({ subnet: "10.0.0.0/30", start: "10.0.0.1", end: "10.0.0.1" }), null)).toEqual([]);
    expect(order(set({ subnet: "10.0.0.0/30", start: "10.0.0.1", end: "10.0.0.1" }), "10.0.0.1")).toEqual([]);
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
      const s = set(
        { subnet: "10.8.0.0/24", start: `10.8.0.${a}`, end: `10.8.0.${Math.min(b, 254)}` },
        { subnet: "10.9.0.0/24", start: `10.9.0.${c}`, end: `10.9.0.${Math.min(d, 254)}`, gw },
      );
      const expected = new Set<string>();
      for (const r of s) {
        for (let v = r.rangeStart.value; v <= r.rangeEnd.value; v++) {
          if (v !== r.gateway.value) expected.add(formatIP({ family: 4, value: v }));
        }
      }
      const last = rnd(3) === 0 ? null : `10.${8 + rnd(2)}.0.${rnd(256)}`;
      const got = order(s, last);
      expect(new Set(got).size).toBe(got.length);
      expect(new Set(got)).toEqual(expected);
    }
  });
});

describe("IPAllocator", () => {
  test("allocator allocates in round robin and does not reuse a released address at once", () => {
    const store = new FakeStore();
    const a = new IPAllocator(set({ subnet: "10.0.0.0/29" }), store, 0);
    expect(allocText(a, "c1")).toBe("10.0.0.2/29 gw 10.0.0.1");
    expect(allocText(a, "c2")).toBe("10.0.0.3/29 gw 10.0.0.1");
    a.release("c1", "eth0");
    expect(allocText(a, "c3")).toBe("10.0.0.4/29 gw 10.0.0.1");
    expect(store.lastReserved.get("0")).toBe("10.0.0.4");
    expect(store.locked).toBe(false);
  });

  test("allocator continues round robin across restarts (new allocator, same store)", () => {
    const store = new FakeStore({}, { "0": "10.0.0.4" });
    const a = new IPAllocator(set({ subnet: "10.0.0.0/29" }), store, 0);
    expect(allocText(a, "c1")).toBe("10.0.0.5/29 gw 10.0.0.1");
  });

  test("allocator uses last_reserved_ip.<index> of its own range set only", () => {
    const store = new FakeStore({}, { "0": "10.0.0.4", "1": "10.1.0.4" });
    expect(allocText(new IPAllocator(set({ subnet: "10.1.0.0/29" }), store, 1), "c")).toBe("10.1.0.5/29 gw 10.1.0.1");
  });

  test("allocator does not allocate the broadcast address and reports exhaustion", () => {
    const store = new FakeStore();
    const a = new IPAllocator(set({ subnet: "10.0.0.0/30" }), store, 0);
    expect(allocText(a, "c1")).toBe("10.0.0.2/30 gw 10.0.0.1");
    expect(allocError(() => a.get("c2", "eth0"))).toBe("no IP addresses available in range set: 10.0.0.1-10.0.0.2");
    expect([...store.files.keys()]).toEqual(["10.0.0.2"]);
  });

  test("allocator exhaustion message lists every range of the set", () => {
    const store = new FakeStore({ "10.0.0.2": "x\r\neth0", "10.0.1.2": "y\r\neth0" });
    const a = new IPAllocator(set({ subnet: "10.0.0.0/30" }, { subnet: "10.0.1.0/30" }), store, 0);
    expect(allocError(() => a.get("c", "eth0"))).toBe(
      "no IP addresses available in range set: 10.0.0.1-10.0.0.2,10.0.1.1-10.0.1.2",
    );
  });

  test("allocator reuses a freed address when the range is full", () => {
    const files: Record<string, string> = {};
    for (let i = 2; i <= 6; i++) files[`10.99.0.${i}`] = `c${i}\r\neth0`;
    const store = new FakeStore(files, { "0": "10.99.0.6" });
    delete files["10.99.0.3"];
    store.files.delete("10.99.0.3");
    expect(allocText(new IPAllocator(set({ subnet: "10.99.0.0/29" }), store, 0), "new")).toBe("10.99.0.3/29 gw 10.99.0.1");
  });

  test("allocator moves to the next range after the last reservation ends one range", () => {
    const store = new FakeStore({}, { "0": "192.168.1.6" });
    const a = new IPAllocator(set({ subnet: "192.168.1.0/29" }, { subnet: "192.168.2.0/29" }), store, 0);
    expect(allocText(a, "c")).toBe("192.168.2.2/29 gw 192.168.2.1");
  });

  test("allocator starts at the first range without (or with garbage) last reservation", () => {
    for (const last of [undefined, "garbage", "10.0.0.5\n", "fd00::1"]) {
      const store = new FakeStore({}, last === undefined ? {} : { "0": last });
      const a = new IPAllocator(set({ subnet: "192.168.1.0/29" }, { subnet: "192.168.2.0/29" }), store, 0);
      expect(allocText(a, "c")).toBe("192.168.1.2/29 gw 192.168.1.1");
    }
  });

  test("allocator refuses a second allocation for the same attachment, also via a legacy file", () => {
    const store = new FakeStore();
    const a = new IPAllocator(set({ subnet: "10.0.0.0/29" }), store, 0);
    allocText(a, "c1");
    expect(allocError(() => a.get("c1", "eth0"))).toBe(
      "10.0.0.2 has been allocated to c1, duplicate allocation is not allowed",
    );
    expect(allocText(a, "c1", "eth1")).toBe("10.0.0.3/29 gw 10.0.0.1");
    const legacy = new FakeStore({ "10.0.0.5": "old\n" });
    expect(allocError(() => new IPAllocator(set({ subnet: "10.0.0.0/29" }), legacy, 0).get("old", "eth0"))).toBe(
      "10.0.0.5 has been allocated to old, duplicate allocation is not allowed",
    );
  });

  test("allocator ignores the attachment's addresses in other range sets for the duplicate check", () => {
    const store = new FakeStore({ "10.1.0.2": "c1\r\neth0" });
    expect(allocText(new IPAllocator(set({ subnet: "10.0.0.0/29" }), store, 0), "c1")).toBe("10.0.0.2/29 gw 10.0.0.1");
  });

  test("allocator allocates a requested address and records it as last reserved", () => {
    const store = new FakeStore();
    const a = new IPAllocator(set({ subnet: "10.0.0.0/29" }), store, 3);
    expect(allocText(a, "c1", "eth0", "10.0.0.5")).toBe("10.0.0.5/29 gw 10.0.0.1");
    expect(store.files.get("10.0.0.5")).toBe("c1\r\neth0");
    expect(store.lastReserved.get("3")).toBe("10.0.0.5");
  });

  test("allocator refuses a requested address that is taken, the gateway, or outside the window", () => {
    const store = new FakeStore({ "10.0.0.5": "other\r\neth0" });
    const a = new IPAllocator(set({ subnet: "10.0.0.0/29", start: "10.0.0.3", end: "10.0.0.5" }), store, 0);
    expect(allocError(() => a.get("c1", "eth0", ip("10.0.0.5")))).toBe(
      "requested IP address 10.0.0.5 is not available in range set 10.0.0.3-10.0.0.5",
    );
    expect(allocError(() => a.get("c1", "eth0", ip("10.0.0.2")))).toBe("10.0.0.2 not in range set 10.0.0.3-10.0.0.5");
    expect(allocError(() => a.get("c1", "eth0", ip("10.0.0.6")))).toBe("10.0.0.6 not in range set 10.0.0.3-10.0.0.5");
    const g = new IPAllocator(set({ subnet: "10.20.0.0/29", gw: "10.20.0.6" }), store, 0);
    expect(allocError(() => g.get("c1", "eth0", ip("10.20.0.6")))).toBe("requested ip 10.20.0.6 is subnet's gateway");
    expect(store.locked).toBe(false);
  });

  test("allocator allocates IPv6 with the range's prefix and gateway", () => {
    const store = new FakeStore();
    const a = new IPAllocator(set({ subnet: "fd00::/120" }), store, 1);
    expect(allocText(a, "c1")).toBe("fd00::2/120 gw fd00::1");
    expect(allocText(a, "c2")).toBe("fd00::3/120 gw fd00::1");
    expect(store.lastReserved.get("1")).toBe("fd00::3");
  });

  test("allocator takes the store lock once per call", () => {
    const store = new FakeStore();
    const a = new IPAllocator(set({ subnet: "10.0.0.0/29" }), store, 0);
    allocText(a, "c1");
    a.release("c1", "eth0");
    expect(store.lockCount).toBe(2);
  });
});
