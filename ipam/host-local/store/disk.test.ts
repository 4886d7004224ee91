/** The disk store in a temp dir: on-disk bytes and modes, Go compatibility, and the owner index. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CniError } from "../../../shared/cni/errors.ts";
import { FileLock } from "../../../shared/sys/flock.ts";
import { formatIP, parseIP, type IPAddr } from "../../../shared/ip/addr.ts";
import { DiskStore, type DiskStoreOptions } from "./disk.ts";
import { INDEX_NAME } from "./index-file.ts";

const NET = "testnet";
let root: string;
let dir: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "hl-disk-"));
  dir = join(root, NET);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function ip(s: string): IPAddr {
  return parseIP(s)!;
}

/** Runs `fn` in one lock session of a fresh store, like one plugin invocation. */
function session<T>(fn: (s: DiskStore) => T, opts: DiskStoreOptions = {}, forAllocation = false): { value: T; store: DiskStore } {
  const store = DiskStore.open(NET, root, opts);
  try {
    store.lock(forAllocation);
    try {
      return { value: fn(store), store };
    } finally {
      store.unlock();
    }
  } finally {
    store.close();
  }
}

/** Writes a reservation exactly as the Go plugin does (no index update). */
function goReserve(name: string, id: string, ifname: string): void {
  writeFileSync(join(dir, name), `${id}\r\n${ifname}`, { mode: 0o600, flag: "wx" });
}

function mode(path: string): number {
  return statSync(path).mode & 0o777;
}

/** A clock 10 s ahead, so that files created now already count as "old" (stable). */
const later: DiskStoreOptions = { nowMs: () => Date.now() + 10_000 };

/** Our reservations of a (10.0.0.2) and b (10.0.0.3), then a tick of the coarse timestamp clock, as real time between invocations gives. */
function reserveAThenB(): void {
  session((s) => {
    s.reserve("a", "eth0", ip("10.0.0.2"), "0");
    s.reserve("b", "eth0", ip("10.0.0.3"), "0");
  }, later);
  Bun.sleepSync(20);
}

describe("DiskStore layout", () => {
  test("store creates the network dir (0755) and the lock file (0750), like upstream", () => {
    const store = DiskStore.open(NET, root);
    store.close();
    expect(statSync(dir).isDirectory()).toBe(true);
    expect(mode(dir)).toBe(0o755 & ~process.umask());
    expect(mode(join(dir, "lock"))).toBe(0o750 & ~process.umask());
    expect(readFileSync(join(dir, "lock")).length).toBe(0);
  });

  test("store writes `id\\r\\nifname` without newline, mode 0600, and last_reserved_ip.<i>", () => {
    const { value } = session((s) => s.reserve("  c1 ", "eth0", ip("10.1.2.3"), "2"));
    expect(value).toBe(true);
    expect(readFileSync(join(dir, "10.1.2.3"), "latin1")).toBe("c1\r\neth0");
    expect(mode(join(dir, "10.1.2.3"))).toBe(0o600);
    expect(readFileSync(join(dir, "last_reserved_ip.2"), "latin1")).toBe("10.1.2.3");
    expect(mode(join(dir, "last_reserved_ip.2"))).toBe(0o600);
    session((s) => s.reserve("c2", "eth0", ip("fd00::2"), "1"));
    expect(readFileSync(join(dir, "fd00::2"), "latin1")).toBe("c2\r\neth0");
  });

  test("store reservations are exclusive, including against files it has never seen", () => {
    session((s) => expect(s.reserve("c1", "eth0", ip("10.0.0.2"), "0")).toBe(true));
    session((s) => expect(s.reserve("c2", "eth0", ip("10.0.0.2"), "0")).toBe(false));
    goReserve("10.0.0.3", "go", "eth0");
    session((s) => expect(s.reserve("c2", "eth0", ip("10.0.0.3"), "0")).toBe(false));
    expect(readFileSync(join(dir, "10.0.0.3"), "latin1")).toBe("go\r\neth0");
  });

  test("store reads last_reserved_ip like Go (no trimming; garbage means none)", () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "last_reserved_ip.0"), "10.0.0.7");
    writeFileSync(join(dir, "last_reserved_ip.1"), "10.0.0.7\n");
    writeFileSync(join(dir, "last_reserved_ip.2"), "garbage");
    session((s) => {
      expect(formatIP(s.lastReservedIP("0")!)).toBe("10.0.0.7");
      expect(s.lastReservedIP("1")).toBeNull();
      expect(s.lastReservedIP("2")).toBeNull();
      expect(s.lastReservedIP("3")).toBeNull();
    });
  });

  test("store removes the reservation again when last_reserved_ip cannot be written", () => {
    mkdirSync(join(dir, "last_reserved_ip.0"), { recursive: true });
    expect(() => session((s) => s.reserve("c1", "eth0", ip("10.0.0.2"), "0"))).toThrow(/last_reserved_ip\.0/);
    expect(readdirSync(dir)).not.toContain("10.0.0.2");
  });

  test("store refuses unsafe network names and a dataDir that is a file", () => {
    expect(() => DiskStore.open("../escape", root)).toThrow("invalid characters found in network name");
    expect(() => DiskStore.open("a/b", root)).toThrow(CniError);
    writeFileSync(join(root, "file"), "");
    expect(() => DiskStore.open(NET, join(root, "file"))).toThrow(/not a directory/);
    expect(DiskStore.openExisting("missing", root)).toBeNull();
  });

  test("store lock is the flock on <dir>/lock that the Go plugin takes", () => {
    const store = DiskStore.open(NET, root);
    const other = FileLock.open(join(dir, "lock"));
    try {
      store.lock();
      expect(other.tryLock()).toBe(false);
      store.unlock();
      expect(other.tryLock()).toBe(true);
      other.unlock();
    } finally {
      other.close();
      store.close();
    }
  });
});

describe("DiskStore owners", () => {
  test("store finds and releases by (id, ifname), per interface", () => {
    session((s) => {
      s.reserve("c1", "eth0", ip("10.0.0.2"), "0");
      s.reserve("c1", "eth1", ip("10.0.0.3"), "0");
      s.reserve("c1", "eth0", ip("fd00::2"), "1");
    });
    session((s) => {
      expect(s.getByID("c1", "eth0").map(formatIP).sort()).toEqual(["10.0.0.2", "fd00::2"]);
      expect(s.findByID("c1", "eth1")).toBe(true);
      expect(s.findByID("c2", "eth0")).toBe(false);
      s.releaseByID("c1", "eth0");
    });
    expect(readdirSync(dir).filter((n) => parseIP(n) !== null)).toEqual(["10.0.0.3"]);
  });

  test("store honours legacy id-only files and whitespace around contents", () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "10.0.0.5"), "  legacy\n");
    writeFileSync(join(dir, "10.0.0.6"), "\n dummy\r\neth0 \n");
    session((s) => {
      expect(s.getByID("legacy", "eth0").map(formatIP)).toEqual(["10.0.0.5"]);
      expect(s.findByID("legacy", "eth9")).toBe(true);
      expect(s.findByID("dummy", "eth0")).toBe(true);
      s.releaseByID("dummy", "eth0");
      s.releaseByID("legacy", "eth0");
    });
    expect(readdirSync(dir).filter((n) => parseIP(n) !== null)).toEqual([]);
  });

  test("store releases legacy files only when no current file matched", () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "10.0.0.5"), "c1");
    goReserve("10.0.0.6", "c1", "eth0");
    session((s) => s.releaseByID("c1", "eth0"));
    expect(readdirSync(dir).filter((n) => parseIP(n) !== null)).toEqual(["10.0.0.5"]);
    session((s) => s.releaseByID("c1", "eth0"));
    expect(readdirSync(dir).filter((n) => parseIP(n) !== null)).toEqual([]);
  });

  test("store honours reservation files in subdirectories like upstream's recursive walk", () => {
    mkdirSync(join(dir, "sub"), { recursive: true });
    writeFileSync(join(dir, "sub", "10.0.0.9"), "c9\r\neth0");
    session((s) => expect(s.getByID("c9", "eth0").map(formatIP)).toEqual(["10.0.0.9"]));
    session((s) => s.releaseByID("c9", "eth0"));
    expect(readdirSync(join(dir, "sub"))).toEqual([]);
  });

  test("store lists reservations with empty and unreadable ones, and releases only unchanged ones", () => {
    session((s) => s.reserve("c1", "eth0", ip("10.0.0.2"), "0"));
    writeFileSync(join(dir, "10.0.0.3"), "");
    const fifo = Bun.spawnSync(["mkfifo", join(dir, "10.0.0.4")]);
    expect(fifo.exitCode).toBe(0);
    writeFileSync(join(dir, "not-an-ip"), "c1\r\neth0");
    session((s) => {
      const list = s.reservations().map((r) => [formatIP(r.ip), r.key]);
      expect(list.sort()).toEqual([
        ["10.0.0.2", "c1\r\neth0"],
        ["10.0.0.3", ""],
        ["10.0.0.4", null],
      ]);
      expect(s.releaseReservation({ ip: ip("10.0.0.2"), key: "someone-else\r\neth0" })).toBe(false);
      expect(s.releaseReservation({ ip: ip("10.0.0.3"), key: "" })).toBe(true);
      expect(s.releaseReservation({ ip: ip("10.0.0.4"), key: null })).toBe(true);
    });
    expect(readdirSync(dir).sort()).toEqual([".host-local-owners", "10.0.0.2", "last_reserved_ip.0", "lock", "not-an-ip"]);
  });
});

describe("DiskStore owner index", () => {
  test("index: an unchanged directory is served from the index without reading reservation files", () => {
    session((s) => {
      for (let i = 2; i < 50; i++) s.reserve(`c${i}`, "eth0", ip(`10.0.0.${i}`), "0");
    });
    expect(readFileSync(join(dir, INDEX_NAME), "latin1").startsWith("#host-local owner index v2 nested=0 stamp=")).toBe(true);
    const { value, store } = session((s) => s.findByID("c17", "eth0"));
    expect(value).toBe(true);
    expect(store.stats).toEqual({ trustedLoads: 1, scans: 0, filesRead: 0 });
  });

  test("index: files created by Go are found, reading only the new files", () => {
    session((s) => {
      for (let i = 2; i < 20; i++) s.reserve(`c${i}`, "eth0", ip(`10.0.0.${i}`), "0");
    }, later);
    goReserve("10.0.0.100", "go-container", "eth0");
    const { value, store } = session((s) => s.getByID("go-container", "eth0").map(formatIP), later);
    expect(value).toEqual(["10.0.0.100"]);
    expect(store.stats).toMatchObject({ trustedLoads: 0, scans: 1, filesRead: 1 });
    // And the refreshed index is trusted again.
    expect(session((s) => s.findByID("go-container", "eth0"), later).store.stats.trustedLoads).toBe(1);
  });

  test("index: files removed by Go disappear; a name re-created for another owner is re-read", () => {
    reserveAThenB();
    unlinkSync(join(dir, "10.0.0.2")); // Go DEL of a
    goReserve("10.0.0.2", "z", "eth0"); // Go ADD of z gets the same address (same content length)
    const { value, store } = session((s) => [s.findByID("a", "eth0"), s.getByID("z", "eth0").map(formatIP)], later);
    expect(value).toEqual([false, ["10.0.0.2"]]);
    expect(store.stats.filesRead).toBe(1);
    session((s) => s.releaseByID("z", "eth0"), later);
    expect(readdirSync(dir)).not.toContain("10.0.0.2");
  });

  test("index: recently created files are re-read after a foreign change (no same-tick replacement window)", () => {
    session((s) => {
      s.reserve("a", "eth0", ip("10.0.0.2"), "0");
      s.reserve("b", "eth0", ip("10.0.0.3"), "0");
    });
    goReserve("10.0.0.4", "go", "eth0");
    const { store } = session((s) => s.findByID("go", "eth0"));
    expect(store.stats.filesRead).toBe(3);
  });

  test("index: a content change behind the index's back is caught before anything is unlinked", () => {
    session((s) => s.reserve("a", "eth0", ip("10.0.0.2"), "0"), later);
    // Rewrite in place: the directory's mtime does not change, so the index is still trusted.
    writeFileSync(join(dir, "10.0.0.2"), "b\r\neth0");
    session((s) => s.releaseByID("a", "eth0"), later);
    expect(readFileSync(join(dir, "10.0.0.2"), "latin1")).toBe("b\r\neth0");
    session((s) => s.releaseByID("b", "eth0"), later);
    expect(readdirSync(dir)).not.toContain("10.0.0.2");
  });

  test("index: a corrupt or foreign index is ignored", () => {
    session((s) => s.reserve("a", "eth0", ip("10.0.0.2"), "0"));
    for (const garbage of ["", "#host-local owner index v2 nested=0 stamp=123\n{", "nonsense", '{"entries":[]}']) {
      writeFileSync(join(dir, INDEX_NAME), garbage);
      const { value, store } = session((s) => s.findByID("a", "eth0"));
      expect(value).toBe(true);
      expect(store.stats.scans).toBe(1);
    }
  });

  test("index: a directory with subdirectories is always rescanned", () => {
    session((s) => s.reserve("a", "eth0", ip("10.0.0.2"), "0"));
    mkdirSync(join(dir, "sub"));
    session((s) => s.findByID("a", "eth0"));
    writeFileSync(join(dir, "sub", "10.0.0.9"), "planted\r\neth0"); // does not touch the top dir's mtime
    const { value, store } = session((s) => s.findByID("planted", "eth0"));
    expect(value).toBe(true);
    expect(store.stats.scans).toBe(1);
  });

  test("index: without the index the store reads every file, as upstream", () => {
    session((s) => {
      for (let i = 2; i < 12; i++) s.reserve(`c${i}`, "eth0", ip(`10.0.0.${i}`), "0");
    });
    const { value, store } = session((s) => s.findByID("c5", "eth0"), { ownerIndex: false });
    expect(value).toBe(true);
    expect(store.stats).toEqual({ trustedLoads: 0, scans: 1, filesRead: 10 });
  });

  test("index: a new reservation in a trusted session is appended, and the index stays trusted", () => {
    session((s) => {
      for (let i = 2; i < 6; i++) s.reserve(`c${i}`, "eth0", ip(`10.0.0.${i}`), "0");
    });
    const before = readFileSync(join(dir, INDEX_NAME), "utf8");
    const inodeBefore = statSync(join(dir, INDEX_NAME)).ino;
    const added = session((s) => {
      expect(s.getByID("c9", "eth0")).toEqual([]);
      return s.reserve("c9", "eth0", ip("10.0.0.9"), "0");
    });
    expect(added.value).toBe(true);
    expect(added.store.stats).toEqual({ trustedLoads: 1, scans: 0, filesRead: 0 });
    const after = readFileSync(join(dir, INDEX_NAME), "utf8");
    expect(statSync(join(dir, INDEX_NAME)).ino).toBe(inodeBefore); // appended in place, not replaced
    expect(after.slice(after.indexOf("\n"))).toBe(`${before.slice(before.indexOf("\n"))}${after.slice(before.length)}`);
    expect(after.slice(before.length)).toStartWith('"10.0.0.9"\t');
    const next = session((s) => [s.getByID("c9", "eth0").map(formatIP), s.findByID("c3", "eth0")]);
    expect(next.value).toEqual([["10.0.0.9"], true]);
    expect(next.store.stats).toEqual({ trustedLoads: 1, scans: 0, filesRead: 0 });
    // A release rewrites the index without the line; still trusted afterwards.
    session((s) => s.releaseByID("c9", "eth0"));
    const last = session((s) => s.findByID("c9", "eth0"));
    expect(last.value).toBe(false);
    expect(last.store.stats.trustedLoads).toBe(1);
    expect(readFileSync(join(dir, INDEX_NAME), "utf8")).not.toContain('"10.0.0.9"');
  });

  test("index: a malformed line in a trusted index discards it and the directory is scanned", () => {
    session((s) => {
      s.reserve("a", "eth0", ip("10.0.0.2"), "0");
      s.reserve("b", "eth0", ip("10.0.0.3"), "0");
    });
    // Damage b's line in place (same length, so only the content changes; the directory does not).
    const text = readFileSync(join(dir, INDEX_NAME), "utf8");
    const at = text.indexOf('"10.0.0.3"');
    writeFileSync(join(dir, INDEX_NAME), `${text.slice(0, at)}X${text.slice(at + 1)}`);
    const { value, store } = session((s) => s.getByID("b", "eth0").map(formatIP));
    expect(value).toEqual(["10.0.0.3"]);
    expect(store.stats.scans).toBe(1);
    expect(session((s) => s.findByID("b", "eth0")).store.stats.trustedLoads).toBe(1);
  });

  test("index: the index file can never match an owner key", () => {
    session((s) => s.reserve("a", "eth0", ip("10.0.0.2"), "0"));
    const text = readFileSync(join(dir, INDEX_NAME), "utf8").trim();
    expect(text.startsWith("#")).toBe(true);
    expect(/^[a-zA-Z0-9]/.test(text)).toBe(false);
  });
});

describe("DiskStore allocation sessions (ADD)", () => {
  /** One lock session as an ADD's allocator takes it. */
  const allocation = <T>(fn: (s: DiskStore) => T) => session(fn, later, true);

  test("allocation: after a foreign change the directory is verified by its listing, reading only new files", () => {
    session((s) => {
      for (let i = 2; i < 30; i++) s.reserve(`c${i}`, "eth0", ip(`10.0.0.${i}`), "0");
    }, later);
    goReserve("10.0.0.100", "go", "eth0");
    unlinkSync(join(dir, "10.0.0.7")); // Go DEL of c7
    const { value, store } = allocation((s) => [
      s.getByID("go", "eth0").map(formatIP),
      s.getByID("c7", "eth0"),
      s.reserve("c7", "eth1", ip("10.0.0.7"), "0"), // free again: the picture lost it
      s.reserve("x", "eth0", ip("10.0.0.8"), "0"),
    ]);
    expect(value).toEqual([["10.0.0.100"], [], true, false]);
    expect(store.stats).toEqual({ trustedLoads: 0, scans: 1, filesRead: 1 });
  });

  test("allocation: a listing-verified picture is saved unstamped; the next other session verifies by stat and stamps", () => {
    session((s) => s.reserve("a", "eth0", ip("10.0.0.2"), "0"), later);
    goReserve("10.0.0.3", "go", "eth0");
    allocation((s) => s.reserve("b", "eth0", ip("10.0.0.4"), "0"));
    expect(readFileSync(join(dir, INDEX_NAME), "latin1")).toStartWith("#host-local owner index v2 nested=0 stamp=00000000000000000000\n");
    const again = allocation((s) => s.getByID("b", "eth0").map(formatIP));
    expect(again.value).toEqual(["10.0.0.4"]);
    expect(again.store.stats).toEqual({ trustedLoads: 0, scans: 1, filesRead: 0 });
    const check = session((s) => [s.findByID("a", "eth0"), s.findByID("go", "eth0"), s.findByID("b", "eth0")], later);
    expect(check.value).toEqual([true, true, true]);
    expect(check.store.stats).toEqual({ trustedLoads: 0, scans: 1, filesRead: 0 });
    expect(session((s) => s.findByID("b", "eth0"), later).store.stats.trustedLoads).toBe(1);
  });

  test("allocation: a name re-created with a recycled inode keeps its recorded owner until a session verifies by stat", () => {
    reserveAThenB();
    // Go DEL of a, then Go ADD of z at the same address, whose file gets a's inode number (as ext4
    // and xfs may hand it out again): simulated by recording the new file's inode in a's line.
    const before = readFileSync(join(dir, INDEX_NAME), "utf8");
    const oldIno = String(statSync(join(dir, "10.0.0.2")).ino);
    unlinkSync(join(dir, "10.0.0.2"));
    goReserve("10.0.0.2", "z", "eth0");
    const newIno = String(statSync(join(dir, "10.0.0.2")).ino);
    writeFileSync(join(dir, INDEX_NAME), before.replace(`"10.0.0.2"\t${oldIno}\t`, `"10.0.0.2"\t${newIno}\t`));
    // The documented limit: an allocation's duplicate check still sees a there.
    const add = allocation((s) => [s.getByID("z", "eth0"), s.getByID("a", "eth0").map(formatIP)]);
    expect(add.value).toEqual([[], ["10.0.0.2"]]);
    expect(add.store.stats.filesRead).toBe(0);
    // DEL, CHECK and GC verify by stat: the new ctime gives the replacement away.
    const check = session((s) => [s.findByID("z", "eth0"), s.findByID("a", "eth0")], later);
    expect(check.value).toEqual([true, false]);
    expect(check.store.stats.filesRead).toBe(1);
    session((s) => s.releaseByID("z", "eth0"), later);
    expect(readdirSync(dir)).not.toContain("10.0.0.2");
  });

  test("allocation: a torn or foreign index is not used for a listing; every file is read", () => {
    session((s) => s.reserve("a", "eth0", ip("10.0.0.2"), "0"), later);
    const text = readFileSync(join(dir, INDEX_NAME), "utf8");
    writeFileSync(join(dir, INDEX_NAME), `${text}garbage line\n`);
    goReserve("10.0.0.3", "go", "eth0");
    const { value, store } = allocation((s) => s.getByID("a", "eth0").map(formatIP));
    expect(value).toEqual(["10.0.0.2"]);
    expect(store.stats).toEqual({ trustedLoads: 0, scans: 1, filesRead: 2 });
    // Everything was read: the picture is exact and saved stamped.
    expect(session((s) => s.findByID("go", "eth0"), later).store.stats.trustedLoads).toBe(1);
  });
});

describe("DiskStore crash safety (issue 15.5)", () => {
  test("crash: an empty reservation file (Go killed between create and write, #498) is reclaimed under the lock", () => {
    session((s) => s.reserve("c1", "eth0", ip("10.0.0.2"), "0"));
    writeFileSync(join(dir, "10.0.0.3"), ""); // after the index: a foreign change, found by the rescan
    session((s) => expect(s.reserve("c2", "eth0", ip("10.0.0.3"), "0")).toBe(true), later);
    expect(readFileSync(join(dir, "10.0.0.3"), "latin1")).toBe("c2\r\neth0");
    // Not in any picture yet (the store never saw it): the link's EEXIST reclaims it too.
    writeFileSync(join(dir, "10.0.0.4"), "");
    session((s) => expect(s.reserve("c3", "eth0", ip("10.0.0.4"), "0")).toBe(true), { ownerIndex: false });
    expect(readFileSync(join(dir, "10.0.0.4"), "latin1")).toBe("c3\r\neth0");
  });

  test("crash: only empty regular files are reclaimed; whitespace, FIFOs and held addresses are not", () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "10.0.0.2"), " \n");
    expect(Bun.spawnSync(["mkfifo", join(dir, "10.0.0.3")]).exitCode).toBe(0);
    goReserve("10.0.0.4", "go", "eth0");
    session((s) => {
      for (const a of ["10.0.0.2", "10.0.0.3", "10.0.0.4"]) expect(s.reserve("c1", "eth0", ip(a), "0")).toBe(false);
    });
    expect(readFileSync(join(dir, "10.0.0.2"), "latin1")).toBe(" \n");
    expect(readFileSync(join(dir, "10.0.0.4"), "latin1")).toBe("go\r\neth0");
  });

  test("crash: a reservation appears with its content (link of a filled scratch file); a stale scratch file is removed", () => {
    mkdirSync(dir, { recursive: true });
    // Left by a process killed after writing its scratch file, before link(2).
    writeFileSync(join(dir, ".host-local.tmp"), "dead\r\neth0");
    session((s) => {
      expect(s.getByID("dead", "eth0")).toEqual([]); // never taken for a reservation
      expect(s.reservations()).toEqual([]);
    });
    expect(readdirSync(dir)).not.toContain(".host-local.tmp"); // the scan removed it
    writeFileSync(join(dir, ".host-local.tmp"), "dead\r\neth0");
    session((s) => expect(s.reserve("c1", "eth0", ip("10.0.0.2"), "0")).toBe(true), { ownerIndex: false });
    const st = statSync(join(dir, "10.0.0.2"));
    expect(st.nlink).toBe(1);
    expect(mode(join(dir, "10.0.0.2"))).toBe(0o600);
    expect(readdirSync(dir).sort()).toEqual([INDEX_NAME, "10.0.0.2", "last_reserved_ip.0", "lock"]);
  });
});

describe("DiskStore never follows symbolic links (issue 15.4)", () => {
  let outside: string;
  beforeEach(() => {
    outside = join(root, "outside");
    writeFileSync(outside, "precious");
    mkdirSync(dir, { recursive: true });
  });

  test("links: last_reserved_ip.<n> planted as a link is replaced, its target untouched", () => {
    symlinkSync(outside, join(dir, "last_reserved_ip.0"));
    session((s) => {
      expect(s.lastReservedIP("0")).toBeNull();
      expect(s.reserve("c1", "eth0", ip("10.0.0.2"), "0")).toBe(true);
    });
    expect(readFileSync(outside, "latin1")).toBe("precious");
    expect(lstatSync(join(dir, "last_reserved_ip.0")).isSymbolicLink()).toBe(false);
    expect(readFileSync(join(dir, "last_reserved_ip.0"), "latin1")).toBe("10.0.0.2");
  });

  test("links: a link at a reservation name keeps its address and is never read or written through", () => {
    writeFileSync(outside, "c1\r\neth0"); // would match the owner if followed
    symlinkSync(outside, join(dir, "10.0.0.2"));
    session((s) => {
      expect(s.reserve("c1", "eth0", ip("10.0.0.2"), "0")).toBe(false);
      expect(s.getByID("c1", "eth0")).toEqual([]);
      s.releaseByID("c1", "eth0");
    });
    expect(lstatSync(join(dir, "10.0.0.2")).isSymbolicLink()).toBe(true);
    expect(readFileSync(outside, "latin1")).toBe("c1\r\neth0");
  });

  test("links: the scratch file, the owner index and its temp file planted as links are replaced, not written through", () => {
    for (const name of [".host-local.tmp", INDEX_NAME, `${INDEX_NAME}.tmp`]) {
      const target = join(root, `target-${name}`);
      writeFileSync(target, "precious");
      symlinkSync(target, join(dir, name));
    }
    session((s) => expect(s.reserve("c1", "eth0", ip("10.0.0.2"), "0")).toBe(true));
    session((s) => expect(s.getByID("c1", "eth0").map(formatIP)).toEqual(["10.0.0.2"]));
    for (const name of [".host-local.tmp", INDEX_NAME, `${INDEX_NAME}.tmp`]) {
      expect(readFileSync(join(root, `target-${name}`), "latin1")).toBe("precious");
    }
    expect(lstatSync(join(dir, INDEX_NAME)).isFile()).toBe(true);
  });

  test("links: a lock file planted as a link is refused (ELOOP), nothing created through it", () => {
    const target = join(root, "lock-target");
    symlinkSync(target, join(dir, "lock"));
    expect(() => DiskStore.open(NET, root)).toThrow(/open .*lock: too many levels of symbolic links/);
    expect(existsSync(target)).toBe(false);
  });
});
