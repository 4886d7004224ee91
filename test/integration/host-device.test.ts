/**
 * host-device with the built binary: a veth
 * end in the throwaway host netns plays the host device. Selection by name and MAC; moved into the
 * container, renamed, UP, MAC preserved, alias = host name; DEL returns it under its name (DOWN, alias
 * cleared); DEL twice / never added / netns gone / CNI_NETNS unset succeed; a same-named host device
 * makes DEL fail and leaves the device in the container until the clash is gone; IPAM (host-local)
 * addresses; CHECK; the refusals (lo, default-route link, bridge with a port) and allowUnsafeDevice;
 * a clash with an existing container interface rolls back; STATUS.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { registerCleanup, useFixtureCleanup } from "../harness/cleanup.ts";
import { expectCniError, expectResult, expectSuccess } from "../harness/cni-expect.ts";
import { execPlugin, type PluginInvocation } from "../harness/exec-plugin.ts";
import { hostDeviceConf, hostVeth, ipCmd, ipQuiet, linkDetails, uniqueName } from "../harness/host-device-helpers.ts";
import { addrsOf, listRoutes } from "../harness/ip-oracle.ts";
import { createContainerNetns } from "../harness/netns.ts";
import { sandboxed } from "../harness/sandbox.ts";
import { reservations } from "../harness/store.ts";
import { makeTempDir } from "../harness/tempdir.ts";
import { hasCheck } from "../harness/versions.ts";

/** Versions whose result can carry an address-less interface (0.1.0/0.2.0 cannot). */
const VERSIONS = ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] as const;

let seq = 0;
function cid(tag: string): string {
  seq++;
  return `hd-${tag}-${process.pid}-${seq}`;
}

function inv(command: string, netns: string | undefined, config: unknown, containerID: string, ifName = "net1", extra: Partial<PluginInvocation> = {}): PluginInvocation {
  return { command, containerID, netns, ifName, config, ...extra };
}

/** The device is in the container as `ifName`, UP, with `mac` and alias `hostName`; gone from the host. */
function expectMovedIn(netns: string, ifName: string, hostName: string, mac: string): void {
  const inside = linkDetails(netns, ifName);
  expect(inside).toBeDefined();
  expect(inside!.address).toBe(mac);
  expect(inside!.ifalias).toBe(hostName);
  expect(inside!.flags).toContain("UP");
  expect(linkDetails(undefined, hostName)).toBeUndefined();
}

/** The device is back in the host as `hostName`, DOWN, alias cleared, same MAC; gone from the container. */
function expectMovedOut(netns: string, ifName: string, hostName: string, mac: string): void {
  const back = linkDetails(undefined, hostName);
  expect(back).toBeDefined();
  expect(back!.address).toBe(mac);
  expect(back!.flags).not.toContain("UP");
  expect(back!.ifalias ?? "").toBe("");
  expect(linkDetails(netns, ifName)).toBeUndefined();
}

describe.skipIf(!sandboxed())("host-device", () => {
  useFixtureCleanup();

  for (const v of VERSIONS) {
    test(`[${v}] by name: moved, renamed, UP, MAC kept, alias set; ${hasCheck(v) ? "CHECK passes; " : ""}DEL returns it; DEL twice succeeds`, async () => {
      const dev = hostVeth(uniqueName("hdn"));
      const mac = linkDetails(undefined, dev.name)!.address!;
      const ns = await createContainerNetns();
      const id = cid("name");
      const conf = hostDeviceConf({ cniVersion: v, top: { device: dev.name } });

      const result = expectResult(await execPlugin("host-device", inv("ADD", ns.path, conf, id)));
      expect(result.cniVersion).toBe(v);
      expect(result.interfaces).toEqual([{ name: "net1", mac, sandbox: ns.path }]);
      expect(result.ips ?? []).toEqual([]);
      expectMovedIn(ns.path, "net1", dev.name, mac);

      if (hasCheck(v)) {
        expectSuccess(await execPlugin("host-device", inv("CHECK", ns.path, { ...conf, prevResult: result }, id)), { silent: true });
      }
      expectSuccess(await execPlugin("host-device", inv("DEL", ns.path, conf, id)), { silent: true });
      expectMovedOut(ns.path, "net1", dev.name, mac);
      expectSuccess(await execPlugin("host-device", inv("DEL", ns.path, conf, id)), { silent: true });
      expectMovedOut(ns.path, "net1", dev.name, mac);
    });
  }

  test("0.1.0 / 0.2.0 without IPAM: refused before anything moves (upstream moves, then fails printing)", async () => {
    const dev = hostVeth(uniqueName("hdo"));
    const ns = await createContainerNetns();
    for (const v of ["0.1.0", "0.2.0"]) {
      const run = await execPlugin("host-device", inv("ADD", ns.path, hostDeviceConf({ cniVersion: v, top: { device: dev.name } }), cid("old")));
      expectCniError(run, { code: 999, msg: "cannot convert: no valid IP addresses" });
      expect(linkDetails(undefined, dev.name)?.flags).toContain("UP");
    }
  });

  test("by hwaddr (any case, dashes): the link with that MAC is moved; an unknown MAC fails", async () => {
    const mac = "0a:58:0a:f4:00:2b";
    const dev = hostVeth(uniqueName("hdm"), { mac });
    const ns = await createContainerNetns();
    const id = cid("mac");
    const conf = hostDeviceConf({ cniVersion: "1.0.0", top: { hwaddr: "0A-58-0A-F4-00-2B" } });
    const result = expectResult(await execPlugin("host-device", inv("ADD", ns.path, conf, id, "eth0")));
    expect(result.interfaces).toEqual([{ name: "eth0", mac, sandbox: ns.path }]);
    expectMovedIn(ns.path, "eth0", dev.name, mac);
    expectSuccess(await execPlugin("host-device", inv("DEL", ns.path, conf, id, "eth0")));
    expectMovedOut(ns.path, "eth0", dev.name, mac);

    const unknown = hostDeviceConf({ cniVersion: "1.0.0", top: { hwaddr: "0a:58:0a:f4:00:99" } });
    expectCniError(await execPlugin("host-device", inv("ADD", ns.path, unknown, cid("mac"))), {
      code: 999,
      msg: "failed to find host device: failed to find physical interface",
    });
    const bad = hostDeviceConf({ cniVersion: "1.0.0", top: { hwaddr: "zz" } });
    expectCniError(await execPlugin("host-device", inv("ADD", ns.path, bad, cid("mac"))), { code: 999, msg: `failed to parse MAC address "zz"` });
  });

  test("IPAM (host-local): addresses and routes in the container, CHECK passes and catches a removed address; DEL releases the IP and returns the device", async () => {
    const dev = hostVeth(uniqueName("hdi"));
    const mac = linkDetails(undefined, dev.name)!.address!;
    const ns = await createContainerNetns();
    const id = cid("ipam");
    const dataDir = makeTempDir("hostdev-store-");
    const conf = hostDeviceConf({
      cniVersion: "1.0.0",
      name: "hd-ipam",
      top: { device: dev.name, dns: { nameservers: ["192.0.2.53"] } },
      ipam: { dataDir, subnet: "10.77.1.0/24", routes: [{ dst: "10.78.0.0/16", gw: "10.77.1.1" }] },
    });
    const result = expectResult(await execPlugin("host-device", inv("ADD", ns.path, conf, id)));
    expect(result.interfaces).toEqual([{ name: "net1", mac, sandbox: ns.path }]);
    expect(result.ips).toEqual([{ address: "10.77.1.2/24", gateway: "10.77.1.1", interface: 0 }]);
    expect(result.dns).toEqual({ nameservers: ["192.0.2.53"] });
    expectMovedIn(ns.path, "net1", dev.name, mac);
    expect(addrsOf(ns.path, "net1")).toContain("10.77.1.2/24");
    expect(listRoutes(ns.path).find((r) => r.dst === "10.78.0.0/16")).toMatchObject({ gateway: "10.77.1.1", dev: "net1" });
    expect(Object.keys(reservations(join(dataDir, "hd-ipam")))).toEqual(["10.77.1.2"]);

    const withPrev = { ...conf, prevResult: result };
    expectSuccess(await execPlugin("host-device", inv("CHECK", ns.path, withPrev, id)), { silent: true });
    const wrongMac = { ...conf, prevResult: { ...result, interfaces: [{ name: "net1", mac: "02:00:00:00:00:01", sandbox: ns.path }] } };
    expectCniError(await execPlugin("host-device", inv("CHECK", ns.path, wrongMac, id)), {
      code: 999,
      msg: "Interface net1 Mac 02:00:00:00:00:01 doesn't match container Mac",
    });
    expectCniError(await execPlugin("host-device", inv("CHECK", ns.path, conf, id)), { code: 999, msg: "Required prevResult missing" });
    Bun.spawnSync(["nsenter", `--net=${ns.path}`, "ip", "addr", "del", "10.77.1.2/24", "dev", "net1"]);
    expectCniError(await execPlugin("host-device", inv("CHECK", ns.path, withPrev, id)), { code: 999, msg: "Failed to match addr 10.77.1.2/24 on interface net1" });

    expectSuccess(await execPlugin("host-device", inv("DEL", ns.path, conf, id)), { silent: true });
    expect(reservations(join(dataDir, "hd-ipam"))).toEqual({});
    expectMovedOut(ns.path, "net1", dev.name, mac);
    expect(addrsOf(undefined, dev.name)).toEqual([]);
  }, 60_000);

  test("DEL while a same-named device exists in the host fails, keeps the device in the container (UP), and succeeds once the clash is gone", async () => {
    const dev = hostVeth(uniqueName("hdc"));
    const mac = linkDetails(undefined, dev.name)!.address!;
    const ns = await createContainerNetns();
    const id = cid("clash");
    const conf = hostDeviceConf({ cniVersion: "1.0.0", top: { device: dev.name } });
    expectResult(await execPlugin("host-device", inv("ADD", ns.path, conf, id)));

    const clash = hostVeth(dev.name.slice(0, 13) + "x");
    ipCmd("link", "set", clash.name, "name", dev.name);
    registerCleanup(`clash ${dev.name}`, () => ipQuiet("link", "del", dev.name));

    const run = await execPlugin("host-device", inv("DEL", ns.path, conf, id));
    expectCniError(run, { code: 999, msg: `failed to move "${dev.name}" to hostNS` });
    expectMovedInAgain();
    // Retry after the clash is removed.
    ipCmd("link", "del", dev.name);
    expectSuccess(await execPlugin("host-device", inv("DEL", ns.path, conf, id)), { silent: true });
    expectMovedOut(ns.path, "net1", dev.name, mac);

    function expectMovedInAgain(): void {
      const inside = linkDetails(ns.path, "net1");
      expect(inside).toMatchObject({ address: mac, ifalias: dev.name });
      expect(inside!.flags).toContain("UP");
    }
  });

  test("DEL never added, with the netns gone, and with CNI_NETNS unset all succeed (upstream fails the first two)", async () => {
    const dev = hostVeth(uniqueName("hdg"));
    const conf = hostDeviceConf({ cniVersion: "1.0.0", top: { device: dev.name } });
    const ns = await createContainerNetns();
    expectSuccess(await execPlugin("host-device", inv("DEL", ns.path, conf, cid("never"))), { silent: true });
    expect(linkDetails(undefined, dev.name)?.flags).toContain("UP");

    const id = cid("gone");
    expectResult(await execPlugin("host-device", inv("ADD", ns.path, conf, id)));
    const path = ns.path;
    await ns.destroy();
    expectSuccess(await execPlugin("host-device", inv("DEL", path, conf, id)), { silent: true });
    expectSuccess(await execPlugin("host-device", inv("DEL", undefined, conf, id)), { silent: true });
  });

  test("DEL leaves a container interface without alias (not ours) in place and succeeds", async () => {
    const ns = await createContainerNetns();
    ipCmd("link", "add", "own0", "netns", String(ns.pid), "type", "veth", "peer", "name", uniqueName("hdw"));
    const conf = hostDeviceConf({ cniVersion: "1.0.0", top: { device: "whatever0" } });
    const run = await execPlugin("host-device", inv("DEL", ns.path, conf, cid("own"), "own0"));
    expectSuccess(run);
    expect(run.stderr).toContain("no alias");
    expect(linkDetails(ns.path, "own0")).toBeDefined();
  });

  test("ADD when CNI_IFNAME already exists in the container fails cleanly: the device stays in the host, UP, unrenamed", async () => {
    const dev = hostVeth(uniqueName("hde"));
    const mac = linkDetails(undefined, dev.name)!.address!;
    const ns = await createContainerNetns();
    ipCmd("link", "add", "net1", "netns", String(ns.pid), "type", "veth", "peer", "name", uniqueName("hdf"));
    const conf = hostDeviceConf({ cniVersion: "1.0.0", top: { device: dev.name } });
    const run = await execPlugin("host-device", inv("ADD", ns.path, conf, cid("exists")));
    expectCniError(run, { code: 999, msg: `failed to move link failed to move "net1" (host: "${dev.name}") to container NS` });
    const back = linkDetails(undefined, dev.name);
    expect(back).toMatchObject({ address: mac });
    expect(back!.flags).toContain("UP");
    expect(back!.ifalias ?? "").toBe("");
    expect(linkDetails(ns.path, "net1")?.address).not.toBe(mac);
  });

  test("a failing IPAM moves the device back to the host (upstream leaves it in the container)", async () => {
    const dev = hostVeth(uniqueName("hdp"));
    const ns = await createContainerNetns();
    const conf = { ...hostDeviceConf({ cniVersion: "1.0.0", top: { device: dev.name } }), ipam: { type: "host-local", ranges: [[{ subnet: "10.79.0.0/32", exclude: ["10.79.0.0/32"] }]], dataDir: makeTempDir("hostdev-store-") } }; // an exhausted range: IPAM ADD fails
    const run = await execPlugin("host-device", inv("ADD", ns.path, conf, cid("ipamfail")));
    expect(run.status).toBe(1);
    expect(linkDetails(undefined, dev.name)?.flags).toContain("UP");
    expect(linkDetails(ns.path, "net1")).toBeUndefined();
  });

  test("DEL carries on after a failed IPAM DEL: the device goes back, the IPAM error is reported", async () => {
    const dev = hostVeth(uniqueName("hdi"));
    const mac = linkDetails(undefined, dev.name)!.address!;
    const ns = await createContainerNetns();
    const id = cid("ipamdel");
    const dataDir = makeTempDir("hostdev-store-");
    const conf = hostDeviceConf({ cniVersion: "1.0.0", top: { device: dev.name }, ipam: { dataDir, subnet: "10.83.0.0/24" } });
    expectResult(await execPlugin("host-device", inv("ADD", ns.path, conf, id)));
    const broken = { ...conf, ipam: { ...(conf.ipam as Record<string, unknown>), type: "nosuchipam" } };
    expectCniError(await execPlugin("host-device", inv("DEL", ns.path, broken, id)), { code: 999, msg: 'failed to find plugin "nosuchipam"' });
    expectMovedOut(ns.path, "net1", dev.name, mac);
    expect(Object.keys(reservations(join(dataDir, "hostdev-net")))).toEqual(["10.83.0.2"]);
    expectSuccess(await execPlugin("host-device", inv("DEL", ns.path, conf, id)), { silent: true });
    expect(reservations(join(dataDir, "hostdev-net"))).toEqual({});
  });

  test("a failure after IPAM ADD rolls back through the DEL steps: the lease goes, the device is back in the host, UP", async () => {
    const dev = hostVeth(uniqueName("hdq"));
    const mac = linkDetails(undefined, dev.name)!.address!;
    const ns = await createContainerNetns();
    const dataDir = makeTempDir("hostdev-store-");
    // The route's gateway is unreachable: ConfigureIface fails after the move and IPAM ADD.
    const conf = hostDeviceConf({
      cniVersion: "1.0.0",
      top: { device: dev.name },
      ipam: { dataDir, subnet: "10.84.0.0/24", routes: [{ dst: "172.16.0.0/16", gw: "192.0.2.1" }] },
    });
    expectCniError(await execPlugin("host-device", inv("ADD", ns.path, conf, cid("rollback"))), { code: 999, msg: "failed to add route '{172.16.0.0 ffff0000} via 192.0.2.1 dev net1" });
    const back = linkDetails(undefined, dev.name);
    expect(back).toMatchObject({ address: mac });
    expect(back!.flags).toContain("UP");
    expect(back!.ifalias ?? "").toBe("");
    expect(linkDetails(ns.path, "net1")).toBeUndefined();
    expect(reservations(join(dataDir, "hostdev-net"))).toEqual({});
  });

  describe("unsafe devices", () => {
    test("lo is always refused, even with allowUnsafeDevice", async () => {
      const ns = await createContainerNetns();
      for (const allow of [false, true]) {
        const conf = hostDeviceConf({ cniVersion: "1.0.0", top: { device: "lo", allowUnsafeDevice: allow } });
        expectCniError(await execPlugin("host-device", inv("ADD", ns.path, conf, cid("lo"))), {
          code: 7,
          msg: `refusing to move host device "lo": it is the loopback device`,
        });
      }
      expect(linkDetails(undefined, "lo")?.flags).toContain("UP");
    });

    test("the default-route link is refused; allowUnsafeDevice: true moves it (and DEL returns it)", async () => {
      const dev = hostVeth(uniqueName("hdr"));
      ipCmd("addr", "add", "10.80.0.2/24", "dev", dev.name);
      ipCmd("route", "add", "default", "via", "10.80.0.1", "dev", dev.name);
      registerCleanup("default route", () => ipQuiet("route", "del", "default", "via", "10.80.0.1"));
      const ns = await createContainerNetns();
      const id = cid("defroute");
      const conf = hostDeviceConf({ cniVersion: "1.0.0", top: { device: dev.name } });
      expectCniError(await execPlugin("host-device", inv("ADD", ns.path, conf, id)), {
        code: 7,
        msg: `refusing to move host device "${dev.name}": it carries the host's IPv4 default route (set "allowUnsafeDevice": true`,
      });
      expect(listRoutes(undefined).find((r) => r.dst === "default")).toMatchObject({ dev: dev.name });

      const allowed = hostDeviceConf({ cniVersion: "1.0.0", top: { device: dev.name, allowUnsafeDevice: true } });
      expectResult(await execPlugin("host-device", inv("ADD", ns.path, allowed, id)));
      expect(linkDetails(ns.path, "net1")?.ifalias).toBe(dev.name);
      expectSuccess(await execPlugin("host-device", inv("DEL", ns.path, allowed, id)));
      expect(linkDetails(undefined, dev.name)).toBeDefined();
    });

    test("a bridge with a port is refused before anything happens; without ports the kernel refuses (netns-local) and nothing changes", async () => {
      const br = uniqueName("hdb");
      ipCmd("link", "add", br, "type", "bridge");
      registerCleanup(`bridge ${br}`, () => ipQuiet("link", "del", br));
      ipCmd("link", "set", br, "up");
      const port = hostVeth(uniqueName("hdq"));
      ipCmd("link", "set", port.name, "master", br);
      const ns = await createContainerNetns();
      const id = cid("bridge");
      const conf = hostDeviceConf({ cniVersion: "1.0.0", top: { device: br } });
      expectCniError(await execPlugin("host-device", inv("ADD", ns.path, conf, id)), {
        code: 7,
        msg: `refusing to move host device "${br}": it is the master of "${port.name}"`,
      });
      expect(linkDetails(undefined, port.name)?.master).toBe(br);
      ipCmd("link", "set", port.name, "nomaster");
      expectCniError(await execPlugin("host-device", inv("ADD", ns.path, conf, id)), { code: 999, msg: `failed to move link failed to move "${br}" to tempNS` });
      expect(linkDetails(undefined, br)?.flags).toContain("UP");
    });
  });

  test("config and lookup errors: no selector (code 7), unknown device, bad netns (code 8)", async () => {
    const ns = await createContainerNetns();
    expectCniError(await execPlugin("host-device", inv("ADD", ns.path, hostDeviceConf({ cniVersion: "1.0.0", top: {} }), cid("err"))), {
      code: 7,
      msg: `specify either "device", "hwaddr", "kernelpath" or "pciBusID"`,
    });
    expectCniError(await execPlugin("host-device", inv("ADD", ns.path, hostDeviceConf({ cniVersion: "1.0.0", top: { device: "nosuch0" } }), cid("err"))), {
      code: 999,
      msg: "failed to find host device: Link not found",
    });
    expectCniError(await execPlugin("host-device", inv("ADD", "/proc/self/nonexistent", hostDeviceConf({ cniVersion: "1.0.0", top: { device: "x" } }), cid("err"))), {
      code: 8,
    });
  });

  test("STATUS (1.1.0) succeeds without IPAM and delegates to IPAM", async () => {
    const st = (conf: unknown) => execPlugin("host-device", { command: "STATUS", config: conf });
    expectSuccess(await st(hostDeviceConf({ cniVersion: "1.1.0", top: { device: "x" } })), { silent: true });
    const dataDir = makeTempDir("hostdev-store-");
    expectSuccess(await st(hostDeviceConf({ cniVersion: "1.1.0", top: {}, ipam: { dataDir, subnet: "10.81.0.0/24" } })), { silent: true });
  });
});
