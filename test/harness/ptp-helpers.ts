/**
 * Helpers for the ptp integration tests: configs, the masquerade oracle (iptables-save of BOTH
 * iptables variants and `nft list`), host-side link lookups and real pings. Everything runs in the
 * test process's throwaway host netns or inside a container netns with nsenter.
 */
import { createHash } from "node:crypto";
import { staticBusybox } from "./busybox.ts";
import { listAddrs, listLinks, type IpLink } from "./ip-oracle.ts";

export interface PtpConfOptions {
  cniVersion?: string;
  name: string;
  dataDir: string;
  /** Subnets, one range set each (default one IPv4 /24). */
  subnets?: string[];
  ipMasq?: boolean;
  ipMasqBackend?: string;
  mtu?: number;
  dns?: Record<string, unknown>;
  /** host-local resolvConf file (IPAM DNS). */
  resolvConf?: string;
  routes?: Record<string, unknown>[];
  /** Extra top-level keys. */
  top?: Record<string, unknown>;
}

/** A ptp + host-local network config. */
export function ptpConf(o: PtpConfOptions): Record<string, unknown> {
  const conf: Record<string, unknown> = { cniVersion: o.cniVersion ?? "1.0.0", name: o.name, type: "ptp" };
  if (o.ipMasq !== undefined) conf.ipMasq = o.ipMasq;
  if (o.ipMasqBackend !== undefined) conf.ipMasqBackend = o.ipMasqBackend;
  if (o.mtu !== undefined) conf.mtu = o.mtu;
  if (o.dns !== undefined) conf.dns = o.dns;
  const subnets = o.subnets ?? ["10.61.0.0/24"];
  conf.ipam = {
    type: "host-local",
    dataDir: o.dataDir,
    ranges: subnets.map((subnet) => [{ subnet }]),
    routes: o.routes ?? subnets.map((s) => ({ dst: s.includes(":") ? "::/0" : "0.0.0.0/0" })),
    ...(o.resolvConf !== undefined ? { resolvConf: o.resolvConf } : {}),
  };
  return { ...conf, ...(o.top ?? {}) };
}

/** Upstream FormatChainName, computed independently: `CNI-` + 24 hex of sha512(name + id). */
export function masqChainName(network: string, containerID: string): string {
  return `CNI-${createHash("sha512").update(network + containerID).digest("hex").slice(0, 24)}`;
}

function run(argv: string[]): string {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return r.exitCode === 0 ? r.stdout.toString() : "";
}

/** `-t nat` dumps of every iptables flavour present (legacy and nf_tables, v4 and v6), joined. */
export function natRulesAllVariants(): string {
  const tools = ["iptables-legacy-save", "ip6tables-legacy-save", "iptables-nft-save", "ip6tables-nft-save"];
  return tools.map((t) => run([t, "-t", "nat"])).join("\n");
}

/** `nft list ruleset` text ("" when nft fails). */
export function nftRuleset(): string {
  return run(["nft", "list", "ruleset"]);
}

/** Lines of the iptables nat dumps that mention `chain` (its declaration, jumps and rules). */
export function iptablesMasqLines(network: string, containerID: string): string[] {
  const chain = masqChainName(network, containerID);
  return natRulesAllVariants()
    .split("\n")
    .filter((l) => l.includes(chain));
}

/** nft masquerade rules of one attachment (comment carries `id: <cid>`). */
export function nftMasqLines(containerID: string): string[] {
  return nftRuleset()
    .split("\n")
    .filter((l) => l.includes("masquerade") && l.includes(`id: ${containerID}`));
}

/** The host-side link with this name in our (throwaway host) netns. */
export function hostLink(name: string): IpLink | undefined {
  return listLinks(undefined).find((l) => l.ifname === name);
}

/** Addresses of a host link as `ip/prefix`. */
export function hostAddrs(name: string): string[] {
  const l = listAddrs(undefined).find((x) => x.ifname === name);
  return (l?.addr_info ?? []).filter((a) => a.scope !== "link").map((a) => `${a.local}/${a.prefixlen}`);
}

/** Names of every veth in our netns. */
export function hostVethNames(): string[] {
  return listLinks(undefined)
    .filter((l) => l.ifname.startsWith("veth"))
    .map((l) => l.ifname);
}

/** One ICMP echo from `netns` to `ip` (busybox ping); true when answered. */
export function ping(netns: string, ip: string): boolean {
  const argv = ["nsenter", `--net=${netns}`, "--", staticBusybox(), "ping", ...(ip.includes(":") ? ["-6"] : []), "-c", "1", "-W", "2", ip];
  return Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
}
