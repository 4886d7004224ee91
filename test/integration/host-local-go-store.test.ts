/**
 * One host-local store shared by the Go reference (/usr/lib/cni/host-local, Debian 1.1.1) and ours,
 * as during a rolling upgrade: same directory, file names, `id\r\nifname` content
 * and `flock` on the same `lock` file, so neither ever hands out an address the other reserved, and
 * each releases what the other reserved.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { hostLocalConfig } from "../harness/configs.ts";
import { execPlugin, type PluginRun } from "../harness/exec-plugin.ts";
import { GO_BIN_DIR, hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { readStoreDir, reservationContent, reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";

const NET = "hl-net";
type Impl = "go" | "ts";

function hostLocal(impl: Impl, command: string, containerID: string, dataDir: string, extra: { args?: string } = {}): Promise<PluginRun> {
  return execPlugin("host-local", {
    command,
    containerID,
    netns: "/nonexistent/netns",
    ifName: "eth0",
    // 1.0.0: the newest version both implementations speak.
    config: hostLocalConfig({ cniVersion: "1.0.0", dataDir, ranges: [[{ subnet: "10.1.2.0/24" }], [{ subnet: "fd00:7::/120" }]] }),
    ...(impl === "go" ? { binDir: GO_BIN_DIR } : {}),
    ...extra,
  });
}

const addressesOf = (run: PluginRun): string[] => expectResult(run).ips.map((i: { address: string }) => i.address.split("/")[0]);

describe.skipIf(!sandboxed() || !hasGoPlugin("host-local"))("host-local store shared with the Go reference", () => {
  useFixtureCleanup();

  for (const [first, second] of [["go", "ts"], ["ts", "go"]] as const) {
    test(`host-local (${second}) never hands out an address ${first} reserved, and releases ${first}'s reservation on DEL`, async () => {
      const dataDir = makeTempDir();
      const netDir = join(dataDir, NET);
      const a = addressesOf(await hostLocal(first, "ADD", `by-${first}`, dataDir));
      expect(a).toEqual(["10.1.2.2", "fd00:7::2"]);
      const b = addressesOf(await hostLocal(second, "ADD", `by-${second}`, dataDir));
      expect(b).toEqual(["10.1.2.3", "fd00:7::3"]);
      expect(reservations(netDir)).toEqual({
        "10.1.2.2": reservationContent(`by-${first}`, "eth0"),
        "fd00:7::2": reservationContent(`by-${first}`, "eth0"),
        "10.1.2.3": reservationContent(`by-${second}`, "eth0"),
        "fd00:7::3": reservationContent(`by-${second}`, "eth0"),
      });
      // The second implementation releases what the first reserved.
      expectSuccess(await hostLocal(second, "DEL", `by-${first}`, dataDir), { silent: true });
      expect(Object.keys(reservations(netDir)).sort()).toEqual(["10.1.2.3", "fd00:7::3"]);
      // ...and the first implementation continues the round robin from the second's last_reserved_ip.
      const c = addressesOf(await hostLocal(first, "ADD", `again-${first}`, dataDir));
      expect(c).toEqual(["10.1.2.4", "fd00:7::4"]);
      expectSuccess(await hostLocal(first, "DEL", `by-${second}`, dataDir), { silent: true });
      expectSuccess(await hostLocal(second, "DEL", `again-${first}`, dataDir), { silent: true });
      expect(reservations(netDir)).toEqual({});
    });

    test(`host-local (${second}) refuses an IP requested through CNI_ARGS that ${first} reserved`, async () => {
      const dataDir = makeTempDir();
      expect(addressesOf(await hostLocal(first, "ADD", "c1", dataDir, { args: "IP=10.1.2.40" }))[0]).toBe("10.1.2.40");
      const clash = await hostLocal(second, "ADD", "c2", dataDir, { args: "IP=10.1.2.40" });
      expect({ status: clash.status, code: clash.json?.code }).toEqual({ status: 1, code: 999 });
      expect(clash.json?.msg).toContain("10.1.2.40");
      // Only c1's pair is left: the failed ADD released the IPv6 address it had taken for set 1.
      expect(reservations(join(dataDir, NET))).toEqual({
        "10.1.2.40": reservationContent("c1", "eth0"),
        "fd00:7::2": reservationContent("c1", "eth0"),
      });
    });
  }

  test("host-local interleaved concurrent ADDs (25 Go + 25 ours) never duplicate an address, concurrent cross DELs leave nothing", async () => {
    const dataDir = makeTempDir();
    const netDir = join(dataDir, NET);
    const jobs = Array.from({ length: 50 }, (_, i) => ({ impl: (i % 2 === 0 ? "go" : "ts") as Impl, id: `mix-${i}` }));
    const runs = await Promise.all(jobs.map((j) => hostLocal(j.impl, "ADD", j.id, dataDir)));
    const v4 = runs.map((r) => addressesOf(r)[0]!);
    const v6 = runs.map((r) => addressesOf(r)[1]!);
    expect(new Set(v4).size).toBe(50);
    expect(new Set(v6).size).toBe(50);
    const files = reservations(netDir);
    expect(Object.keys(files)).toHaveLength(100);
    for (const [i, j] of jobs.entries()) {
      expect(files[v4[i]!]).toBe(reservationContent(j.id, "eth0"));
      expect(files[v6[i]!]).toBe(reservationContent(j.id, "eth0"));
    }
    // Each implementation deletes the other's reservations, all at once.
    const dels = await Promise.all(jobs.map((j) => hostLocal(j.impl === "go" ? "ts" : "go", "DEL", j.id, dataDir)));
    for (const d of dels) expectSuccess(d, { silent: true });
    expect(reservations(netDir)).toEqual({});
    expect(readStoreDir(netDir).map((f) => f.name)).toEqual(["last_reserved_ip.0", "last_reserved_ip.1", "lock"]);
    // Our scratch file never outlives a call.
    expect(readStoreDir(netDir, { hidden: true }).map((f) => f.name)).not.toContain(".host-local.tmp");
  }, 120_000);

  test("host-local crash leftovers: ours reclaims Go's empty reservation (#498) and its own stale scratch file, which Go never takes for a reservation", async () => {
    const dataDir = makeTempDir();
    const netDir = join(dataDir, NET);
    expect(addressesOf(await hostLocal("go", "ADD", "go-1", dataDir))).toEqual(["10.1.2.2", "fd00:7::2"]);
    // Go killed between create and write; ours killed after filling its scratch file, before link(2).
    writeFileSync(join(netDir, "10.1.2.3"), "");
    writeFileSync(join(netDir, ".host-local.tmp"), reservationContent("dead", "eth0"));
    // Go skips both: the empty file holds 10.1.2.3, the scratch file is no address.
    expect(addressesOf(await hostLocal("go", "ADD", "go-2", dataDir))).toEqual(["10.1.2.4", "fd00:7::3"]);
    // Ours takes the empty reservation back when it is asked for, and drops the scratch file.
    expect(addressesOf(await hostLocal("ts", "ADD", "ts-1", dataDir, { args: "IP=10.1.2.3" }))).toEqual(["10.1.2.3", "fd00:7::4"]);
    expect(readStoreDir(netDir, { hidden: true }).map((f) => f.name)).not.toContain(".host-local.tmp");
    expect(reservations(netDir)["10.1.2.3"]).toBe(reservationContent("ts-1", "eth0"));
    // Go releases what ours reserved through link(2), and ours what Go reserved.
    expectSuccess(await hostLocal("go", "DEL", "ts-1", dataDir), { silent: true });
    for (const id of ["go-1", "go-2"]) expectSuccess(await hostLocal("ts", "DEL", id, dataDir), { silent: true });
    expect(reservations(netDir)).toEqual({});
  });
});
