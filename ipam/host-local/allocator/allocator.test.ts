/** Allocation order and errors against the in-memory store (upstream allocator_test.go scenarios). */
import { describe, expect, test } from "bun:test";
import { formatIP, parseIP, type IPAddr } from "../../../shared/ip/addr.ts";
import { formatCIDR, parseCIDRDetailed } from "../../../shared/ip/cidr.ts";
import { FakeStore } from "../store/fake.ts";
import { AllocationError, firstCandidate, IPAllocator, type Candidate } from "./allocator.ts";
import { canonicalizeRangeSet, type RangeSet } from "./range-set.ts";
import type { RangeInput } from "./range.ts";
import { hasFreeAddress } from "../status.ts";
import { DiskStore } from "../store/disk.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
  exclude?: string[];
}

function set(...specs: Spec[]): RangeSet {
  return canonicalizeRangeSet(
    specs.map((s) => {
      const r: RangeInput = { subnet: parseCIDRDetailed(s.subnet)! };
      if (s.start) r.rangeStart = ip(s.start);
      if (s.end) r.rangeEnd = ip(s.end);
      if (s.gw) r.gateway = ip(s.gw);
      if (s.exclude) r.exclude = s.exclude;
      return r;
    }),
  );
}

/** Every candidate, in the order firstCandidate offers them. */
function order(s: RangeSet, last: string | null): string[] {
  const offered: Candidate[] = [];
  const taken = firstCandidate(s, last === null ? null : ip(last), (c) => {
    offered.push(c);
    return false;
  });
  expect(taken).toBeUndefined();
  return offered.map((c) => formatIP(c.ip));
}

function allocText(a: IPAllocator, id: string, ifname = "eth0", requested?: string): string {
  const got = a.get(id, ifname, requested === undefined ? undefined : ip(requested));
  return `${formatCIDR(got.address)} gw ${got.gateway === undefined ? "none" : formatIP(got.gateway)}`;
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

describe("firstCandidate", () => {
  const twoRanges = set({ subnet: "192.168.1.0/29" }, { subnet: "192.168.2.0/29" });

  test("firstCandidate starts at the first rangeStart without a last reservation, skipping gateways", () => {
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

  test("firstCandidate loops from the middle and visits the last reservation last", () => {
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

  test("firstCandidate moves to the next range after the end of one, and wraps from the last", () => {
    expect(order(twoRanges, "192.168.1.6")[0]).toBe("192.168.2.2");
    expect(order(twoRanges, "192.168.2.6")[0]).toBe("192.168.1.2");
  });

  test("firstCandidate ignores a last reservation outside the set", () => {
    expect(order(twoRanges, "10.0.0.1")[0]).toBe("192.168.1.2");
    expect(order(twoRanges, "192.168.1.7")[0]).toBe("192.168.1.2"); // broadcast: outside the window
    expect(order(twoRanges, "fd00::1")[0]).toBe("192.168.1.2");
  });

  test("firstCandidate allocates .1 when the gateway is elsewhere", () => {
    expect(order(set({ subnet: "10.20.0.0/29", gw: "10.20.0.6" }), null)).toEqual([
      "10.20.0.1",
      "10.20.0.2",
      "10.20.0.3",
      "10.20.0.4",
      "10.20.0.5",
    ]);
  });

  test("firstCandidate terminates when the only address is the gateway", () => {
    expect(order(set({ subnet: "10.0.0.0/30", start: "10.0.0.1", end: "10.0.0.1" }), null)).toEqual([]);
    expect(order(set({ subnet: "10.0.0.0/30", start: "10.0.0.1", end: "10.0.0.1" }), "10.0.0.1")).toEqual([]);
  });

  test("firstCandidate offers every non-gateway address exactly once for random windows and starts", () => {
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
          if (v !== r.gateway!.value) expected.add(formatIP({ family: 4, value: v }));
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
    expect(store.sessions).toEqual([true, false]); // only the allocation is marked as one
  });
});

describe("point-to-point subnets and exclude (beyond upstream)", () => {
  test("p2p: a /31 hands out both addresses without a gateway, a /32 its one address, then exhaustion", () => {
    const a = new IPAllocator(set({ subnet: "192.0.2.0/31" }), new FakeStore(), 0);
    expect(allocText(a, "c1")).toBe("192.0.2.0/31 gw none");
    expect(allocText(a, "c2")).toBe("192.0.2.1/31 gw none");
    expect(allocError(() => a.get("c3", "eth0"))).toBe("no IP addresses available in range set: 192.0.2.0-192.0.2.1");
    const one = new IPAllocator(set({ subnet: "192.0.2.9/32" }), new FakeStore(), 0);
    expect(allocText(one, "c1")).toBe("192.0.2.9/32 gw none");
    const v6 = new IPAllocator(set({ subnet: "fd00::/127" }), new FakeStore(), 0);
    expect(allocText(v6, "c1")).toBe("fd00::/127 gw none");
    expect(allocText(v6, "c2")).toBe("fd00::1/127 gw none");
    // A configured gateway is skipped and returned.
    const gw = new IPAllocator(set({ subnet: "192.0.2.0/31", gw: "192.0.2.0" }), new FakeStore(), 0);
    expect(allocText(gw, "c1")).toBe("192.0.2.1/31 gw 192.0.2.0");
    expect(allocError(() => gw.get("c2", "eth0"))).toBe("no IP addresses available in range set: 192.0.2.0-192.0.2.1");
  });

  test("exclude: excluded addresses and prefixes are never candidates, with rangeStart/rangeEnd and from any last reservation", () => {
    const s = set({ subnet: "10.1.0.0/27", start: "10.1.0.2", end: "10.1.0.20", exclude: ["10.1.0.3", "10.1.0.8/29", "10.1.0.20"] });
    const want = ["10.1.0.2", "10.1.0.4", "10.1.0.5", "10.1.0.6", "10.1.0.7", "10.1.0.16", "10.1.0.17", "10.1.0.18", "10.1.0.19"];
    expect(order(s, null)).toEqual(want);
    for (const last of ["10.1.0.9", "10.1.0.3", "10.1.0.19", "10.1.0.20"]) {
      const got = order(s, last);
      expect(new Set(got)).toEqual(new Set(want));
      expect(got).toHaveLength(want.length);
    }
    expect(order(s, "10.1.0.9")[0]).toBe("10.1.0.16");
    expect(order(s, "10.1.0.6")).toEqual([...want.slice(4), ...want.slice(0, 4)]);
  });

  test("exclude: a huge excluded prefix is skipped in one step (an IPv6 /65 out of a /64)", () => {
    const s = set({ subnet: "fd00::/64", exclude: ["fd00::/65", "fd00:0:0:0:8000::/66"] });
    const first = firstCandidate(s, null, () => true)!;
    expect(formatIP(first.ip)).toBe("fd00::c000:0:0:0");
    const a = new IPAllocator(s, new FakeStore(), 0);
    expect(allocText(a, "c1")).toBe("fd00::c000:0:0:0/64 gw fd00::1");
  });

  test("exclude: a requested address inside an excluded range is refused with a clear error, nothing reserved", () => {
    const store = new FakeStore();
    const a = new IPAllocator(set({ subnet: "10.1.0.0/24", exclude: ["10.1.0.2", "10.1.0.16/28"] }), store, 0);
    expect(allocError(() => a.get("c1", "eth0", ip("10.1.0.20")))).toBe(
      "requested ip 10.1.0.20 is excluded from range 10.1.0.1-10.1.0.254 by exclude 10.1.0.16-10.1.0.31",
    );
    expect(allocError(() => a.get("c1", "eth0", ip("10.1.0.2")))).toBe(
      "requested ip 10.1.0.2 is excluded from range 10.1.0.1-10.1.0.254 by exclude 10.1.0.2",
    );
    expect(store.files.size).toBe(0);
    expect(allocText(a, "c1", "eth0", "10.1.0.32")).toBe("10.1.0.32/24 gw 10.1.0.1");
  });

  test("exclude: STATUS counts only allocatable addresses (exclusions, gateway and reservations not counted twice)", () => {
    const s = set({ subnet: "10.1.0.0/29", exclude: ["10.1.0.4/30", "10.1.0.1"] }); // window .1-.6: .2 and .3 allocatable
    const res = (...ips: string[]) => ips.map((x) => ({ ip: ip(x), key: "k" }));
    expect(hasFreeAddress(s, res())).toBe(true);
    expect(hasFreeAddress(s, res("10.1.0.2", "10.1.0.5", "10.1.0.4"))).toBe(true);
    expect(hasFreeAddress(s, res("10.1.0.2", "10.1.0.3"))).toBe(false);
    expect(hasFreeAddress(set({ subnet: "10.1.0.0/30", exclude: ["10.1.0.2"] }), res())).toBe(false); // .1 gateway, .2 excluded
    expect(hasFreeAddress(set({ subnet: "192.0.2.0/31" }), res("192.0.2.0"))).toBe(true);
    expect(hasFreeAddress(set({ subnet: "192.0.2.0/31" }), res("192.0.2.0", "192.0.2.1"))).toBe(false);
  });

  test("exclude: allocation on the disk store with a trusted owner index skips exclusions and finds the owner", () => {
    const root = mkdtempSync(join(tmpdir(), "hl-excl-"));
    try {
      const s = set({ subnet: "10.1.0.0/28", exclude: ["10.1.0.2", "10.1.0.4/31"] });
      const got: string[] = [];
      for (const id of ["c1", "c2", "c3"]) {
        const store = DiskStore.open("excl", root, { nowMs: () => Date.now() + 10_000 });
        try {
          got.push(allocText(new IPAllocator(s, store, 0), id));
        } finally {
          store.close();
        }
      }
      expect(got).toEqual(["10.1.0.3/28 gw 10.1.0.1", "10.1.0.6/28 gw 10.1.0.1", "10.1.0.7/28 gw 10.1.0.1"]);
      const store = DiskStore.open("excl", root);
      try {
        store.lock();
        expect(store.getByID("c2", "eth0").map(formatIP)).toEqual(["10.1.0.6"]);
        expect(store.stats.trustedLoads).toBe(1);
        store.unlock();
      } finally {
        store.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
