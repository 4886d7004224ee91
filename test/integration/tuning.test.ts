/**
 * tuning chained after ptp + host-local (through the conflist runner, as a runtime drives it), in
 * throwaway container namespaces: sysctls read inside the container, link attributes via
 * `ip -j -d link`, the backup file's exact bytes, CHECK, DEL restoring everything (sysctls
 * included), MAC precedence, validation errors, DEL robustness, and interop with the Go tuning
 * (Debian 1.1.1): each restores what the other changed.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { ConflistRunner, type NetworkConfigList, type RuntimeConf } from "../harness/conflist.ts";
import { execGoPlugin, execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { bothGcKeys, olderGcKey } from "../harness/gc-keys.ts";
import { ipIn, linkState, ptpChain, setSysctlIn, sysctlIn } from "../harness/meta-tuning-helpers.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { hasGoPlugin } from "../harness/paths.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { makeTempDir } from "../harness/tempdir.ts";

const SOMAXCONN = "/proc/sys/net/core/somaxconn";
const ARP_FILTER = "/proc/sys/net/ipv4/conf/eth0/arp_filter";
const NEW_MAC = "0a:58:0a:47:00:99";

let n = 0;
function ids(tag: string): { cid: string; net: string } {
  n++;
  return { cid: `tun-${tag}-${process.pid}-${n}`, net: `tun${n}` };
}

interface Attachment {
  runner: ConflistRunner;
  list: NetworkConfigList;
  rt: RuntimeConf;
  netns: string;
  result: Record<string, any>;
  tuningDataDir: string;
}

/** ptp + host-local + tuning(config) ADD through the conflist runner. */
async function attach(version: string, tuning: Record<string, unknown>, rtExtra: Partial<RuntimeConf> = {}): Promise<Attachment> {
  const { cid, net } = ids("a");
  const dataDir = makeTempDir("tuning-ipam-");
  const tuningDataDir = join(makeTempDir("tuning-bk-"), "backups");
  const ns = await createContainerNetns();
  const list = ptpChain({ name: net, cniVersion: version, dataDir, meta: [{ type: "tuning", dataDir: tuningDataDir, ...tuning }] });
  const rt: RuntimeConf = { containerID: cid, netns: ns.path, ifName: "eth0", ...rtExtra };
  const runner = new ConflistRunner({ cacheDir: makeTempDir("tuning-cache-") });
  const result = (await runner.add(list, rt)) as Record<string, any>;
  return { runner, list, rt, netns: ns.path, result, tuningDataDir };
}

/** Runs only tuning's DEL (as the runtime would, with the cached result from 0.4.0 on). */
async function tuningDel(a: Attachment, run = execPlugin): Promise<void> {
  const cached = a.runner.cachedResult(a.list, a.rt);
  const withPrev = a.list.cniVersion !== undefined && ["0.3.0", "0.3.1"].includes(a.list.cniVersion) ? undefined : cached;
  const conf = a.runner.buildPluginConfig(a.list, a.list.plugins[1]!, withPrev, a.rt);
  expectSuccess(await run("tuning", { command: "DEL", containerID: a.rt.containerID, netns: a.netns, ifName: "eth0", config: conf }), { silent: true });
}

describe.skipIf(!sandboxed())("tuning (chained after ptp)", () => {
  useFixtureCleanup();

  for (const v of ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]) {
    test(`[${v}] sysctl, mac, promisc, mtu, txQLen, allmulti with custom dataDir: ADD, CHECK, DEL restores all`, async () => {
      const tuning = {
        sysctl: { "net.core.somaxconn": "500", "net.ipv4.conf.IFNAME.arp_filter": "1" },
        mac: NEW_MAC,
        promisc: true,
        mtu: 1454,
        txQLen: 2000,
        allmulti: true,
      };
      const ns0 = await createContainerNetns();
      const defaultSomaxconn = sysctlIn(ns0.path, SOMAXCONN);
      await ns0.destroy();

      const a = await attach(v, tuning);
      // eth0's arp_filter starts from the netns default, which a new netns copies from the host's.
      const defaultArpFilter = sysctlIn(a.netns, "/proc/sys/net/ipv4/conf/default/arp_filter");
      const before = a.runner.calls[0]!.run.json as Record<string, any>; // ptp's result
      // Output = prevResult with the container interface's MAC rewritten.
      const expected = structuredClone(before);
      for (const i of expected.interfaces ?? []) if (i.name === "eth0") i.mac = NEW_MAC;
      expect(a.result).toEqual(expected);

      expect(sysctlIn(a.netns, SOMAXCONN)).toBe("500");
      expect(sysctlIn(a.netns, ARP_FILTER)).toBe("1");
      const st = linkState(a.netns, "eth0");
      expect(st.address).toBe(NEW_MAC);
      expect(st.mtu).toBe(1454);
      expect(st.txqlen).toBe(2000);
      expect(st.flags).toContain("PROMISC");
      expect(st.flags).toContain("ALLMULTI");

      const ptpMac = (before.interfaces as { name: string; mac: string }[]).find((i) => i.name === "eth0")!.mac;
      const file = join(a.tuningDataDir, `${a.rt.containerID}_eth0.json`);
      // Only the sysctls ADD changed are kept (a host whose default arp_filter is 1 changes one).
      const restored = [[SOMAXCONN, defaultSomaxconn, "500"], [ARP_FILTER, defaultArpFilter, "1"]]
        .filter(([, old, now]) => old !== now)
        .map(([path, old]) => `  "${path}": "${old}"`);
      expect(readFileSync(file, "utf8")).toBe(
        `{\n "mac": "${ptpMac}",\n "promisc": false,\n "mtu": 1500,\n "allmulti": false,\n "txQLen": 1000,\n` +
          ` "sysctlRestore": {\n${restored.join(",\n")}\n },\n "network": "${a.list.name}"\n}`,
      );

      if (v !== "0.3.0" && v !== "0.3.1") await a.runner.check(a.list, a.rt);

      await tuningDel(a);
      const after = linkState(a.netns, "eth0");
      expect(after.address).toBe(ptpMac);
      expect(after.mtu).toBe(1500);
      expect(after.txqlen).toBe(1000);
      expect(after.flags).not.toContain("PROMISC");
      expect(after.flags).not.toContain("ALLMULTI");
      expect(sysctlIn(a.netns, SOMAXCONN)).toBe(defaultSomaxconn);
      expect(sysctlIn(a.netns, ARP_FILTER)).toBe(defaultArpFilter);
      expect(existsSync(file)).toBe(false);
      await a.runner.del(a.list, a.rt); // second tuning DEL (no backup) + ptp DEL
    });
  }

  test("[1.0.0] only sysctls: passes prevResult through unchanged; DEL restores the sysctl", async () => {
    const a = await attach("1.0.0", { sysctl: { "net.ipv4.conf.IFNAME.arp_filter": "1" } });
    expect(a.result).toEqual(a.runner.calls[0]!.run.json);
    expect(sysctlIn(a.netns, ARP_FILTER)).toBe("1");
    await a.runner.del(a.list, a.rt);
  });

  test("[1.0.0] everything from args.cni overrides the config", async () => {
    const a = await attach("1.0.0", {
      mtu: 1400,
      args: { cni: { sysctl: { "net.core.somaxconn": "600" }, mac: NEW_MAC, promisc: true, mtu: 1300, txQLen: 500, allmulti: true } },
    });
    const st = linkState(a.netns, "eth0");
    expect([st.address, st.mtu, st.txqlen]).toEqual([NEW_MAC, 1300, 500]);
    expect(st.flags).toEqual(expect.arrayContaining(["PROMISC", "ALLMULTI"]));
    expect(sysctlIn(a.netns, SOMAXCONN)).toBe("600");
    await a.runner.check(a.list, a.rt);
    await tuningDel(a);
    expect(linkState(a.netns, "eth0").mtu).toBe(1500);
    await a.runner.del(a.list, a.rt);
  });

  test("[1.0.0] MAC precedence: config < CNI_ARGS MAC < runtimeConfig.mac < args.cni.mac", async () => {
    const macs = ["0a:58:00:00:00:01", "0a:58:00:00:00:02", "0a:58:00:00:00:03", "0a:58:00:00:00:04"];
    const cases: [Record<string, unknown>, Partial<RuntimeConf>, string][] = [
      [{ mac: macs[0] }, { args: [["IgnoreUnknown", "1"], ["MAC", macs[1]!]] }, macs[1]!],
      [{ mac: macs[0], capabilities: { mac: true } }, { args: [["IgnoreUnknown", "1"], ["MAC", macs[1]!]], capabilityArgs: { mac: macs[2] } }, macs[2]!],
      [{ mac: macs[0], capabilities: { mac: true }, args: { cni: { mac: macs[3] } } }, { capabilityArgs: { mac: macs[2] } }, macs[3]!],
    ];
    for (const [tuning, rt, want] of cases) {
      const a = await attach("1.0.0", tuning, rt);
      expect(linkState(a.netns, "eth0").address).toBe(want);
      expect((a.result.interfaces as { name: string; mac: string }[]).find((i) => i.name === "eth0")!.mac).toBe(want);
      await a.runner.del(a.list, a.rt);
    }
  });

  test("[1.0.0] CHECK: promisc is compared even when not configured; sysctl drift is reported", async () => {
    const a = await attach("1.0.0", { sysctl: { "net.core.somaxconn": "700" } });
    await a.runner.check(a.list, a.rt);
    setSysctlIn(a.netns, SOMAXCONN, "701");
    await expect(a.runner.check(a.list, a.rt)).rejects.toThrow(`Error: Tuning configured value of ${SOMAXCONN} is 700, current value is 701`);
    setSysctlIn(a.netns, SOMAXCONN, "700");
    Bun.spawnSync(["nsenter", `--net=${a.netns}`, "--", "ip", "link", "set", "eth0", "promisc", "on"]);
    await expect(a.runner.check(a.list, a.rt)).rejects.toThrow("Error: Tuning link eth0 configured promisc is false, current value is 1");
    await a.runner.del(a.list, a.rt);
  });

  test("validation: duplicate sysctl keys, non-net keys, missing prevResult, bad MAC — nothing written", async () => {
    const ns = await createContainerNetns();
    const base = { command: "ADD", containerID: "tun-val", netns: ns.path, ifName: "eth0" } satisfies PluginInvocation;
    const prev = { cniVersion: "1.0.0", interfaces: [{ name: "eth0", sandbox: ns.path }], ips: [] };
    const dup = `{"cniVersion":"1.0.0","name":"t","type":"tuning","sysctl":{"net.core.somaxconn":"1","net.core.somaxconn":"2"},"prevResult":${JSON.stringify(prev)}}`;
    expectCniError(await execPlugin("tuning", { ...base, config: dup }), { code: 999, msg: "duplicated sysctl keys are not allowed" });
    const conf = (extra: Record<string, unknown>) => ({ cniVersion: "1.0.0", name: "t", type: "tuning", prevResult: prev, ...extra });
    expectCniError(await execPlugin("tuning", { ...base, config: conf({ sysctl: { "kernel.hostname": "x" } }) }), {
      code: 999,
      msg: 'invalid net sysctl key: "kernel.hostname"',
    });
    expectCniError(await execPlugin("tuning", { ...base, config: { cniVersion: "1.0.0", name: "t", type: "tuning" } }), {
      code: 999,
      msg: "Required prevResult missing",
    });
    const before = sysctlIn(ns.path, SOMAXCONN);
    expectCniError(await execPlugin("tuning", { ...base, config: conf({ sysctl: { "net.core.somaxconn": "42" }, mac: "zz" }) }), {
      code: 999,
      msg: "invalid args zz for MAC addr: address zz: invalid MAC address",
    });
    expect(sysctlIn(ns.path, SOMAXCONN)).toBe(before);
  });

  test("a failed ADD undoes, with DEL's restore steps, what it changed: sysctls, MAC, promisc; no backup file left", async () => {
    const a = await attach("1.0.0", {});
    const before = { somaxconn: sysctlIn(a.netns, SOMAXCONN), link: linkState(a.netns, "eth0") };
    a.list.plugins[1] = { type: "tuning", dataDir: a.tuningDataDir, sysctl: { "net.core.somaxconn": "557" }, mac: NEW_MAC, promisc: true, mtu: 100_000 };
    const conf = a.runner.buildPluginConfig(a.list, a.list.plugins[1]!, a.runner.calls[0]!.run.json as Record<string, unknown>, a.rt);
    const run = await execPlugin("tuning", { command: "ADD", containerID: a.rt.containerID, netns: a.netns, ifName: "eth0", config: conf });
    expectCniError(run, { code: 999, msg: /invalid argument/ });
    expect(sysctlIn(a.netns, SOMAXCONN)).toBe(before.somaxconn);
    const after = linkState(a.netns, "eth0");
    expect(after.address).toBe(before.link.address);
    expect(after.promiscuity).toBe(before.link.promiscuity);
    expect(after.mtu).toBe(before.link.mtu);
    expect(existsSync(a.tuningDataDir) ? readdirSync(a.tuningDataDir) : []).toEqual([]);
    await a.runner.del(a.list, a.rt);
  });

  test("DEL succeeds and drops the backup when the netns is gone or the interface is missing", async () => {
    const a = await attach("1.0.0", { mtu: 1400 });
    const file = join(a.tuningDataDir, `${a.rt.containerID}_eth0.json`);
    expect(existsSync(file)).toBe(true);
    const conf = a.runner.buildPluginConfig(a.list, a.list.plugins[1]!, undefined, a.rt);
    // interface gone
    expectSuccess(await execPlugin("tuning", { command: "DEL", containerID: a.rt.containerID, netns: a.netns, ifName: "eth9", config: conf }), { silent: true });
    await a.runner.del(a.list, a.rt);
    expect(readdirSync(a.tuningDataDir)).toEqual([]);

    const b = await attach("1.0.0", { mtu: 1400 });
    const confB = b.runner.buildPluginConfig(b.list, b.list.plugins[1]!, undefined, b.rt);
    expectSuccess(await execPlugin("tuning", { command: "DEL", containerID: b.rt.containerID, netns: "/proc/999999999/ns/net", ifName: "eth0", config: confB }), {
      silent: true,
    });
    expect(readdirSync(b.tuningDataDir)).toEqual([]);
    await b.runner.del(b.list, b.rt);
  });
});

describe.skipIf(!sandboxed())("tuning: changes it could not undo, failing disks, odd paths, GC (issue 15)", () => {
  useFixtureCleanup();

  /** A bare netns with lo up and a veth end `eth0` in it, and a fresh backup dir. */
  async function bare(): Promise<{ netns: string; dataDir: string; inv: (command: string, conf: Record<string, unknown>, ifName?: string) => PluginInvocation }> {
    const a = await attach("1.0.0", {});
    const dataDir = a.tuningDataDir;
    const inv = (command: string, conf: Record<string, unknown>, ifName = "eth0"): PluginInvocation => ({
      command,
      containerID: a.rt.containerID,
      netns: a.netns,
      ifName,
      config: {
        cniVersion: "1.0.0",
        name: a.list.name,
        type: "tuning",
        dataDir,
        prevResult: { cniVersion: "1.0.0", interfaces: [{ name: ifName, sandbox: a.netns }] },
        ...conf,
      },
    });
    return { netns: a.netns, dataDir, inv };
  }

  test("CNI_IFNAME=lo with a mac: refused (code 7) before anything changes, since lo's 00:00:00:00:00:00 cannot be set back", async () => {
    const b = await bare();
    const before = { lo: linkState(b.netns, "lo"), somaxconn: sysctlIn(b.netns, SOMAXCONN) };
    const run = await execPlugin("tuning", b.inv("ADD", { mac: NEW_MAC, sysctl: { "net.core.somaxconn": "333" } }, "lo"));
    expectCniError(run, { code: 7, msg: 'cannot set mac on "lo": its current address 00:00:00:00:00:00 could not be restored on DEL' });
    expect(linkState(b.netns, "lo").address).toBe(before.lo.address);
    expect(sysctlIn(b.netns, SOMAXCONN)).toBe(before.somaxconn);
    expect(existsSync(b.dataDir) ? readdirSync(b.dataDir) : []).toEqual([]);
    // What tuning can undo on lo is still allowed, and undone.
    expectResult(await execPlugin("tuning", b.inv("ADD", { mtu: 1400 }, "lo")));
    expect(linkState(b.netns, "lo").mtu).toBe(1400);
    expectSuccess(await execPlugin("tuning", b.inv("DEL", { mtu: 1400 }, "lo")), { silent: true });
    expect(linkState(b.netns, "lo").mtu).toBe(before.lo.mtu);
    expect(readdirSync(b.dataDir)).toEqual([]);
  });

  test("DEL never leaves the backup file behind, even when its restore fails (a Go backup of lo's MAC)", async () => {
    const b = await bare();
    mkdirSync(b.dataDir, { recursive: true });
    const file = join(b.dataDir, `${b.inv("DEL", {}).containerID}_lo.json`);
    writeFileSync(file, '{\n "mac": "00:00:00:00:00:00"\n}');
    ipIn(b.netns, "link", "set", "lo", "address", NEW_MAC); // as Go's ADD leaves it
    const run = await execPlugin("tuning", b.inv("DEL", { mac: NEW_MAC }, "lo"));
    expectSuccess(run, { silent: true });
    expect(run.stderr).toContain("failed to restore MAC address");
    expect(existsSync(file)).toBe(false);
  });

  test("a read-only dataDir: ADD reports the failed save (not its cleanup) and undoes the MTU; DEL fails until the file can go", async () => {
    const b = await bare();
    mkdirSync(b.dataDir, { recursive: true });
    const mtu = linkState(b.netns, "eth0").mtu;
    const add = await execPlugin("tuning", { ...b.inv("ADD", { mtu: 1400 }), faultyDirs: [{ dir: b.dataDir, fault: "ro" }] });
    expectCniError(add, { code: 999, msg: /^failed to save file eth0\.json: open ".*": read-only file system \(EROFS\)$/ });
    expect(add.stderr).toBe("");
    expect(linkState(b.netns, "eth0").mtu).toBe(mtu);
    expect(readdirSync(b.dataDir)).toEqual([]);

    // A backup that exists but cannot be removed: DEL restores, then fails; after the disk recovers, DEL removes it.
    expectResult(await execPlugin("tuning", b.inv("ADD", { mtu: 1400 })));
    const del = await execPlugin("tuning", { ...b.inv("DEL", { mtu: 1400 }), faultyDirs: [{ dir: b.dataDir, fault: "ro" }] });
    expectCniError(del, { code: 999, msg: /^failed to remove the backup file: unlink ".*": read-only file system \(EROFS\)$/ });
    expect(linkState(b.netns, "eth0").mtu).toBe(mtu);
    expect(readdirSync(b.dataDir).length).toBe(1);
    expectSuccess(await execPlugin("tuning", b.inv("DEL", { mtu: 1400 })), { silent: true });
    expect(readdirSync(b.dataDir)).toEqual([]);
  });

  test("a full dataDir: ADD reports the failed write (not its cleanup) and undoes the MTU", async () => {
    const b = await bare();
    mkdirSync(b.dataDir, { recursive: true });
    const mtu = linkState(b.netns, "eth0").mtu;
    const add = await execPlugin("tuning", { ...b.inv("ADD", { mtu: 1400 }), faultyDirs: [{ dir: b.dataDir, fault: "full" }] });
    expectCniError(add, { code: 999, msg: /^failed to save file eth0\.json: write .*: no space left on device \(ENOSPC\)$/ });
    expect(add.stderr).toBe("");
    expect(linkState(b.netns, "eth0").mtu).toBe(mtu);
  });

  test("a dataDir with a NUL byte is code 7 naming the field, for every command", async () => {
    const b = await bare();
    for (const command of ["ADD", "DEL", "CHECK", "GC"]) {
      expectCniError(await execPlugin("tuning", b.inv(command, { cniVersion: "1.1.0", dataDir: "/run/cni/tu\u0000ning", mtu: 1400 })), {
        code: 7,
        msg: "invalid dataDir: a path cannot contain a NUL byte",
      });
    }
  });

  test("GC removes this network's backup files of attachments not in cni.dev/valid-attachments, nothing else", async () => {
    const dataDir = join(makeTempDir("tuning-gc-"), "backups");
    const nsA = await createContainerNetns();
    const nsB = await createContainerNetns();
    let somaxconn = 440;
    const conf = (name: string, ns: string, extra: Record<string, unknown> = {}) => ({
      cniVersion: "1.1.0",
      name,
      type: "tuning",
      dataDir,
      sysctl: { "net.core.somaxconn": String(++somaxconn) }, // a change each time: each ADD writes a backup
      prevResult: { cniVersion: "1.1.0", interfaces: [{ name: "lo", sandbox: ns }] },
      ...extra,
    });
    const add = async (cid: string, name: string, ns: string) =>
      expectResult(await execPlugin("tuning", { command: "ADD", containerID: cid, netns: ns, ifName: "lo", config: conf(name, ns) }));
    await add("live", "gcnet", nsA.path);
    await add("stale", "gcnet", nsB.path);
    await add("other", "gcother", nsB.path);
    writeFileSync(join(dataDir, "gofile_eth0.json"), '{\n "mtu": 1500\n}');
    const gc = (lists: Record<string, unknown>) => execPlugin("tuning", { command: "GC", config: conf("gcnet", nsA.path, lists) });
    expectSuccess(await gc({ "cni.dev/valid-attachments": "not a list" }), { silent: true }); // malformed: collects nothing
    expect(readdirSync(dataDir).sort()).toEqual(["gofile_eth0.json", "live_lo.json", "other_lo.json", "stale_lo.json"]);
    const live = { containerID: "live", ifname: "lo" };
    expectSuccess(await gc(bothGcKeys([live, { containerID: "stale", ifname: "lo" }], [])), { silent: true }); // the newer key wins
    expect(readdirSync(dataDir).sort()).toEqual(["gofile_eth0.json", "live_lo.json", "other_lo.json", "stale_lo.json"]);
    expectSuccess(await gc(olderGcKey([live])), { silent: true });
    expect(readdirSync(dataDir).sort()).toEqual(["gofile_eth0.json", "live_lo.json", "other_lo.json"]);
  });
});

describe.skipIf(!sandboxed() || !hasGoPlugin("tuning"))("tuning interop with the Go reference", () => {
  useFixtureCleanup();
  const tuning = { sysctl: { "net.core.somaxconn": "512" }, mac: NEW_MAC, promisc: true, mtu: 1400, allmulti: true };

  async function ptpOnly(): Promise<Attachment> {
    const a = await attach("1.0.0", {});
    a.list.plugins[1] = { type: "tuning", dataDir: a.tuningDataDir, ...tuning };
    return a;
  }

  for (const [adder, deleter] of [
    ["Go", "ours"],
    ["ours", "Go"],
  ] as const) {
    test(`${adder} ADD → ${deleter} CHECK + DEL restores the link attributes and removes the backup file`, async () => {
      const a = await ptpOnly();
      const ptpResult = a.runner.calls[0]!.run.json as Record<string, any>;
      const ptpMac = (ptpResult.interfaces as { name: string; mac: string }[]).find((i) => i.name === "eth0")!.mac;
      const conf = a.runner.buildPluginConfig(a.list, a.list.plugins[1]!, ptpResult, a.rt);
      const inv = (command: string, config: unknown): PluginInvocation => ({ command, containerID: a.rt.containerID, netns: a.netns, ifName: "eth0", config });
      const addRun = adder === "Go" ? execGoPlugin : execPlugin;
      const other = deleter === "Go" ? execGoPlugin : execPlugin;
      const out = expectResult(await addRun("tuning", inv("ADD", conf)));
      expect(linkState(a.netns, "eth0").address).toBe(NEW_MAC);
      const file = join(a.tuningDataDir, `${a.rt.containerID}_eth0.json`);
      expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({ mac: ptpMac, promisc: false, mtu: 1500, allmulti: false });
      const withPrev = { ...conf, prevResult: out };
      expectSuccess(await other("tuning", inv("CHECK", withPrev)), { silent: true });
      expectSuccess(await other("tuning", inv("DEL", withPrev)), { silent: true });
      const st = linkState(a.netns, "eth0");
      expect([st.address, st.mtu]).toEqual([ptpMac, 1500]);
      expect(st.flags).not.toContain("PROMISC");
      expect(st.flags).not.toContain("ALLMULTI");
      expect(existsSync(file)).toBe(false);
      await a.runner.del(a.list, a.rt);
    });
  }
});
