import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { backupPath, formatBackup, parseBackup, readBackup, writeBackup } from "./backup.ts";

describe("backup file format (upstream MarshalIndent with one space)", () => {
  test("fields in upstream order, only those present", () => {
    expect(formatBackup({ mtu: 1400, mac: "b2:6a:00:00:00:01", promisc: false })).toBe('{\n "mac": "b2:6a:00:00:00:01",\n "promisc": false,\n "mtu": 1400\n}');
    expect(formatBackup({ allmulti: true, txQLen: 1000 })).toBe('{\n "allmulti": true,\n "txQLen": 1000\n}');
    expect(formatBackup({})).toBe("{}");
  });
  test("the sysctl extension comes last, nested with one more space", () => {
    expect(formatBackup({ mtu: 1500, sysctlRestore: [["/proc/sys/net/core/somaxconn", "4096"]] })).toBe(
      '{\n "mtu": 1500,\n "sysctlRestore": {\n  "/proc/sys/net/core/somaxconn": "4096"\n }\n}',
    );
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
