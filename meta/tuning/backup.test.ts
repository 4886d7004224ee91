import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { backupPath, formatBackup, parseBackup, readBackup, removeBackup, staleBackups, writeBackup } from "./backup.ts";

describe("backup file format (upstream MarshalIndent with one space)", () => {
  test("fields in upstream order, only those present", () => {
    expect(formatBackup({ mtu: 1400, mac: "b2:6a:00:00:00:01", promisc: false })).toBe('{\n "mac": "b2:6a:00:00:00:01",\n "promisc": false,\n "mtu": 1400\n}');
    expect(formatBackup({ allmulti: true, txQLen: 1000 })).toBe('{\n "allmulti": true,\n "txQLen": 1000\n}');
    expect(formatBackup({})).toBe("{}");
  });
  test("the sysctl extension comes after the link attributes, nested with one more space", () => {
    expect(formatBackup({ mtu: 1500, sysctlRestore: [["/proc/sys/net/core/somaxconn", "4096"]] })).toBe(
      '{\n "mtu": 1500,\n "sysctlRestore": {\n  "/proc/sys/net/core/somaxconn": "4096"\n }\n}',
    );
  });
  test("the network extension comes after sysctlRestore", () => {
    expect(formatBackup({ mtu: 1500, network: "net1" })).toBe('{\n "mtu": 1500,\n "network": "net1"\n}');
    expect(parseBackup('{"mtu": 1500, "network": "net1"}')).toEqual({ mtu: 1500, network: "net1" });
  });
  test("parse round-trips and tolerates Go's case-insensitive keys and junk", () => {
    const b = { mac: "aa:bb:cc:dd:ee:ff", promisc: true, mtu: 9000, allmulti: false, txQLen: 0, sysctlRestore: [["/proc/sys/net/a", "1"]] as [string, string][] };
    expect(parseBackup(formatBackup(b))).toEqual(b);
    expect(parseBackup('{"MTU": 1400, "Mac": "aa:bb:cc:dd:ee:ff"}')).toEqual({ mtu: 1400, mac: "aa:bb:cc:dd:ee:ff" });
    expect(parseBackup("not json")).toBeUndefined();
    expect(parseBackup('{"sysctlRestore": {"/proc/sys/kernel/x": "1", "/proc/sys/net/../../kernel": "1"}}')).toEqual({});
  });
  test("write creates the dir (0700: searchable by its owner only) and file (0600) at <dataDir>/<cid>_<if>.json; read returns undefined when absent", () => {
    const base = mkdtempSync(join(tmpdir(), "tuning-bk-"));
    try {
      const dir = join(base, "sub");
      const path = backupPath(dir, "cid1", "eth0");
      expect(path).toBe(join(dir, "cid1_eth0.json"));
      expect(readBackup(path)).toBeUndefined();
      writeBackup(path, dir, { mtu: 1400 });
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(readBackup(path)).toEqual({ mtu: 1400 });
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});

describe("removeBackup and staleBackups (GC)", () => {
  test("removeBackup: absent is fine, present goes", () => {
    const dir = mkdtempSync(join(tmpdir(), "tuning-bk-"));
    try {
      const path = backupPath(dir, "c", "eth0");
      removeBackup(path);
      removeBackup(join(dir, "missing-dir", "c_eth0.json"));
      writeBackup(path, dir, { mtu: 1400 });
      removeBackup(path);
      expect(readBackup(path)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("only this network's files of attachments not in the valid list; Go's files, other networks', links and junk stay", () => {
    const dir = mkdtempSync(join(tmpdir(), "tuning-gc-"));
    try {
      writeBackup(backupPath(dir, "live", "eth0"), dir, { mtu: 1400, network: "net1" });
      writeBackup(backupPath(dir, "gone", "eth0"), dir, { mtu: 1400, network: "net1" });
      writeBackup(backupPath(dir, "live", "eth1"), dir, { mtu: 1400, network: "net1" });
      writeBackup(backupPath(dir, "other", "eth0"), dir, { mtu: 1400, network: "net2" });
      writeBackup(backupPath(dir, "go", "eth0"), dir, { mtu: 1400 });
      writeFileSync(join(dir, "junk.json"), "not json");
      mkdirSync(join(dir, "d.json"));
      symlinkSync(backupPath(dir, "gone", "eth0"), join(dir, "link_eth0.json"));
      const stale = staleBackups(dir, "net1", [{ containerID: "live", ifName: "eth0" }]);
      expect(stale.sort()).toEqual([backupPath(dir, "gone", "eth0"), backupPath(dir, "live", "eth1")]);
      expect(staleBackups(join(dir, "missing"), "net1", [])).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
