/**
 * Helpers for the bridge plugin's integration tests: config builder, one-call ADD/CHECK/DEL
 * runners for ours and the Go reference, and oracles (ip -d link, bridge vlan, nft, iptables-save,
 * ping) run with the system tools.
 */
import { staticBusybox } from "./busybox.ts";
import { execGoPlugin, execPlugin, type PluginInvocation, type PluginRun } from "./exec-plugin.ts";
import { ipJson } from "./ip-oracle.ts";

export interface BridgeConfOptions {
  name?: string;
  cniVersion?: string | undefined;
  bridge: string;
  /** host-local data dir; omit for L2-only (`"ipam": {}`). */
  dataDir?: string;
  subnets?: string[];
  routes?: Record<string, unknown>[];
  /** Extra top-level keys (isGateway, ipMasq, mtu, vlan, ...). */
  extra?: Record<string, unknown>;
  /** Extra keys under `ipam`. */
  ipam?: Record<string, unknown>;
}

/** A bridge + host-local config (or L2-only when `dataDir` is omitted). */
export function bridgeConfig(o: BridgeConfOptions): Record<string, unknown> {
  const conf: Record<string, unknown> = { name: o.name ?? "brnet", type: "bridge", bridge: o.bridge };
  if (o.cniVersion !== undefined) conf.cniVersion = o.cniVersion;
  conf.ipam =
    o.dataDir === undefined
      ? {}
      : {
          type: "host-local",
          dataDir: o.dataDir,
          ranges: (o.subnets ?? ["10.77.0.0/24"]).map((subnet) => [{ subnet }]),
          ...(o.routes ? { routes: o.routes } : {}),
          ...(o.ipam ?? {}),
        };
  return { ...conf, ...(o.extra ?? {}) };
}

export type Runner = (type: string, inv: PluginInvocation) => Promise<PluginRun>;
export const ours: Runner = execPlugin;
export const goRef: Runner = execGoPlugin;

/** The config with a prevResult (for CHECK and DEL of ≥ 0.4.0), as libcni builds it. */
export function withPrevResult(conf: Record<string, unknown>, result: unknown): Record<string, unknown> {
  return { ...conf, prevResult: result };
}

/** `ip -d -j link show dev X` (details: linkinfo, bridge port flags) in a netns. */
export function linkDetails(netns: string | undefined, name: string): Record<string, any> | undefined {
  try {
    return ipJson<Record<string, any>[]>(netns, "-d", "link", "show", "dev", name)[0];
  } catch {
    return undefined;
  }
}

/** Names of all links in a netns. */
export function linkNames(netns: string | undefined): string[] {
  return ipJson<{ ifname: string }[]>(netns, "link", "show").map((l) => l.ifname);
}

/** Host links that are ports of `bridge`. */
export function bridgePorts(bridge: string): string[] {
  return ipJson<{ ifname: string; master?: string }[]>(undefined, "link", "show").filter((l) => l.master === bridge).map((l) => l.ifname);
}

function run(argv: string[]): { status: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return { status: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** `nft -j list ruleset` objects (empty when nft fails). */
export function nftRuleset(): Record<string, any>[] {
  const r = run(["nft", "-j", "list", "ruleset"]);
  if (r.status !== 0) return [];
  return (JSON.parse(r.stdout).nftables ?? []) as Record<string, any>[];
}

/** `iptables-save` / `ip6tables-save` output (nat table). */
export function iptablesNat(v6 = false): string {
  return run([v6 ? "ip6tables-save" : "iptables-save", "-t", "nat"]).stdout;
}

/**
 * ICMP echo from inside `netns` to `ip` (busybox ping); true when answered within `attempts`
 * tries (a fresh IPv6 gateway address is unusable while the bridge runs DAD on it, ~1-2 s).
 */
export function ping(netns: string, ip: string, attempts = 4): boolean {
  const argv = ["nsenter", `--net=${netns}`, "--", staticBusybox(), "ping", ...(ip.includes(":") ? ["-6"] : []), "-c", "1", "-W", "1", ip];
  for (let i = 0; i < attempts; i++) if (run(argv).status === 0) return true;
  return false;
}

/** Files in a host-local network dir other than the lock and last_reserved_ip.* (reservations). */
export function reservationFiles(dir: string): string[] {
  const r = run(["ls", dir]);
  if (r.status !== 0) return [];
  return r.stdout.split("\n").filter((f) => f !== "" && f !== "lock" && !f.startsWith("last_reserved_ip"));
}

/** The address part of a CIDR. */
export const ipOf = (cidr: string): string => cidr.split("/")[0]!;
