/**
 * setupVeth / delLinkByName / linkGlobalAddresses against the kernel (upstream pkg/ip
 * link_linux_test.go scenarios), in two throwaway namespaces (one plays the host, one the
 * container). Root only.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { Handle } from "../netlink/index.ts";
import { createScratchNetns, runIn, skipUnlessRoot, type ScratchNetns } from "../netns/testing.ts";
import { delLinkByName, linkGlobalAddresses } from "./container-link.ts";
import { setupVeth } from "./veth.ts";

const SKIP = skipUnlessRoot("shared/ip veth");

describe.skipIf(SKIP)("setupVeth", () => {
  let host: ScratchNetns;
  let cont: ScratchNetns;
  let hostNl: Handle;
  let contNl: Handle;
  beforeEach(() => {
    host = createScratchNetns();
    cont = createScratchNetns();
    hostNl = Handle.open(host.ns);
    contNl = Handle.open(cont.ns);
  });
  afterEach(() => {
    hostNl.close();
    contNl.close();
    host[Symbol.dispose]();
    cont[Symbol.dispose]();
  });
  const ipLinks = (ns: ScratchNetns) => JSON.parse(runIn(ns, ["ip", "-j", "-d", "link", "show"])) as any[];

  test("puts the ends in separate namespaces, host end up with accept_ra=0, container end down", () => {
    const { host: h, container: c } = setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth0", mtu: 1400 });
    expect(h.name).toMatch(/^veth[0-9a-f]{8}$/);
    expect(c.name).toBe("eth0");
    const hl = ipLinks(host).find((l) => l.ifname === h.name);
    const cl = ipLinks(cont).find((l) => l.ifname === "eth0");
    expect(hl).toBeDefined();
    expect(cl).toBeDefined();
    expect(ipLinks(host).some((l) => l.ifname === "eth0")).toBe(false);
    expect(ipLinks(cont).some((l) => l.ifname === h.name)).toBe(false);
    expect(hl.flags).toContain("UP");
    expect(cl.flags).not.toContain("UP");
    expect(hl.mtu).toBe(1400);
    expect(cl.mtu).toBe(1400);
    expect(hl.address).toBe(h.mac);
    expect(cl.address).toBe(c.mac);
    expect(hl.ifindex).toBe(h.index);
    expect(cl.ifindex).toBe(c.index);
    expect(hl.linkinfo.info_kind).toBe("veth");
    expect(runIn(host, ["sysctl", "-n", `net.ipv6.conf.${h.name}.accept_ra`]).trim()).toBe("0");
  });

  test("onCreated learns the container end's index as soon as the pair exists", () => {
    const seen: number[] = [];
    const { container: c } = setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth0", onCreated: (i) => seen.push(i) });
    expect(seen).toEqual([c.index]);
    expect(() => setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth0", onCreated: (i) => seen.push(i) })).toThrow("already exists");
    expect(seen).toEqual([c.index]);
  });

  test("a name the kernel rewrites (eth%d) is refused after onCreated learnt the pair's index, so a rollback can remove it", () => {
    const seen: number[] = [];
    expect(() => setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth%d", onCreated: (i) => seen.push(i) })).toThrow(
      /^the kernel named the container veth "eth\d+", not "eth%d"$/,
    );
    expect(seen.length).toBe(1);
    const made = contNl.linkByIndex(seen[0]!);
    expect(made.name).toMatch(/^eth\d+$/);
    contNl.linkDel(seen[0]!);
  });

  test("applies an explicit MAC and host name", () => {
    const { host: h, container: c } = setupVeth({
      containerNl: contNl,
      hostNl,
      hostNs: host.ns,
      ifName: "eth1",
      mac: "0a:58:0a:01:02:03",
      hostVethName: "hostside0",
    });
    expect(h.name).toBe("hostside0");
    expect(c.mac).toBe("0a:58:0a:01:02:03");
    expect(ipLinks(cont).find((l) => l.ifname === "eth1").address).toBe("0a:58:0a:01:02:03");
  });

  test("a second pair with another container name works; the same name is a useful error", () => {
    const a = setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth0" });
    const b = setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth1" });
    expect(a.host.name).not.toBe(b.host.name);
    let msg = "";
    try {
      setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth0" });
    } catch (err) {
      msg = (err as Error).message;
    }
    expect(msg).toMatch(/^container veth name \("eth0"\) peer provided \("veth[0-9a-f]{8}"\) already exists$/);
    // The failed attempt left no extra host link.
    expect(ipLinks(host).filter((l) => String(l.ifname).startsWith("veth")).length).toBe(2);
  });

  test("an explicit host name that is taken is an error, not a retry", () => {
    setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth0", hostVethName: "taken0" });
    expect(() => setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth1", hostVethName: "taken0" })).toThrow(
      'container veth name ("eth1") peer provided ("taken0") already exists',
    );
  });

  test("linkGlobalAddresses lists the global addresses; delLinkByName removes the pair; missing link → [] / nothing", () => {
    const { host: h } = setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth0" });
    runIn(cont, ["ip", "addr", "add", "10.9.8.7/24", "dev", "eth0"]);
    runIn(cont, ["ip", "addr", "add", "fd00:9::7/64", "dev", "eth0", "nodad"]);
    runIn(cont, ["ip", "addr", "add", "169.254.1.1/16", "dev", "eth0"]);
    expect(linkGlobalAddresses(contNl, "eth0").sort()).toEqual(["10.9.8.7/24", "fd00:9::7/64"]);
    delLinkByName(contNl, "eth0");
    expect(ipLinks(cont).some((l) => l.ifname === "eth0")).toBe(false);
    expect(ipLinks(host).some((l) => l.ifname === h.name)).toBe(false);
    expect(linkGlobalAddresses(contNl, "eth0")).toEqual([]);
    delLinkByName(contNl, "eth0");
  });

  test("linkGlobalAddresses of a link without addresses returns []", () => {
    setupVeth({ containerNl: contNl, hostNl, hostNs: host.ns, ifName: "eth0" });
    expect(linkGlobalAddresses(contNl, "eth0")).toEqual([]);
  });
});
