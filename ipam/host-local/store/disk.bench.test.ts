/**
 * Lookup by container at 10 000 reservations: upstream's read-every-file walk against the owner
 * index (trusted, and verified after a foreign change); and an allocation that passes 10 000 taken
 * addresses. Asserts the I/O each path does and prints the timings for information (speed itself
 * is measured by `make bench`, next to the Go plugin).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseCIDRDetailed, formatCIDR } from "../../../shared/ip/cidr.ts";
import { IPAllocator } from "../allocator/allocator.ts";
import { canonicalizeRangeSet } from "../../../shared/ipam/range-set.ts";
import { DiskStore, type DiskStoreOptions } from "./disk.ts";

const N = 10_000;
const NET = "bench";
let root: string;

function name(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

/** One CHECK-like lookup in its own lock session; returns [found, ms, stats]. */
function lookup(id: string, opts: DiskStoreOptions = {}) {
  const t0 = performance.now();
  const store = DiskStore.open(NET, root, opts);
  let found: boolean;
  try {
    store.lock();
    try {
      found = store.findByID(id, "eth0");
    } finally {
      store.unlock();
    }
  } finally {
    store.close();
  }
  return { found, ms: performance.now() - t0, stats: store.stats };
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "hl-bench-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("lookup by container at 10 000 reservations: the owner index avoids reading every file", () => {
  mkdirSync(join(root, NET));
  // Written the way the Go plugin writes them: no index exists yet.
  for (let i = 0; i < N; i++) writeFileSync(join(root, NET, name(i + 2)), `container-${i}\r\neth0`, { mode: 0o600 });
  const later = { nowMs: () => Date.now() + 10_000 }; // the Go-written files are "old"
  const walk = lookup("container-9999", { ownerIndex: false });
  const build = lookup("container-9999", later);
  const trusted = lookup("container-9999", later);
  writeFileSync(join(root, NET, name(N + 5)), "go-newcomer\r\neth0", { mode: 0o600, flag: "wx" });
  const verified = lookup("go-newcomer", later);
  const trustedAgain = lookup("container-1", later);

  console.log(
    `host-local lookup @${N}: upstream-style walk ${walk.ms.toFixed(1)} ms; first run (builds index) ${build.ms.toFixed(1)} ms; ` +
      `trusted index ${trusted.ms.toFixed(1)} ms; after a Go write (verified) ${verified.ms.toFixed(1)} ms; ` +
      `trusted again ${trustedAgain.ms.toFixed(1)} ms`,
  );

  for (const r of [walk, build, trusted, verified, trustedAgain]) expect(r.found).toBe(true);
  expect(walk.stats.filesRead).toBe(N);
  expect(build.stats.filesRead).toBe(N);
  expect(trusted.stats).toEqual({ trustedLoads: 1, scans: 0, filesRead: 0 });
  expect(verified.stats).toEqual({ trustedLoads: 0, scans: 1, filesRead: 1 });
  expect(trustedAgain.stats.filesRead).toBe(0);
}, 120_000);

test("allocation past 10 000 taken addresses after a foreign change: one listing, no file read, one lookup each", () => {
  const net = "bench-alloc";
  mkdirSync(join(root, net));
  for (let i = 0; i < N; i++) writeFileSync(join(root, net, name(i + 2)), `container-${i}\r\neth0`, { mode: 0o600 });
  const set = canonicalizeRangeSet([{ subnet: parseCIDRDetailed("10.0.0.0/16")! }]);
  const later = { nowMs: () => Date.now() + 10_000 };
  const allocate = (id: string) => {
    const t0 = performance.now();
    const store = DiskStore.open(net, root, later);
    try {
      const got = new IPAllocator(set, store, 0).get(id, "eth0");
      return { address: formatCIDR(got.address), ms: performance.now() - t0, stats: store.stats };
    } finally {
      store.close();
    }
  };
  const first = allocate("new-0"); // no index yet: every file is read, as upstream
  rmSync(join(root, net, "last_reserved_ip.0")); // a foreign change, and the walk starts at the range start again
  const second = allocate("new-1");
  console.log(
    `host-local allocation past ${N} taken addresses: without index ${first.ms.toFixed(1)} ms; ` +
      `after a foreign change (listing) ${second.ms.toFixed(1)} ms`,
  );
  expect(first.address).toBe(`${name(N + 2)}/16`);
  expect(first.stats).toEqual({ trustedLoads: 0, scans: 1, filesRead: N });
  expect(second.address).toBe(`${name(N + 3)}/16`);
  expect(second.stats).toEqual({ trustedLoads: 0, scans: 1, filesRead: 0 });
}, 120_000);
