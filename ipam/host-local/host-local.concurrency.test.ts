/**
 * Concurrent ADDs from separate processes on one store: no duplicate address, one
 * file per container, and an owner index that agrees with the files. When the Go plugin is
 * installed, half of the ADDs are made by it at the same time (shared flock).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseIP } from "../../shared/ip/addr.ts";
import { DiskStore } from "./store/disk.ts";

const GO_PLUGIN = "/usr/lib/cni/host-local";
const BUN = process.execPath;
const WORKER = join(import.meta.dir, "..", "..", "test", "harness", "host-local-add-worker.ts");
const N = 24;
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "hl-conc-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

test(`${N} concurrent ADDs (TypeScript${existsSync(GO_PLUGIN) ? " and Go" : ""}) never hand out an address twice`, async () => {
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "conc",
    ipam: { type: "host-local", dataDir: root, ranges: [[{ subnet: "10.30.0.0/24" }], [{ subnet: "fd30::/120" }]] },
  });
  const useGo = existsSync(GO_PLUGIN);
  const children = Array.from({ length: N }, (_, i) => {
    const id = `c${i}`;
    if (useGo && i % 2 === 1) {
      return Bun.spawn([GO_PLUGIN], {
        env: { CNI_COMMAND: "ADD", CNI_CONTAINERID: id, CNI_NETNS: "/proc/self/ns/net", CNI_IFNAME: "eth0", CNI_PATH: "/usr/lib/cni" },
        stdin: Buffer.from(conf),
        stdout: "pipe",
      });
    }
    return Bun.spawn([BUN, WORKER, conf, id], { stdout: "pipe", env: { ...process.env, BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" } });
  });
  const codes = await Promise.all(children.map((c) => c.exited));
  expect(codes).toEqual(new Array(N).fill(0));
  const results = await Promise.all(children.map(async (c) => JSON.parse(await new Response(c.stdout).text()) as { ips: { address: string }[] }));
  const addresses = results.flatMap((r) => r.ips.map((i) => i.address));
  expect(addresses).toHaveLength(2 * N);
  expect(new Set(addresses).size).toBe(2 * N);

  const dir = join(root, "conc");
  const owners = readdirSync(dir)
    .filter((f) => parseIP(f) !== null)
    .map((f) => readFileSync(join(dir, f), "latin1"));
  expect(owners).toHaveLength(2 * N);
  for (let i = 0; i < N; i++) expect(owners.filter((o) => o === `c${i}\r\neth0`)).toHaveLength(2);

  // The index (trusted or verified, whichever applies now) finds every container.
  const store = DiskStore.open("conc", root);
  try {
    store.lock();
    for (let i = 0; i < N; i++) expect(store.getByID(`c${i}`, "eth0")).toHaveLength(2);
    store.unlock();
  } finally {
    store.close();
  }
}, 60_000);
