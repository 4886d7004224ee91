/** host-local's allocator: order and errors against the in-memory store (upstream allocator_test.go scenarios). */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatIP } from "../../../shared/ip/addr.ts";
import { formatCIDR } from "../../../shared/ip/cidr.ts";
import { AllocationError, iterateCandidates } from "../../../shared/ipam/candidates.ts";
import { candidateOrder, ip, rangeSet } from "../../../shared/ipam/testing.ts";
import { DiskStore } from "../store/disk.ts";
import { FakeStore } from "../store/fake.ts";
import { IPAllocator } from "./allocator.ts";


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

describe("IPAllocator", () => {
  test("allocator allocates in round robin and does not reuse a released address at once", () => {
    const store = new FakeStore();
    const a = new IPAllocator(rangeSet({ subnet: "10.0.0.0/29" }), store, 0);
    expect(allocText(a, "c1")).toBe("10.0.0.2/29 gw 10.0.0.1");
    expect(allocText(a, "c2")).toBe("10.0.0.3/29 gw 10.0.0.1");
    a.release("c1", "eth0");
    expect(allocText(a, "c3")).toBe("10.0.0.4/29 gw 10.0.0.1");
    expect(store.lastReserved.get("0")).toBe("10.0.0.4");
    expect(store.locked).toBe(false);
  });

  test("allocator continues round robin across restarts (new allocator, same store)", () => {
    const store = new FakeStore({}, { "0": "10.0.0.4" });
    const a = new IPAllocator(rangeSet({ subnet: "10.0.0.0/29" }), store, 0);
    expect(allocText(a, "c1")).toBe("10.0.0.5/29 gw 10.0.0.1");
  });

  test("allocator uses last_reserved_ip.<index> of its own range set only", () => {
    const store = new FakeStore({}, { "0": "10.0.0.4", "1": "10.1.0.4" });
    expect(allocText(new IPAllocator(rangeSet({ subnet: "10.1.0.0/29" }), store, 1), "c")).toBe("10.1.0.5/29 gw 10.1.0.1");
  });

  test("allocator does not allocate the broadcast address and reports exhaustion", () => {
    const store = new FakeStore();
    const a = new IPAllocator(rangeSet({ subnet: "10.0.0.0/30" }), store, 0);
    expect(allocText(a, "c1")).toBe("10.0.0.2/30 gw 10.0.0.1");
    expect(allocError(() => a.get("c2", "eth0"))).toBe("no IP addresses available in range set: 10.0.0.1-10.0.0.2");
    expect([...store.files.keys()]).toEqual(["10.0.0.2"]);
  });

  test("allocator exhaustion message lists every range of the set", () => {
    const store = new FakeStore({ "10.0.0.2": "x\r\neth0", "10.0.1.2": "y\r\neth0" });
    const a = new IPAllocator(rangeSet({ subnet: "10.0.0.0/30" }, { subnet: "10.0.1.0/30" }), store, 0);
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
    expect(allocText(new IPAllocator(rangeSet({ subnet: "10.99.0.0/29" }), store, 0), "new")).toBe("10.99.0.3/29 gw 10.99.0.1");
  });

  test("allocator moves to the next range after the last reservation ends one range", () => {
    const store = new FakeStore({}, { "0": "192.168.1.6" });
    const a = new IPAllocator(rangeSet({ subnet: "192.168.1.0/29" }, { subnet: "192.168.2.0/29" }), store, 0);
    expect(allocText(a, "c")).toBe("192.168.2.2/29 gw 192.168.2.1");
  });

  test("allocator starts at the first range without (or with garbage) last reservation", () => {
    for (const last of [undefined, "garbage", "10.0.0.5\n", "fd00::1"]) {
      const store = new FakeStore({}, last === undefined ? {} : { "0": last });
      const a = new IPAllocator(rangeSet({ subnet: "192.168.1.0/29" }, { subnet: "192.168.2.0/29" }), store, 0);
      expect(allocText(a, "c")).toBe("192.168.1.2/29 gw 192.168.1.1");
    }
  });

  test("allocator refuses a second allocation for the same attachment, also via a legacy file", () => {
    const store = new FakeStore();
    const a = new IPAllocator(rangeSet({ subnet: "10.0.0.0/29" }), store, 0);
    allocText(a, "c1");
    expect(allocError(() => a.get("c1", "eth0"))).toBe(
      "10.0.0.2 has been allocated to c1, duplicate allocation is not allowed",
    );
    expect(allocText(a, "c1", "eth1")).toBe("10.0.0.3/29 gw 10.0.0.1");
    const legacy = new FakeStore({ "10.0.0.5": "old\n" });
    expect(allocError(() => new IPAllocator(rangeSet({ subnet: "10.0.0.0/29" }), legacy, 0).get("old", "eth0"))).toBe(
      "10.0.0.5 has been allocated to old, duplicate allocation is not allowed",
    );
  });

  test("allocator ignores the attachment's addresses in other range sets for the duplicate check", () => {
    const store = new FakeStore({ "10.1.0.2": "c1\r\neth0" });
    expect(allocText(new IPAllocator(rangeSet({ subnet: "10.0.0.0/29" }), store, 0), "c1")).toBe("10.0.0.2/29 gw 10.0.0.1");
  });

  test("allocator allocates a requested address and records it as last reserved", () => {
    const store = new FakeStore();
    const a = new IPAllocator(rangeSet({ subnet: "10.0.0.0/29" }), store, 3);
    expect(allocText(a, "c1", "eth0", "10.0.0.5")).toBe("10.0.0.5/29 gw 10.0.0.1");
    expect(store.files.get("10.0.0.5")).toBe("c1\r\neth0");
    expect(store.lastReserved.get("3")).toBe("10.0.0.5");
  });

  test("allocator refuses a requested address that is taken, the gateway, or outside the window", () => {
    const store = new FakeStore({ "10.0.0.5": "other\r\neth0" });
    const a = new IPAllocator(rangeSet({ subnet: "10.0.0.0/29", start: "10.0.0.3", end: "10.0.0.5" }), store, 0);
    expect(allocError(() => a.get("c1", "eth0", ip("10.0.0.5")))).toBe(
      "requested IP address 10.0.0.5 is not available in range set 10.0.0.3-10.0.0.5",
    );
    expect(allocError(() => a.get("c1", "eth0", ip("10.0.0.2")))).toBe("10.0.0.2 not in range set 10.0.0.3-10.0.0.5");
    expect(allocError(() => a.get("c1", "eth0", ip("10.0.0.6")))).toBe("10.0.0.6 not in range set 10.0.0.3-10.0.0.5");
    const g = new IPAllocator(rangeSet({ subnet: "10.20.0.0/29", gw: "10.20.0.6" }), store, 0);
    expect(allocError(() => g.get("c1", "eth0", ip("10.20.0.6")))).toBe("requested ip 10.20.0.6 is subnet's gateway");
    expect(store.locked).toBe(false);
  });

  test("allocator allocates IPv6 with the range's prefix and gateway", () => {
    const store = new FakeStore();
    const a = new IPAllocator(rangeSet({ subnet: "fd00::/120" }), store, 1);
    expect(allocText(a, "c1")).toBe("fd00::2/120 gw fd00::1");
    expect(allocText(a, "c2")).toBe("fd00::3/120 gw fd00::1");
    expect(store.lastReserved.get("1")).toBe("fd00::3");
  });

  test("allocator takes the store lock once per call", () => {
    const store = new FakeStore();
    const a = new IPAllocator(rangeSet({ subnet: "10.0.0.0/29" }), store, 0);
    allocText(a, "c1");
    a.release("c1", "eth0");
    expect(store.lockCount).toBe(2);
    expect(store.sessions).toEqual([true, false]); // only the allocation is marked as one
  });
});

describe("point-to-point subnets and exclude (beyond upstream)", () => {
  test("p2p: a /31 hands out both addresses without a gateway, a /32 its one address, then exhaustion", () => {
    const a = new IPAllocator(rangeSet({ subnet: "192.0.2.0/31" }), new FakeStore(), 0);
    expect(allocText(a, "c1")).toBe("192.0.2.0/31 gw none");
    expect(allocText(a, "c2")).toBe("192.0.2.1/31 gw none");
    expect(allocError(() => a.get("c3", "eth0"))).toBe("no IP addresses available in range set: 192.0.2.0-192.0.2.1");
    const one = new IPAllocator(rangeSet({ subnet: "192.0.2.9/32" }), new FakeStore(), 0);
    expect(allocText(one, "c1")).toBe("192.0.2.9/32 gw none");
    const v6 = new IPAllocator(rangeSet({ subnet: "fd00::/127" }), new FakeStore(), 0);
    expect(allocText(v6, "c1")).toBe("fd00::/127 gw none");
    expect(allocText(v6, "c2")).toBe("fd00::1/127 gw none");
    // A configured gateway is skipped and returned.
    const gw = new IPAllocator(rangeSet({ subnet: "192.0.2.0/31", gw: "192.0.2.0" }), new FakeStore(), 0);
    expect(allocText(gw, "c1")).toBe("192.0.2.1/31 gw 192.0.2.0");
    expect(allocError(() => gw.get("c2", "eth0"))).toBe("no IP addresses available in range set: 192.0.2.0-192.0.2.1");
  });

  test("exclude: excluded addresses and prefixes are never candidates, with rangeStart/rangeEnd and from any last reservation", () => {
    const s = rangeSet({ subnet: "10.1.0.0/27", start: "10.1.0.2", end: "10.1.0.20", exclude: ["10.1.0.3", "10.1.0.8/29", "10.1.0.20"] });
    const want = ["10.1.0.2", "10.1.0.4", "10.1.0.5", "10.1.0.6", "10.1.0.7", "10.1.0.16", "10.1.0.17", "10.1.0.18", "10.1.0.19"];
    expect(candidateOrder(s, null)).toEqual(want);
    for (const last of ["10.1.0.9", "10.1.0.3", "10.1.0.19", "10.1.0.20"]) {
      const got = candidateOrder(s, last);
      expect(new Set(got)).toEqual(new Set(want));
      expect(got).toHaveLength(want.length);
    }
    expect(candidateOrder(s, "10.1.0.9")[0]).toBe("10.1.0.16");
    expect(candidateOrder(s, "10.1.0.6")).toEqual([...want.slice(4), ...want.slice(0, 4)]);
  });

  test("exclude: a huge excluded prefix is skipped in one step (an IPv6 /65 out of a /64)", () => {
    const s = rangeSet({ subnet: "fd00::/64", exclude: ["fd00::/65", "fd00:0:0:0:8000::/66"] });
    const first = iterateCandidates(s, null).next().value!;
    expect(formatIP(first.ip)).toBe("fd00::c000:0:0:0");
    const a = new IPAllocator(s, new FakeStore(), 0);
    expect(allocText(a, "c1")).toBe("fd00::c000:0:0:0/64 gw fd00::1");
  });

  test("exclude: a requested address inside an excluded range is refused with a clear error, nothing reserved", () => {
    const store = new FakeStore();
    const a = new IPAllocator(rangeSet({ subnet: "10.1.0.0/24", exclude: ["10.1.0.2", "10.1.0.16/28"] }), store, 0);
    expect(allocError(() => a.get("c1", "eth0", ip("10.1.0.20")))).toBe(
      "requested ip 10.1.0.20 is excluded from range 10.1.0.1-10.1.0.254 by exclude 10.1.0.16-10.1.0.31",
    );
    expect(allocError(() => a.get("c1", "eth0", ip("10.1.0.2")))).toBe(
      "requested ip 10.1.0.2 is excluded from range 10.1.0.1-10.1.0.254 by exclude 10.1.0.2",
    );
    expect(store.files.size).toBe(0);
    expect(allocText(a, "c1", "eth0", "10.1.0.32")).toBe("10.1.0.32/24 gw 10.1.0.1");
  });

  test("exclude: allocation on the disk store with a trusted owner index skips exclusions and finds the owner", () => {
    const root = mkdtempSync(join(tmpdir(), "hl-excl-"));
    try {
      const s = rangeSet({ subnet: "10.1.0.0/28", exclude: ["10.1.0.2", "10.1.0.4/31"] });
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
