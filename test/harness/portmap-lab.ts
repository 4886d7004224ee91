/**
 * Building blocks for the portmap scenario tests (test/integration/portmap-*.test.ts): a
 * bridge + host-local + portmap conflist, a "client" namespace wired to the throwaway host by a
 * veth, and small host-side helpers. Every test picks its own bridge, subnet, client link, network
 * name and ports, so the files never step on each other when they share one throwaway host netns.
 */
import { readFileSync } from "node:fs";
import type { NetworkConfigList } from "./conflist.ts";
import { createContainerNetns, type ContainerNetns } from "./netns.ts";

/** Runs a command in the test's own (throwaway host) netns; throws with stderr on failure. */
export function sh(argv: string[]): string {
  const p = Bun.spawnSync({ cmd: argv, stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`${argv.join(" ")} failed: ${p.stderr.toString()}`);
  return p.stdout.toString();
}

/** Same as {@link sh} but never throws (cleanup paths). */
export function shQuiet(argv: string[]): void {
  Bun.spawnSync({ cmd: argv, stdout: "ignore", stderr: "ignore" });
}

export interface PortmapLabNet {
  /** Network name (the `name` of the list; part of the CNI-DN chain name). */
  name: string;
  bridge: string;
  /** IPv4 subnet of the bridge network, e.g. "10.89.0.0/24"; the gateway is its .1. */
  subnet: string;
  dataDir: string;
}

/** bridge (isGateway, hairpin) + host-local + portmap with the given backend and extra portmap keys. */
export function portmapList(net: PortmapLabNet, backend: "iptables" | "nftables", extra: Record<string, unknown> = {}): NetworkConfigList {
  return {
    cniVersion: "1.0.0",
    name: net.name,
    plugins: [
      {
        type: "bridge",
        bridge: net.bridge,
        isGateway: true,
        hairpinMode: true,
        ipam: { type: "host-local", dataDir: net.dataDir, ranges: [[{ subnet: net.subnet }]], routes: [{ dst: "0.0.0.0/0" }] },
      },
      { type: "portmap", capabilities: { portMappings: true }, backend, ...extra },
    ],
  };
}

/** The first IPv4 address of a CNI result, without prefix length. */
export function ipOf(result: Record<string, unknown>): string {
  const ips = result.ips as { address: string }[] | undefined;
  const first = ips?.[0]?.address;
  if (first === undefined) throw new Error(`result has no ips: ${JSON.stringify(result)}`);
  return first.split("/")[0]!;
}

/** The gateway of a /24-or-larger lab subnet: network address + 1. */
export function gatewayOf(subnet: string): string {
  const [net] = subnet.split("/");
  const parts = net!.split(".").map(Number);
  parts[3] = parts[3]! + 1;
  return parts.join(".");
}

/** `route_localnet` of a host interface ("0"/"1"). */
export function routeLocalnet(ifName: string): string {
  return readFileSync(`/proc/sys/net/ipv4/conf/${ifName}/route_localnet`, "utf8").trim();
}

/**
 * The MAC address of a host interface (from `ip -j link`: /sys/class/net shows the namespace sysfs
 * was mounted in, not the throwaway one).
 */
export function macOf(ifName: string): string {
  const links = JSON.parse(sh(["ip", "-j", "link", "show", "dev", ifName])) as { address?: string }[];
  const mac = links[0]?.address;
  if (mac === undefined) throw new Error(`no MAC address for ${ifName}`);
  return mac;
}

/** True when a link of that name exists in the test's netns. */
export function linkExists(ifName: string): boolean {
  return Bun.spawnSync({ cmd: ["ip", "link", "show", "dev", ifName], stdout: "ignore", stderr: "ignore" }).exitCode === 0;
}

export interface LabClient {
  ns: ContainerNetns;
  /** The client's address. */
  ip: string;
  /** The host's address on the client link (what the client sends to, to reach a hostPort). */
  hostIP: string;
}

/**
 * A client namespace linked to the host by a veth: host side `hostLink` = `<hostIP>/24`, client
 * side eth0 = `<clientIP>/24` with a default route via the host. The namespace is a fixture (gone
 * after the test); the host-side link disappears with it.
 */
export async function createLabClient(hostLink: string, hostIP: string, clientIP: string): Promise<LabClient> {
  const ns = await createContainerNetns();
  // A previous test's link with this name disappears with its netns, asynchronously.
  for (let i = 0; i < 100 && Bun.spawnSync({ cmd: ["ip", "link", "show", hostLink], stdout: "ignore", stderr: "ignore" }).exitCode === 0; i++) {
    shQuiet(["ip", "link", "del", hostLink]);
    await Bun.sleep(20);
  }
  sh(["ip", "link", "add", hostLink, "type", "veth", "peer", "name", "eth0", "netns", String(ns.pid)]);
  sh(["ip", "addr", "add", `${hostIP}/24`, "dev", hostLink]);
  sh(["ip", "link", "set", hostLink, "up"]);
  const inClient = (...a: string[]): string => sh(["nsenter", `--net=${ns.path}`, ...a]);
  inClient("ip", "link", "set", "lo", "up");
  inClient("ip", "addr", "add", `${clientIP}/24`, "dev", "eth0");
  inClient("ip", "link", "set", "eth0", "up");
  inClient("ip", "route", "add", "default", "via", hostIP);
  return { ns, ip: clientIP, hostIP };
}

/** Conntrack entries (from /proc/net/nf_conntrack) of UDP flows to `port`. */
export function udpConntrackTo(port: number): string[] {
  return readFileSync("/proc/net/nf_conntrack", "utf8")
    .split("\n")
    .filter((l) => / udp /.test(l) && l.includes(` dport=${port} `));
}
