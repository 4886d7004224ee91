/**
 * host-local driven through its handlers against the disk store in a temp dir (upstream
 * host_local_test.go scenarios, a sequence observed with the Go 1.1.1 binary, and the
 * beyond-upstream verbs STATUS and GC).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CniError } from "../../shared/cni/errors.ts";
import type { CmdArgs, Command, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { parseIP } from "../../shared/ip/addr.ts";
import { hostLocalPlugin } from "./host-local.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "hl-plugin-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

interface Call {
  id?: string;
  ifName?: string;
  args?: string;
}

function cmdArgs(command: Command, config: Record<string, unknown>, call: Call = {}): CmdArgs {
  return withDelegate({
    command,
    containerID: call.id ?? "dummy",
    netns: "/proc/self/ns/net",
    ifName: call.ifName ?? "eth0",
    args: call.args ?? "",
    path: "/opt/cni/bin",
    stdinData: new TextEncoder().encode(JSON.stringify(config)),
    config,
    cniVersion: typeof config["cniVersion"] === "string" ? config["cniVersion"] : "0.1.0",
    env: {},
    stderr: () => {},
    scope: PROCESS_SCOPE,
  });
}

function add(config: Record<string, unknown>, call: Call = {}): Result {
  return hostLocalPlugin.add(cmdArgs("ADD", config, call)) as Result;
}
function del(config: Record<string, unknown>, call: Call = {}): void {
  hostLocalPlugin.del(cmdArgs("DEL", config, call));
}
function check(config: Record<string, unknown>, call: Call = {}): void {
  hostLocalPlugin.check!(cmdArgs("CHECK", config, call));
}
function status(config: Record<string, unknown>): void {
  hostLocalPlugin.status!(cmdArgs("STATUS", config, { id: "", ifName: "" }));
}
function gc(config: Record<string, unknown>): void {
  hostLocalPlugin.gc!(cmdArgs("GC", config, { id: "", ifName: "" }));
}

function failure(fn: () => unknown): { code: number; msg: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CniError);
    return { code: (err as CniError).code, msg: (err as Error).message };
  }
  throw new Error("expected the call to fail");
}

function conf(ipam: Record<string, unknown>, extra: Record<string, unknown> = {}, cniVersion = "1.1.0"): Record<string, unknown> {
  return { cniVersion, name: "mynet", type: "ipvlan", master: "foo0", ipam: { type: "host-local", dataDir: root, ...ipam }, ...extra };
}

function netDir(name = "mynet"): string {
  return join(root, name);
}

/** Reservation files of a network, name -> exact content. */
function reservations(name = "mynet"): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(netDir(name))) return out;
  for (const f of readdirSync(netDir(name))) {
    if (parseIP(f) !== null) out[f] = readFileSync(join(netDir(name), f), "latin1");
  }
  return out;
}

function addresses(r: Result): string[] {
  return (r.ips ?? []).map((i) => `${i.address} gw ${i.gateway}`);
}

describe("host-local ADD/DEL", () => {
  for (const ver of ALL_VERSIONS) {
    const old = ver === "0.1.0" || ver === "0.2.0";
    test(`[${ver}] allocates and releases addresses with ADD/DEL`, () => {
      const resolv = join(root, "resolv.conf");
      writeFileSync(resolv, "nameserver 192.0.2.3\nsearch example.com\n");
      const ranges = old
        ? [[{ subnet: "10.1.2.0/24" }], [{ subnet: "2001:db8:1::0/64" }]]
        : [[{ subnet: "10.1.2.0/24" }, { subnet: "10.2.2.0/24" }], [{ subnet: "2001:db8:1::0/64" }], [{ subnet: "10.3.0.0/16" }]];
      const c = conf(
        { ranges, resolvConf: resolv, routes: [{ dst: "0.0.0.0/0" }, { dst: "::/0" }, { dst: "192.0.2.0/24", gw: "10.1.2.5" }] },
        {},
        ver,
      );
      const r = add(c);
      const expected = ["10.1.2.2/24 gw 10.1.2.1", "2001:db8:1::2/64 gw 2001:db8:1::1"];
      if (!old) expected.push("10.3.0.2/16 gw 10.3.0.1");
      expect(addresses(r)).toEqual(expected);
      expect(r.routes).toEqual([{ dst: "0.0.0.0/0" }, { dst: "::/0" }, { dst: "192.0.2.0/24", gw: "10.1.2.5" }]);
      expect(r.dns).toEqual({ nameservers: ["192.0.2.3"], search: ["example.com"] });
      expect(r.ips!.every((i) => i.interface === undefined)).toBe(true);

      const files = reservations();
      expect(files["10.1.2.2"]).toBe("dummy\r\neth0");
      expect(files["2001:db8:1::2"]).toBe("dummy\r\neth0");
      expect(readFileSync(join(netDir(), "last_reserved_ip.0"), "latin1")).toBe("10.1.2.2");
      expect(readFileSync(join(netDir(), "last_reserved_ip.1"), "latin1")).toBe("2001:db8:1::2");

      check(c);
      del(c);
      expect(reservations()).toEqual({});
    });
  }

  test("ADD and DEL on specific interfaces of the same container", () => {
    const c = conf({ ranges: [[{ subnet: "10.1.2.0/24" }]] });
    expect(addresses(add(c, { ifName: "eth0" }))).toEqual(["10.1.2.2/24 gw 10.1.2.1"]);
    expect(addresses(add(c, { ifName: "eth1" }))).toEqual(["10.1.2.3/24 gw 10.1.2.1"]);
    expect(reservations()).toEqual({ "10.1.2.2": "dummy\r\neth0", "10.1.2.3": "dummy\r\neth1" });
    del(c, { ifName: "eth1" });
    expect(reservations()).toEqual({ "10.1.2.2": "dummy\r\neth0" });
    check(c, { ifName: "eth0" });
  });

  test("ADD twice for the same attachment fails and leaves one reservation", () => {
    const c = conf({ ranges: [[{ subnet: "10.1.2.0/24" }]] });
    add(c);
    expect(failure(() => add(c))).toEqual({
      code: 999,
      msg: "failed to allocate for range 0: 10.1.2.2 has been allocated to dummy, duplicate allocation is not allowed",
    });
    expect(Object.keys(reservations())).toEqual(["10.1.2.2"]);
  });

  test("DEL releases a legacy (container-ID-only) allocation, and tolerates unknown IDs and repeats", () => {
    const c = conf({ ranges: [[{ subnet: "10.1.2.0/24" }]] });
    mkdirSync(netDir(), { recursive: true });
    writeFileSync(join(netDir(), "10.1.2.9"), "dummy");
    check(c);
    del(c);
    expect(reservations()).toEqual({});
    del(c);
    del(c, { id: "never-added" });
  });

  test("CHECK ignores whitespace in disk files and fails with upstream's message otherwise", () => {
    const c = conf({ ranges: [[{ subnet: "10.1.2.0/24" }]] });
    mkdirSync(netDir(), { recursive: true });
    writeFileSync(join(netDir(), "10.1.2.9"), "   dummy\r\neth0\n");
    check(c);
    expect(failure(() => check(c, { id: "other" }))).toEqual({
      code: 999,
      msg: "host-local: Failed to find address added by container other",
    });
  });

  test("DEL and CHECK fail on an invalid config, like upstream", () => {
    const bad = conf({ ranges: [[{ subnet: "10.1.2.0/24" }], [{ subnet: "10.1.0.0/16" }]] });
    expect(failure(() => del(bad))).toEqual({ code: 7, msg: "range set 0 overlaps with 1" });
    const tooMany = conf({ ranges: [[{ subnet: "10.1.2.0/24" }], [{ subnet: "10.2.0.0/16" }]] }, {}, "0.2.0");
    expect(failure(() => del(tooMany)).msg).toBe("CNI version 0.2.0 does not support more than 1 address per family");
    expect(failure(() => add(tooMany)).msg).toBe("CNI version 0.2.0 does not support more than 1 address per family");
  });
});

describe("host-local requested addresses", () => {
  const ranges = [[{ subnet: "10.1.2.0/24" }], [{ subnet: "10.2.2.0/24" }], [{ subnet: "2001:db8:1::/64" }]];

  test("ADD allocates a custom IP requested through CNI_ARGS, args.cni.ips or runtimeConfig.ips", () => {
    expect(addresses(add(conf({ ranges: [[{ subnet: "10.1.2.0/24" }]] }), { id: "a", args: "IP=10.1.2.88" }))).toEqual([
      "10.1.2.88/24 gw 10.1.2.1",
    ]);
    expect(
      addresses(add(conf({ ranges: [[{ subnet: "10.1.2.0/24" }]] }, { args: { cni: { ips: ["10.1.2.89/24"] } } }), { id: "b" })),
    ).toEqual(["10.1.2.89/24 gw 10.1.2.1"]);
    expect(
      addresses(add(conf({ ranges: [[{ subnet: "10.1.2.0/24" }]] }, { runtimeConfig: { ips: ["10.1.2.90"] } }), { id: "c" })),
    ).toEqual(["10.1.2.90/24 gw 10.1.2.1"]);
    expect(reservations()).toMatchObject({ "10.1.2.88": "a\r\neth0", "10.1.2.89": "b\r\neth0", "10.1.2.90": "c\r\neth0" });
  });

  test("ADD allocates custom IPs from multiple ranges and protocols", () => {
    const c = conf({ ranges }, { args: { cni: { ips: ["2001:db8:1::999", "10.2.2.100", "10.1.2.88"] } } });
    expect(addresses(add(c))).toEqual([
      "10.1.2.88/24 gw 10.1.2.1",
      "10.2.2.100/24 gw 10.2.2.1",
      "2001:db8:1::999/64 gw 2001:db8:1::1",
    ]);
  });

  test("ADD fails if a requested custom IP is not used, and releases what it took", () => {
    const c = conf({ ranges: [[{ subnet: "10.1.2.0/24" }]] }, { args: { cni: { ips: ["10.1.2.88", "10.1.2.99", "10.9.9.9"] } } });
    expect(failure(() => add(c))).toEqual({ code: 999, msg: "failed to allocate all requested IPs: 10.1.2.99 10.9.9.9" });
    expect(reservations()).toEqual({});
  });

  test("ADD refuses a requested gateway or a taken address", () => {
    const c = conf({ ranges: [[{ subnet: "10.20.0.0/29", gateway: "10.20.0.6" }]] });
    expect(failure(() => add(c, { args: "IP=10.20.0.6" }))).toEqual({
      code: 999,
      msg: "failed to allocate for range 0: requested ip 10.20.0.6 is subnet's gateway",
    });
    add(c, { id: "a", args: "IP=10.20.0.3" });
    expect(failure(() => add(c, { id: "b", args: "IP=10.20.0.3" })).msg).toBe(
      "failed to allocate for range 0: requested IP address 10.20.0.3 is not available in range set 10.20.0.1-10.20.0.6",
    );
  });
});

describe("host-local allocation order", () => {
  test("reproduces the observed 1.1.1 sequence", () => {
    const c = conf({ ranges: [[{ subnet: "10.20.0.0/29", gateway: "10.20.0.6" }], [{ subnet: "fd00::/120" }]] }, {}, "0.3.1");
    expect(addresses(add(c, { id: "c1" }))).toEqual(["10.20.0.1/29 gw 10.20.0.6", "fd00::2/120 gw fd00::1"]);
    expect(addresses(add(c, { id: "c2", args: "IP=10.20.0.3" }))).toEqual(["10.20.0.3/29 gw 10.20.0.6", "fd00::3/120 gw fd00::1"]);
    expect(failure(() => add(c, { id: "c3", args: "IP=10.20.0.6" })).msg).toBe(
      "failed to allocate for range 0: requested ip 10.20.0.6 is subnet's gateway",
    );
    add(c, { id: "c4" });
    add(c, { id: "c5" });
    add(c, { id: "c6" });
    expect(failure(() => add(c, { id: "c7" }))).toEqual({
      code: 999,
      msg: "failed to allocate for range 0: no IP addresses available in range set: 10.20.0.1-10.20.0.6",
    });
    expect(Object.keys(reservations()).filter((n) => n.startsWith("10.")).sort()).toEqual([
      "10.20.0.1",
      "10.20.0.2",
      "10.20.0.3",
      "10.20.0.4",
      "10.20.0.5",
    ]);
  });

  test("a failure in a later range set releases the earlier ones, but last_reserved_ip still advances", () => {
    const c = conf({ ranges: [[{ subnet: "10.1.0.0/24" }], [{ subnet: "10.2.0.0/30" }]] });
    add(c, { id: "fill" }); // takes 10.1.0.2 and the only address of 10.2.0.0/30
    expect(failure(() => add(c, { id: "late" })).msg).toBe(
      "failed to allocate for range 1: no IP addresses available in range set: 10.2.0.1-10.2.0.2",
    );
    expect(Object.values(reservations())).toEqual(["fill\r\neth0", "fill\r\neth0"]);
    expect(readFileSync(join(netDir(), "last_reserved_ip.0"), "latin1")).toBe("10.1.0.3");
    del(c, { id: "fill" });
    expect(addresses(add(c, { id: "next" }))[0]).toBe("10.1.0.4/24 gw 10.1.0.1");
  });

  test("ADD refuses a route without dst before allocating anything", () => {
    const c = conf({ ranges: [[{ subnet: "10.1.0.0/24" }]], routes: [{ gw: "10.1.0.1" }] });
    expect(failure(() => add(c))).toEqual({ code: 7, msg: "invalid route: missing dst" });
    expect(reservations()).toEqual({});
  });
});

describe("host-local STATUS", () => {
  test("STATUS succeeds while every range set has room, fails with 50 when one is full", () => {
    const c = conf({ ranges: [[{ subnet: "10.1.0.0/24" }], [{ subnet: "10.2.0.0/30" }]] });
    status(c);
    expect(existsSync(netDir())).toBe(false); // STATUS creates nothing
    add(c, { id: "a" });
    const before = JSON.stringify(reservations());
    expect(failure(() => status(c))).toEqual({ code: 50, msg: "no IP addresses available in range set: 10.2.0.1-10.2.0.2" });
    expect(JSON.stringify(reservations())).toBe(before);
    del(c, { id: "a" });
    status(c);
  });

  test("STATUS counts a skipped gateway and ignores reservations outside the set", () => {
    const c = conf({ ranges: [[{ subnet: "10.20.0.0/29", gateway: "10.20.0.6" }]] });
    mkdirSync(netDir(), { recursive: true });
    for (const n of [1, 2, 3, 4]) writeFileSync(join(netDir(), `10.20.0.${n}`), `c${n}\r\neth0`);
    writeFileSync(join(netDir(), "10.99.0.1"), "elsewhere\r\neth0");
    status(c); // .5 is still free
    writeFileSync(join(netDir(), "10.20.0.5"), "c5\r\neth0");
    expect(failure(() => status(c)).code).toBe(50);
  });

  test("STATUS is cheap for huge ranges", () => {
    const c = conf({ ranges: [[{ subnet: "10.0.0.0/8" }], [{ subnet: "fd00::/64" }]] });
    add(c);
    const t0 = performance.now();
    status(c);
    expect(performance.now() - t0).toBeLessThan(500);
  });
});

describe("host-local GC", () => {
  const ranges = [[{ subnet: "10.1.0.0/24" }]];

  test("GC releases exactly the attachments not listed, plus empty and unreadable reservations", () => {
    const c = conf({ ranges });
    add(c, { id: "stale1" });
    add(c, { id: "keep1" });
    add(c, { id: "keep1", ifName: "eth1" });
    writeFileSync(join(netDir(), "10.1.0.50"), ""); // create-then-crash leftover (#498)
    writeFileSync(join(netDir(), "10.1.0.51"), "legacy-keep");
    writeFileSync(join(netDir(), "10.1.0.52"), "legacy-gone");
    mkdirSync(join(root, "othernet"), { recursive: true });
    writeFileSync(join(root, "othernet", "10.1.0.60"), "stale1\r\neth0");

    gc({
      ...c,
      "cni.dev/valid-attachments": [
        { containerID: "keep1", ifname: "eth0" },
        { containerID: "legacy-keep", ifname: "eth0" },
      ],
    });
    expect(reservations()).toEqual({ "10.1.0.3": "keep1\r\neth0", "10.1.0.51": "legacy-keep" });
    expect(readFileSync(join(root, "othernet", "10.1.0.60"), "latin1")).toBe("stale1\r\neth0");
    expect(readdirSync(netDir())).toEqual(expect.arrayContaining(["lock", "last_reserved_ip.0"]));
    // The freed addresses are allocatable again.
    expect(addresses(add(c, { id: "new" }))).toEqual(["10.1.0.5/24 gw 10.1.0.1"]);
  });

  test("GC without cni.dev/valid-attachments releases nothing; an empty list releases everything", () => {
    const c = conf({ ranges });
    add(c, { id: "a" });
    add(c, { id: "b" });
    gc(c);
    expect(Object.keys(reservations())).toHaveLength(2);
    gc({ ...c, "cni.dev/valid-attachments": [] });
    expect(reservations()).toEqual({});
  });

  test("GC on a network that has never been used creates nothing", () => {
    gc({ ...conf({ ranges }), "cni.dev/valid-attachments": [] });
    expect(existsSync(netDir())).toBe(false);
  });

  test("GC rejects a malformed attachment list, naming the key it came under", () => {
    expect(failure(() => gc({ ...conf({ ranges }), "cni.dev/valid-attachments": "nope" }))).toMatchObject({ code: 7, msg: expect.stringContaining("GCArgs.cni.dev/valid-attachments ") });
    expect(failure(() => gc({ ...conf({ ranges }), "cni.dev/attachments": "nope" }))).toMatchObject({ code: 7, msg: expect.stringContaining("GCArgs.cni.dev/attachments ") });
  });

  test("GC reads the older cni.dev/attachments alone; when both keys are present the newer wins", () => {
    const c = conf({ ranges });
    add(c, { id: "a" });
    add(c, { id: "b" });
    gc({ ...c, "cni.dev/valid-attachments": [{ containerID: "a", ifname: "eth0" }, { containerID: "b", ifname: "eth0" }], "cni.dev/attachments": [] });
    expect(Object.keys(reservations())).toHaveLength(2);
    gc({ ...c, "cni.dev/attachments": [{ containerID: "a", ifname: "eth0" }] });
    expect(Object.values(reservations())).toEqual(["a\r\neth0"]);
  });
});
