/**
 * Helpers for the tests of the plugins that hang a container link off a host device (macvlan,
 * ipvlan, vlan, dummy, tap): master devices in the throwaway "host" netns (cleaned up after each
 * test), network configs, and `ip` inside namespaces.
 */
import { expect } from "bun:test";
import { registerCleanup } from "./cleanup.ts";
import { staticBusybox } from "./busybox.ts";
import { expectResult, expectSuccess } from "./cni-expect.ts";
import { execPlugin } from "./exec-plugin.ts";
import { addrsOf, listLinks } from "./ip-oracle.ts";

/** Runs `ip ARGS` in `netns` (the test's own netns when undefined); throws with ip's stderr on failure. */
export function ipIn(netns: string | undefined, ...args: string[]): string {
  const argv = netns === undefined ? ["ip", ...args] : ["nsenter", `--net=${netns}`, "--", "ip", ...args];
  const run = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${run.stderr.toString().trim()}`);
  return run.stdout.toString();
}

let seq = 0;
/** A short unique link name (`<prefix><n>`, at most 15 bytes). */
export function uniqueLinkName(prefix: string): string {
  seq++;
  return `${prefix}${(process.pid % 1000).toString(36)}${seq.toString(36)}`.slice(0, 15);
}

/**
 * A veth pair in `netns` (default: the test's host netns) to serve as a master: `name` (UP) and its
 * peer `<name>p` (UP). Deleted after the test.
 */
export function makeVethMaster(opts: { name?: string; netns?: string; mtu?: number } = {}): { name: string; peer: string } {
  const name = opts.name ?? uniqueLinkName("mst");
  const peer = `${name}p`.slice(0, 15);
  ipIn(opts.netns, "link", "add", name, ...(opts.mtu ? ["mtu", String(opts.mtu)] : []), "type", "veth", "peer", "name", peer, ...(opts.mtu ? ["mtu", String(opts.mtu)] : []));
  ipIn(opts.netns, "link", "set", name, "up");
  ipIn(opts.netns, "link", "set", peer, "up");
  registerCleanup(`master ${name}`, () => {
    const argv = opts.netns === undefined ? ["ip", "link", "del", name] : ["nsenter", `--net=${opts.netns}`, "--", "ip", "link", "del", name];
    Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" });
  });
  return { name, peer };
}

/** A dummy link in `netns` (default: the host netns), UP, deleted after the test. */
export function makeDummyMaster(opts: { name?: string; netns?: string; mtu?: number } = {}): string {
  const name = opts.name ?? uniqueLinkName("dm");
  ipIn(opts.netns, "link", "add", name, ...(opts.mtu ? ["mtu", String(opts.mtu)] : []), "type", "dummy");
  ipIn(opts.netns, "link", "set", name, "up");
  registerCleanup(`dummy ${name}`, () => {
    const argv = opts.netns === undefined ? ["ip", "link", "del", name] : ["nsenter", `--net=${opts.netns}`, "--", "ip", "link", "del", name];
    Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" });
  });
  return name;
}

/**
 * Makes `dev` (in the host netns) the default-route interface: gives it `addr` and a default route
 * via `gw`; both go away with the device. Any previous default route in the host netns is replaced.
 */
export function setDefaultRouteVia(dev: string, addr: string, gw: string): void {
  ipIn(undefined, "addr", "add", addr, "dev", dev);
  ipIn(undefined, "route", "replace", "default", "via", gw, "dev", dev);
}

/** An interface plugin config with host-local IPAM (or no IPAM when `subnet` is null). */
export function linkPluginConf(o: {
  type: string;
  name: string;
  cniVersion?: string;
  dataDir?: string;
  subnet?: string | null;
  /** Extra keys for the host-local `ipam` section. */
  ipam?: Record<string, unknown>;
  [key: string]: unknown;
}): Record<string, unknown> {
  const { type, name, cniVersion, dataDir, subnet, ipam, ...rest } = o;
  const conf: Record<string, unknown> = { cniVersion: cniVersion ?? "1.0.0", name, type, ...rest };
  if (subnet !== null && subnet !== undefined) {
    conf.ipam = { type: "host-local", dataDir, ranges: [[{ subnet }]], ...(ipam ?? {}) };
  }
  return conf;
}

/** One ICMP echo from `netns` to `ip`, optionally leaving through `dev` (busybox ping); true when answered. */
export function pingFrom(netns: string, ip: string, opts: { count?: number } = {}): boolean {
  const argv = ["nsenter", `--net=${netns}`, "--", staticBusybox(), "ping", ...(ip.includes(":") ? ["-6"] : []), "-c", String(opts.count ?? 1), "-W", "2", ip];
  return Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
}

/** `ip -d -j link show NAME` in `netns`: the link with its linkinfo, or undefined. */
export function detailedLink(netns: string | undefined, name: string): Record<string, any> | undefined {
  const argv = netns === undefined ? ["ip", "-d", "-j", "link", "show", name] : ["nsenter", `--net=${netns}`, "--", "ip", "-d", "-j", "link", "show", name];
  const run = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) return undefined;
  return (JSON.parse(run.stdout.toString()) as Record<string, any>[])[0];
}

/** Current-shape IPs of any version's result ([{address, gateway}]). */
export function resultIps(result: Record<string, any>): { address: string; gateway?: string }[] {
  if (result.ips) return result.ips;
  return [result.ip4, result.ip6].filter(Boolean).map((x: any) => ({ address: x.ip, gateway: x.gateway }));
}

/**
 * An L2-only (no addresses) attachment of `conf` as eth0 in `netnsPath`: ADD leaves the link UP
 * without an IPv4 address and a result listing only that interface, CHECK passes, DEL removes the
 * link, a second DEL succeeds. Returns the link as `ip -d -j` showed it after ADD.
 */
export async function expectL2Lifecycle(conf: Record<string, unknown>, netnsPath: string, containerID: string): Promise<Record<string, any>> {
  const type = conf.type as string;
  const inv = (command: string, config: unknown) => ({ command, containerID, netns: netnsPath, ifName: "eth0", config });
  const result = expectResult(await execPlugin(type, inv("ADD", conf)));
  const link = detailedLink(netnsPath, "eth0")!;
  expect(link.linkinfo.info_kind).toBe(type);
  expect(link.flags).toContain("UP");
  expect(result).toEqual({ cniVersion: conf.cniVersion, dns: {}, interfaces: [{ name: "eth0", mac: link.address, sandbox: netnsPath }] });
  expect(addrsOf(netnsPath, "eth0").filter((a) => !a.includes(":"))).toEqual([]);
  expectSuccess(await execPlugin(type, inv("CHECK", { ...conf, prevResult: result })), { silent: true });
  expectSuccess(await execPlugin(type, inv("DEL", conf)), { silent: true });
  expect(listLinks(netnsPath).some((l) => l.ifname === "eth0")).toBe(false);
  expectSuccess(await execPlugin(type, inv("DEL", conf)), { silent: true });
  return link;
}
