/**
 * host-local: ADD/CHECK/DEL against the real binary with the store
 * checked byte for byte (`<dataDir>/<net>/<ip>` = `id\r\nifname`, mode 0600, `lock`,
 * `last_reserved_ip.<i>`), round robin, exhaustion, requested IPs, dual stack, concurrency, and the
 * extensions of this project: GC with `cni.dev/valid-attachments` and STATUS code 50.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readFileSync, statSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { hostLocalConfig, type HostLocalOptions } from "../harness/configs.ts";
import { execGoPlugin, execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { ipamResultFor } from "../harness/expected-results.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { PrivateMountNs } from "../harness/mount-ns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { readStoreDir, reservationContent, reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { ALL_SPEC_VERSIONS, GO_REFERENCE_VERSIONS, hasCheck } from "../harness/versions.ts";

const NET = "hl-net";
const DUAL = [[{ subnet: "10.1.2.0/24" }], [{ subnet: "fd00:1::/64" }]];

function run(command: string, containerID: string, config: Record<string, unknown>, extra: Partial<PluginInvocation> = {}) {
  return execPlugin("host-local", { command, containerID, netns: "/nonexistent/netns", ifName: "eth0", config, ...extra });
}

function writeResolvConf(dir: string): string {
  const path = join(dir, "resolv.conf");
  writeFileSync(path, "# test\nnameserver 10.1.2.53\nnameserver fd00:1::53\ndomain example.com\nsearch example.com corp.example\noptions ndots:2 timeout:1\n");
  return path;
}

const RESOLV_DNS = {
  nameservers: ["10.1.2.53", "fd00:1::53"],
  domain: "example.com",
  search: ["example.com", "corp.example"],
  options: ["ndots:2", "timeout:1"],
};

describe.skipIf(!sandboxed())("host-local", () => {
  useFixtureCleanup();

  for (const v of ALL_SPEC_VERSIONS) {
    test(`[${v}] host-local ADD/CHECK/DEL allocates dual-stack addresses, records them on disk and releases them`, async () => {
      const dataDir = makeTempDir();
      const opts: HostLocalOptions = {
        cniVersion: v,
        dataDir,
        ranges: DUAL,
        routes: [{ dst: "0.0.0.0/0" }, { dst: "::/0" }, { dst: "192.168.0.0/16", gw: "10.1.2.254" }],
        ipam: { resolvConf: writeResolvConf(dataDir) },
      };
      const conf = hostLocalConfig(opts);
      const result = expectResult(await run("ADD", "ctr-1", conf));
      expect(result).toEqual(
        ipamResultFor(v, {
          ips: [
            { address: "10.1.2.2/24", gateway: "10.1.2.1" },
            { address: "fd00:1::2/64", gateway: "fd00:1::1" },
          ],
          routes: [{ dst: "0.0.0.0/0" }, { dst: "::/0" }, { dst: "192.168.0.0/16", gw: "10.1.2.254" }],
          dns: RESOLV_DNS,
        }),
      );
      const netDir = join(dataDir, NET);
      expect(statSync(netDir).mode & 0o777).toBe(0o755);
      const files = readStoreDir(netDir);
      expect(files.filter((f) => f.name !== "lock")).toEqual([
        { name: "10.1.2.2", content: reservationContent("ctr-1", "eth0"), mode: 0o600 },
        { name: "fd00:1::2", content: reservationContent("ctr-1", "eth0"), mode: 0o600 },
        { name: "last_reserved_ip.0", content: "10.1.2.2", mode: 0o600 },
        { name: "last_reserved_ip.1", content: "fd00:1::2", mode: 0o600 },
      ]);
      expect(files.find((f) => f.name === "lock")?.content).toBe("");
      // Anything beyond Go's files must be private (dot-prefixed), e.g. our owner index.
      const extra = readStoreDir(netDir, { hidden: true }).filter((f) => !files.some((g) => g.name === f.name));
      for (const f of extra) expect(f.name).toStartWith(".");

      if (hasCheck(v)) {
        expectSuccess(await run("CHECK", "ctr-1", { ...conf, prevResult: result }), { silent: true });
      }
      expectSuccess(await run("DEL", "ctr-1", conf), { silent: true });
      expect(reservations(netDir)).toEqual({});
      if (hasCheck(v)) {
        expectCniError(await run("CHECK", "ctr-1", { ...conf, prevResult: result }), { code: 999, msg: "ctr-1" });
      }
    });
  }

  describe.skipIf(!hasGoPlugin("host-local"))("against the Go reference", () => {
    for (const v of GO_REFERENCE_VERSIONS) {
      test(`[${v}] host-local ADD result and store files equal the Go reference's (file modes aside)`, async () => {
        const ours = makeTempDir();
        const theirs = makeTempDir();
        const resolv = writeResolvConf(ours);
        const base = { cniVersion: v, ranges: DUAL, routes: [{ dst: "0.0.0.0/0" }], ipam: { resolvConf: resolv } };
        const a = expectResult(await run("ADD", "ctr-go", hostLocalConfig({ ...base, dataDir: ours })));
        const b = expectResult(
          await execGoPlugin("host-local", {
            command: "ADD",
            containerID: "ctr-go",
            netns: "/nonexistent/netns",
            ifName: "eth0",
            config: hostLocalConfig({ ...base, dataDir: theirs }),
          }),
        );
        expect(a).toEqual(b);
        const strip = (files: { name: string; content: string }[]) => files.map(({ name, content }) => ({ name, content }));
        expect(strip(readStoreDir(join(ours, NET)))).toEqual(strip(readStoreDir(join(theirs, NET))));
        // Debian 1.1.1 writes 0644 files; HEAD (and we) 0600. The lock file matches Go's mode.
        const lockMode = (dir: string) => statSync(join(dir, NET, "lock")).mode & 0o777;
        expect(lockMode(ours)).toBe(lockMode(theirs));
      });
    }
  });

  test("host-local allocates round robin: a released address is not reused at once", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir });
    const first = expectResult(await run("ADD", "c1", conf));
    expect(first.ips[0].address).toBe("10.1.2.2/24");
    expectSuccess(await run("DEL", "c1", conf));
    const second = expectResult(await run("ADD", "c2", conf));
    expect(second.ips[0].address).toBe("10.1.2.3/24");
    expect(readStoreDir(join(dataDir, NET)).find((f) => f.name === "last_reserved_ip.0")?.content).toBe("10.1.2.3");
  });

  test("host-local round robin wraps to the start of the range and skips the gateway", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir, ranges: [[{ subnet: "10.5.0.0/29" }]] });
    writeFileSync(join(makeStoreDir(dataDir), "last_reserved_ip.0"), "10.5.0.6");
    const r = expectResult(await run("ADD", "c1", conf));
    expect(r.ips[0].address).toBe("10.5.0.2/29");
  });

  test("host-local reports exhaustion of a /29 after 5 addresses and reuses a freed one", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir, ranges: [[{ subnet: "10.99.0.0/29" }]] });
    const got: string[] = [];
    for (let i = 0; i < 5; i++) got.push(expectResult(await run("ADD", `c${i}`, conf)).ips[0].address);
    expect(got).toEqual(["10.99.0.2/29", "10.99.0.3/29", "10.99.0.4/29", "10.99.0.5/29", "10.99.0.6/29"]);
    const before = readStoreDir(join(dataDir, NET));
    expectCniError(await run("ADD", "c5", conf), {
      code: 999,
      msg: "no IP addresses available in range set: 10.99.0.1-10.99.0.6",
    });
    expect(Object.keys(reservations(join(dataDir, NET)))).toHaveLength(5);
    expect(readStoreDir(join(dataDir, NET)).filter((f) => !f.name.startsWith("last_"))).toEqual(
      before.filter((f) => !f.name.startsWith("last_")),
    );
    expectSuccess(await run("DEL", "c2", conf));
    expect(expectResult(await run("ADD", "c6", conf)).ips[0].address).toBe("10.99.0.4/29");
  });

  test("host-local allocates the IP requested through CNI_ARGS and refuses it when taken", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir });
    const r = expectResult(await run("ADD", "c1", conf, { args: "IP=10.1.2.50" }));
    expect(r.ips).toEqual([{ address: "10.1.2.50/24", gateway: "10.1.2.1" }]);
    expectCniError(await run("ADD", "c2", conf, { args: "IP=10.1.2.50" }), {
      code: 999,
      msg: "requested IP address 10.1.2.50 is not available in range set 10.1.2.1-10.1.2.254",
    });
    expect(Object.keys(reservations(join(dataDir, NET)))).toEqual(["10.1.2.50"]);
  });

  test("host-local takes requested IPs from runtimeConfig.ips and args.cni.ips, one per range set", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({
      cniVersion: "1.0.0",
      dataDir,
      ranges: DUAL,
      top: { runtimeConfig: { ips: ["10.1.2.77/24"] }, args: { cni: { ips: ["fd00:1::77"] } } },
    });
    const r = expectResult(await run("ADD", "c1", conf));
    expect(r.ips.map((i: { address: string }) => i.address)).toEqual(["10.1.2.77/24", "fd00:1::77/64"]);
  });

  test("host-local refuses a second ADD for the same container and ifname, but serves another ifname", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir });
    expectResult(await run("ADD", "c1", conf));
    expectCniError(await run("ADD", "c1", conf), { code: 999, msg: "duplicate allocation is not allowed" });
    const other = expectResult(await run("ADD", "c1", conf, { ifName: "eth1" }));
    expect(other.ips[0].address).toBe("10.1.2.3/24");
    expect(reservations(join(dataDir, NET))).toEqual({
      "10.1.2.2": reservationContent("c1", "eth0"),
      "10.1.2.3": reservationContent("c1", "eth1"),
    });
    expectSuccess(await run("DEL", "c1", conf, { ifName: "eth1" }));
    expect(Object.keys(reservations(join(dataDir, NET)))).toEqual(["10.1.2.2"]);
  });

  test("host-local DEL of an unknown container succeeds and changes nothing", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir });
    expectResult(await run("ADD", "c1", conf));
    expectSuccess(await run("DEL", "never-added", conf), { silent: true });
    expect(Object.keys(reservations(join(dataDir, NET)))).toEqual(["10.1.2.2"]);
  });

  test("host-local DEL releases a legacy reservation holding only the container ID", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir });
    writeFileSync(join(makeStoreDir(dataDir), "10.1.2.9"), "legacy-ctr");
    expectSuccess(await run("DEL", "legacy-ctr", conf));
    expect(reservations(join(dataDir, NET))).toEqual({});
  });

  test("host-local handles 50 concurrent ADDs with no duplicate address and 50 clean concurrent DELs", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir });
    const ids = Array.from({ length: 50 }, (_, i) => `conc-${i}`);
    const adds = await Promise.all(ids.map((id) => run("ADD", id, conf)));
    const addrs = adds.map((r) => expectResult(r).ips[0].address as string);
    expect(new Set(addrs).size).toBe(50);
    const files = reservations(join(dataDir, NET));
    expect(Object.keys(files)).toHaveLength(50);
    for (const [i, id] of ids.entries()) expect(files[addrs[i]!.split("/")[0]!]).toBe(reservationContent(id, "eth0"));
    const dels = await Promise.all(ids.map((id) => run("DEL", id, conf)));
    for (const d of dels) expectSuccess(d, { silent: true });
    expect(reservations(join(dataDir, NET))).toEqual({});
  }, 120_000);

  test("[1.1.0] host-local GC releases exactly the reservations missing from cni.dev/valid-attachments", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.1.0", dataDir, ranges: DUAL });
    for (const [id, ifName] of [["keep-1", "eth0"], ["stale-1", "eth0"], ["keep-2", "eth0"], ["keep-1", "eth1"]] as const) {
      expectResult(await run("ADD", id, conf, { ifName }));
    }
    const netDir = join(dataDir, NET);
    expect(Object.keys(reservations(netDir))).toHaveLength(8);
    const gc = await execPlugin("host-local", {
      command: "GC",
      containerID: "",
      netns: "",
      ifName: "",
      args: "",
      config: {
        ...conf,
        "cni.dev/valid-attachments": [
          { containerID: "keep-1", ifname: "eth0" },
          { containerID: "keep-2", ifname: "eth0" },
        ],
      },
    });
    expectSuccess(gc, { silent: true });
    const left = reservations(netDir);
    expect(Object.values(left).sort()).toEqual([
      reservationContent("keep-1", "eth0"),
      reservationContent("keep-1", "eth0"),
      reservationContent("keep-2", "eth0"),
      reservationContent("keep-2", "eth0"),
    ]);
    expect(existsSync(join(netDir, "lock"))).toBe(true);
    expect(existsSync(join(netDir, "last_reserved_ip.0"))).toBe(true);
  });

  test("[1.1.0] host-local GC reclaims an empty reservation file", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.1.0", dataDir });
    expectResult(await run("ADD", "keep", conf));
    writeFileSync(join(dataDir, NET, "10.1.2.200"), "");
    const gc = await execPlugin("host-local", {
      command: "GC",
      path: undefined,
      config: { ...conf, "cni.dev/valid-attachments": [{ containerID: "keep", ifname: "eth0" }] },
    });
    expectSuccess(gc, { silent: true });
    expect(reservations(join(dataDir, NET))).toEqual({ "10.1.2.2": reservationContent("keep", "eth0") });
  });

  test("[1.1.0] host-local STATUS succeeds with free addresses and answers code 50 when every range set is full", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.1.0", dataDir, ranges: [[{ subnet: "10.98.0.0/30" }]] });
    const status = () => execPlugin("host-local", { command: "STATUS", config: conf });
    expectSuccess(await status(), { silent: true });
    expect(expectResult(await run("ADD", "only", conf)).ips[0].address).toBe("10.98.0.2/30");
    expectCniError(await status(), { code: 50 });
    expectSuccess(await run("DEL", "only", conf));
    expectSuccess(await status(), { silent: true });
  });

  test("host-local does not print anything on stderr when it creates a new store", async () => {
    const dataDir = makeTempDir();
    const r = await run("ADD", "c1", hostLocalConfig({ cniVersion: "1.0.0", dataDir }));
    expectResult(r);
    expect(r.stderr).toBe("");
  });

  test("host-local DEL on a read-only dataDir fails with code 999 naming the file and errno, keeps the reservation; DEL after recovery removes it (issue 15.1)", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.1.0", dataDir, ranges: DUAL });
    expectResult(await run("ADD", "c1", conf));
    const ns = await PrivateMountNs.start();
    ns.setReadOnly(dataDir, true);
    const failed = await run("DEL", "c1", conf, { wrap: ns.prefix });
    const file = (name: string) => `remove ${join(dataDir, NET, name)}: read-only file system`;
    expect(expectCniError(failed, { code: 999 }).msg).toBe(`${file("10.1.2.2")}; ${file("fd00:1::2")}`);
    expect(reservations(join(dataDir, NET))).toEqual({ "10.1.2.2": reservationContent("c1", "eth0"), "fd00:1::2": reservationContent("c1", "eth0") });
    // GC cannot remove it either, and says so.
    const gc = await execPlugin("host-local", { command: "GC", config: { ...conf, "cni.dev/valid-attachments": [] }, wrap: ns.prefix });
    expectCniError(gc, { code: 999, msg: "read-only file system" });
    ns.setReadOnly(dataDir, false);
    expectSuccess(await run("DEL", "c1", conf, { wrap: ns.prefix }), { silent: true });
    expect(reservations(join(dataDir, NET))).toEqual({});
    ns.close();
  });

  test("host-local ADD reclaims crash leftovers: an empty reservation file and a stale scratch file (issue 15.5, #498)", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir });
    const netDir = makeStoreDir(dataDir);
    writeFileSync(join(netDir, "10.1.2.2"), ""); // killed between create and write
    writeFileSync(join(netDir, ".host-local.tmp"), reservationContent("dead", "eth0")); // killed before link(2)
    expect(expectResult(await run("ADD", "c1", conf)).ips[0].address).toBe("10.1.2.2/24");
    expect(reservations(netDir)).toEqual({ "10.1.2.2": reservationContent("c1", "eth0") });
    expect(readStoreDir(netDir, { hidden: true }).map((f) => f.name)).not.toContain(".host-local.tmp");
    expectCniError(await run("CHECK", "dead", conf), { code: 999 });
  });

  test("host-local never writes through symbolic links planted in the store (issue 15.4)", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir });
    const netDir = makeStoreDir(dataDir);
    const outside = join(makeTempDir(), "victim");
    writeFileSync(outside, "precious");
    for (const name of ["last_reserved_ip.0", ".host-local.tmp", ".host-local-owners", "10.1.2.2"]) symlinkSync(outside, join(netDir, name));
    expect(expectResult(await run("ADD", "c1", conf)).ips[0].address).toBe("10.1.2.3/24");
    expect(readFileSync(outside, "latin1")).toBe("precious");
    expectSuccess(await run("DEL", "c1", conf), { silent: true });
    expect(readFileSync(outside, "latin1")).toBe("precious");
    expect(lstatSync(join(netDir, "10.1.2.2")).isSymbolicLink()).toBe(true); // not ours to remove
    unlinkSync(join(netDir, "lock"));
    symlinkSync(join(makeTempDir(), "lock-target"), join(netDir, "lock"));
    expectCniError(await run("ADD", "c2", conf), { code: 999, msg: "too many levels of symbolic links" });
  });

  test("[1.1.0] host-local /31 (RFC 3021) hands out both addresses without a gateway, /32 its one address; Go 1.1.1 refuses both (#908)", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.1.0", dataDir, ranges: [[{ subnet: "10.99.0.0/31" }], [{ subnet: "fd00:99::5/128" }]] });
    expect(expectResult(await run("ADD", "p1", conf)).ips).toEqual([{ address: "10.99.0.0/31" }, { address: "fd00:99::5/128" }]);
    expectCniError(await run("ADD", "p2", conf), { code: 999, msg: "no IP addresses available in range set: fd00:99::5-fd00:99::5" });
    expectCniError(await execPlugin("host-local", { command: "STATUS", config: conf }), { code: 50, msg: "fd00:99::5" });
    const v4only = hostLocalConfig({ cniVersion: "1.1.0", dataDir, ranges: [[{ subnet: "10.99.0.0/31" }]] });
    expect(expectResult(await run("ADD", "p2", v4only)).ips).toEqual([{ address: "10.99.0.1/31" }]);
    expectCniError(await execPlugin("host-local", { command: "STATUS", config: v4only }), { code: 50 });
    for (const id of ["p1", "p2"]) expectSuccess(await run("DEL", id, conf), { silent: true });
    expect(reservations(join(dataDir, NET))).toEqual({});
    if (hasGoPlugin("host-local")) {
      const go = await execGoPlugin("host-local", { command: "ADD", containerID: "g", netns: "/nonexistent/netns", ifName: "eth0", config: { ...v4only, cniVersion: "1.0.0" } });
      expectCniError(go, { code: 999, msg: "too small to allocate from" });
    }
  });

  test("[1.1.0] host-local exclude: excluded addresses are never handed out, a requested one is refused, STATUS counts only allocatable addresses", async () => {
    const dataDir = makeTempDir();
    const conf = hostLocalConfig({ cniVersion: "1.1.0", dataDir, ranges: [[{ subnet: "10.97.0.0/28", rangeEnd: "10.97.0.9", exclude: ["10.97.0.2", "10.97.0.4/30"] }]] });
    const got: string[] = [];
    for (const id of ["e1", "e2", "e3"]) got.push(expectResult(await run("ADD", id, conf)).ips[0].address);
    expect(got).toEqual(["10.97.0.3/28", "10.97.0.8/28", "10.97.0.9/28"]);
    expectCniError(await execPlugin("host-local", { command: "STATUS", config: conf }), { code: 50 });
    expectSuccess(await run("DEL", "e2", conf), { silent: true });
    expectSuccess(await execPlugin("host-local", { command: "STATUS", config: conf }), { silent: true });
    const refused = await run("ADD", "e4", conf, { args: "IP=10.97.0.5" });
    expectCniError(refused, { code: 999, msg: "requested ip 10.97.0.5 is excluded from range 10.97.0.1-10.97.0.9 by exclude 10.97.0.4-10.97.0.7" });
    expect(Object.keys(reservations(join(dataDir, NET))).sort()).toEqual(["10.97.0.3", "10.97.0.9"]);
  });

  test("host-local refuses a dataDir with a NUL byte with code 7 naming dataDir (issue 15.6)", async () => {
    const conf = hostLocalConfig({ cniVersion: "1.0.0", dataDir: `${makeTempDir()}\u0000x` });
    for (const command of ["ADD", "DEL"]) expectCniError(await run(command, "c1", conf), { code: 7, msg: /^invalid dataDir .*NUL byte$/ });
  });
});

/** Creates `<dataDir>/hl-net` (as the plugin would) and returns it. */
function makeStoreDir(dataDir: string): string {
  const dir = join(dataDir, NET);
  Bun.spawnSync(["mkdir", "-p", dir]);
  return dir;
}
