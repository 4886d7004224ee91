/**
 * What the node holds for one network, read from every place the plugins of this suite (and the
 * Go ones, whose names and files are the same) leave state behind:
 * - the runtimes' libcni cache (`<cacheDir>/results/<network>-<containerID>-<ifName>`);
 * - host-local reservations (`<dataDir>/<network>/<ip>`, content `<containerID>\r\n<ifName>`);
 * - cluster-local reservations of this node (`ipam.etcd.node`) in etcd;
 * - iptables rules whose comment names the network and container (ipMasq's
 *   `name: "<net>" id: "<cid>"`, portmap's `dnat name: …`), and rules of CNI-* chains naming an
 *   address the attachment holds (the firewall plugin's per-address rules);
 * - nftables rules whose comment is or contains the container ID, or is the ipMasq instance hash;
 * - bandwidth IFBs carrying our owner alias for this network;
 * - tuning backup files (`<dataDir>/<containerID>_<ifName>.json`);
 * - dhcp daemon leases (`/var/lib/cni/dhcp`, key `<containerID>/<network>/<ifName>`).
 * Reading never changes anything. Each source that cannot be read is reported, not fatal.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { DEFAULT_DATA_DIR as TUNING_DATA_DIR } from "../meta/tuning/config.ts";
import { ifbAttachment } from "../meta/bandwidth/ifb-name.ts";
import { loadClusterLocalConfig } from "../ipam/cluster-local/config.ts";
import { EtcdClient } from "../ipam/cluster-local/etcd/client.ts";
import { NetworkKeys } from "../ipam/cluster-local/keys.ts";
import { nodeReservations } from "../ipam/cluster-local/release.ts";
import { DEFAULT_DATA_DIR as HOST_LOCAL_DATA_DIR } from "../ipam/host-local/store/disk.ts";
import { findExecutable, runCommand } from "../shared/firewall/exec.ts";
import { hostIptablesMode, systemIptables } from "../shared/firewall/iptables/driver.ts";
import { tokenize } from "../shared/firewall/iptables/save-format.ts";
import { ruleComment } from "../shared/firewall/iptables/rule.ts";
import { toolsFor } from "../shared/firewall/iptables/variant.ts";
import { formatComment, masqInstanceHash } from "../shared/firewall/naming.ts";
import { parseIP, formatIP } from "../shared/ip/ip.ts";
import { Handle } from "../shared/netlink/index.ts";
import { CacheEntryError, parseCacheEntry, resultAddresses, RESULTS_SUBDIR, type CacheEntry } from "./cache-entry.ts";
import type { NetworkList } from "./networks.ts";

export type HoldingKind = "cache" | "host-local" | "cluster-local" | "iptables" | "nftables" | "ifb" | "tuning" | "dhcp";

/** One thing the node holds for an attachment. */
export interface Holding {
  kind: HoldingKind;
  /** Where it is: a file, a rule, a device. */
  what: string;
}

/** An attachment as the node's state shows it. */
export interface SeenAttachment {
  containerID: string;
  /** "" when the source does not record the interface (e.g. a legacy one-line reservation). */
  ifName: string;
  holdings: Holding[];
  /** Addresses the attachment holds (reservations, cached result, lease). */
  addresses: Set<string>;
  /** Netns paths recorded for it (cache entry, dhcp lease). */
  netns: Set<string>;
  /** True when a libcni cache entry exists. */
  cached: boolean;
}

/** Reads the environment touches: injectable for tests. */
export interface SourceReaders {
  readDir(path: string): string[];
  readFile(path: string): string;
  /** `iptables-save -t <table>` text of one family, or undefined without iptables. */
  iptablesSave(family: 4 | 6, table: string): string | undefined;
  /** `nft -j list ruleset` text, or undefined without nft. */
  nftRuleset(): string | undefined;
  /** The host's IFBs with their aliases. */
  ifbs(): { name: string; alias?: string | undefined }[];
  /** This node's cluster-local reservations of a network, given the plugin's config object. */
  clusterLocal(network: NetworkList, plugin: Record<string, unknown>): Promise<ClusterLocalHolding[]>;
}

/** One cluster-local reservation in etcd: an attachment's owner record, or an address without one. */
export interface ClusterLocalHolding {
  containerID: string;
  ifName: string;
  /** The etcd key. */
  key: string;
  ips: string[];
}

/** This node's cluster-local reservations, read from etcd with the plugin's own configuration. */
async function etcdReservations(network: NetworkList, plugin: Record<string, unknown>): Promise<ClusterLocalHolding[]> {
  const conf = loadClusterLocalConfig({ ...plugin, name: network.name, cniVersion: network.cniVersion }, "");
  const keys = new NetworkKeys(conf.etcd.prefix, conf.name);
  const found = await nodeReservations(new EtcdClient(conf.etcd), keys, conf.etcd.node);
  const owners = found.owners.map(({ kv, record }) => ({ containerID: record.containerID, ifName: record.ifname, key: kv.key, ips: record.ips }));
  const orphans = found.orphans.map((kv) => {
    const who = JSON.parse(kv.value) as { containerID: string; ifname: string };
    return { containerID: who.containerID, ifName: who.ifname, key: kv.key, ips: [kv.key.slice(keys.ipsPrefix.length)] };
  });
  return [...owners, ...orphans];
}

export const DHCP_LEASE_DIR = "/var/lib/cni/dhcp";

export const systemReaders: SourceReaders = {
  readDir: (p) => readdirSync(p),
  readFile: (p) => readFileSync(p, "utf8"),
  iptablesSave(family, table) {
    const mode = hostIptablesMode(process.env);
    if (mode === undefined || findExecutable(toolsFor(mode, family).save, process.env) === undefined) return undefined;
    return systemIptables(process.env, mode).saveTable(family, table);
  },
  nftRuleset() {
    if (findExecutable("nft", process.env) === undefined) return undefined;
    return runCommand(["nft", "-j", "list", "ruleset"], process.env).stdout;
  },
  ifbs() {
    using nl = Handle.open();
    return nl.linkList().filter((l) => l.kind === "ifb").map((l) => ({ name: l.name, alias: l.alias }));
  },
  clusterLocal: etcdReservations,
};

/** Collects the attachments of one network. */
export class NetworkState {
  readonly attachments = new Map<string, SeenAttachment>();
  readonly problems: string[] = [];
  readonly network: NetworkList;
  constructor(network: NetworkList) {
    this.network = network;
  }

  /** The attachment (created on first sight). */
  attachment(containerID: string, ifName: string): SeenAttachment {
    const key = `${containerID}\n${ifName}`;
    let a = this.attachments.get(key);
    if (a === undefined) {
      a = { containerID, ifName, holdings: [], addresses: new Set(), netns: new Set(), cached: false };
      this.attachments.set(key, a);
    }
    return a;
  }

  /** Attachments of a container (all interfaces). */
  ofContainer(containerID: string): SeenAttachment[] {
    return [...this.attachments.values()].filter((a) => a.containerID === containerID);
  }

  /** Runs one source; a failure is a problem of this network's report. */
  read(source: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.problems.push(`${source}: ${(err as Error).message}`);
    }
  }

  /** {@link read} for a source that answers later. */
  async readLater(source: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.problems.push(`${source}: ${(err as Error).message}`);
    }
  }
}

/** The names in a directory; [] when it does not exist. */
function namesIn(r: SourceReaders, dir: string): string[] {
  try {
    return r.readDir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

function ipamOf(plugin: Record<string, unknown>): Record<string, unknown> | undefined {
  const ipam = plugin.ipam;
  return typeof ipam === "object" && ipam !== null && !Array.isArray(ipam) ? (ipam as Record<string, unknown>) : undefined;
}

function dirsOf(net: NetworkList, pick: (plugin: Record<string, unknown>) => string | undefined): string[] {
  return [...new Set(net.plugins.map(pick).filter((d): d is string => d !== undefined))];
}

function readCache(st: NetworkState, r: SourceReaders, cacheDir: string): void {
  const dir = join(cacheDir, RESULTS_SUBDIR);
  const prefix = `${st.network.name}-`;
  const names = namesIn(r, dir);
  for (const n of names.filter((n) => n.startsWith(prefix))) {
    const file = join(dir, n);
    st.read(`libcni cache ${file}`, () => {
      let e: CacheEntry;
      try {
        e = parseCacheEntry(file, r.readFile(file));
      } catch (err) {
        // An entry of an older libcni (not cniCacheV1) is not reported; a corrupt one is.
        if (err instanceof CacheEntryError && /^kind /.test(err.message)) return;
        throw err;
      }
      if (e.networkName !== st.network.name) return;
      const a = st.attachment(e.containerID, e.ifName);
      a.cached = true;
      a.holdings.push({ kind: "cache", what: file });
      if (e.netns !== "") a.netns.add(e.netns);
      for (const ip of resultAddresses(e.result)) a.addresses.add(ip);
    });
  }
}

function readHostLocal(st: NetworkState, r: SourceReaders): void {
  const roots = dirsOf(st.network, (p) => {
    const ipam = ipamOf(p);
    if (ipam?.type !== "host-local") return undefined;
    return resolve(typeof ipam.dataDir === "string" && ipam.dataDir !== "" ? ipam.dataDir : HOST_LOCAL_DATA_DIR);
  });
  for (const root of roots) {
    const dir = join(root, st.network.name);
    st.read(`host-local ${dir}`, () => {
      const names = namesIn(r, dir);
      for (const n of names) {
        const ip = parseIP(n);
        if (ip === null) continue; // lock, last_reserved_ip.N, the owner index, temporary files
        const file = join(dir, n);
        const [containerID = "", ifName = ""] = r.readFile(file).split(/\r?\n/).map((s) => s.trim());
        const a = st.attachment(containerID, ifName);
        a.holdings.push({ kind: "host-local", what: file });
        a.addresses.add(formatIP(ip));
      }
    });
  }
}

async function readClusterLocal(st: NetworkState, r: SourceReaders): Promise<void> {
  for (const plugin of st.network.plugins) {
    if (ipamOf(plugin)?.type !== "cluster-local") continue;
    await st.readLater("cluster-local reservations in etcd", async () => {
      for (const h of await r.clusterLocal(st.network, plugin)) {
        const a = st.attachment(h.containerID, h.ifName);
        a.holdings.push({ kind: "cluster-local", what: `etcd ${h.key} (${h.ips.join(", ")})` });
        for (const ip of h.ips) a.addresses.add(ip);
      }
    });
  }
}

function readDhcp(st: NetworkState, r: SourceReaders): void {
  if (!st.network.plugins.some((p) => ipamOf(p)?.type === "dhcp")) return;
  st.read(`dhcp leases ${DHCP_LEASE_DIR}`, () => {
    const names = namesIn(r, DHCP_LEASE_DIR);
    for (const n of names.filter((n) => n.endsWith(".json"))) {
      const file = join(DHCP_LEASE_DIR, n);
      const l = JSON.parse(r.readFile(file)) as { key?: unknown; containerID?: unknown; ifName?: unknown; netns?: unknown };
      if (typeof l.key !== "string" || typeof l.containerID !== "string" || typeof l.ifName !== "string") continue;
      if (l.key !== `${l.containerID}/${st.network.name}/${l.ifName}`) continue;
      const a = st.attachment(l.containerID, l.ifName);
      a.holdings.push({ kind: "dhcp", what: file });
      if (typeof l.netns === "string" && l.netns !== "") a.netns.add(l.netns);
    }
  });
}

function readIfbs(st: NetworkState, r: SourceReaders): void {
  if (!st.network.plugins.some((p) => p.type === "bandwidth")) return;
  st.read("bandwidth IFBs", () => {
    for (const ifb of r.ifbs()) {
      const owner = ifbAttachment(ifb, st.network.name);
      if (owner !== undefined) st.attachment(owner.containerID, owner.ifName).holdings.push({ kind: "ifb", what: `link ${ifb.name}` });
    }
  });
}

/** `name: "<net>" id: "<cid>"`, optionally after `dnat `, with the container ID unquoted. */
function commentOwner(comment: string, network: string): string | undefined {
  const body = comment.startsWith("dnat ") ? comment.slice(5) : comment;
  const head = formatComment(network, "");
  const stem = head.slice(0, head.length - 2); // `name: "<net>" id: `
  if (!body.startsWith(stem)) return undefined;
  try {
    const id = JSON.parse(body.slice(stem.length)) as unknown;
    return typeof id === "string" && formatComment(network, id) === body ? id : undefined;
  } catch {
    return undefined;
  }
}

interface SavedRule {
  family: 4 | 6;
  table: string;
  chain: string;
  args: string[];
}

function readIptables(st: NetworkState, r: SourceReaders): SavedRule[] {
  const rules: SavedRule[] = [];
  for (const family of [4, 6] as const) {
    for (const table of ["nat", "filter"]) {
      st.read(`ip${family === 6 ? "6" : ""}tables-save -t ${table}`, () => {
        const text = r.iptablesSave(family, table);
        if (text === undefined) return;
        for (const line of text.split("\n")) {
          if (!line.startsWith("-A ")) continue;
          const toks = tokenize(line);
          rules.push({ family, table, chain: toks[1]!, args: toks.slice(2) });
        }
      });
    }
  }
  const owned = new Map<string, { id: string; where: string; count: number }>();
  for (const rule of rules) {
    const comment = ruleComment(rule.args);
    const id = comment === undefined ? undefined : commentOwner(comment, st.network.name);
    if (id === undefined) continue;
    const where = `ipv${rule.family} table ${rule.table} chain ${rule.chain}`;
    const entry = owned.get(`${id}\n${where}`) ?? { id, where, count: 0 };
    entry.count++;
    owned.set(`${id}\n${where}`, entry);
  }
  for (const { id, where, count } of owned.values()) {
    const holding: Holding = { kind: "iptables", what: `${count} rule${count === 1 ? "" : "s"} in ${where}` };
    const known = st.ofContainer(id);
    // The comment names the container, not the interface: credit every known interface.
    for (const a of known.length > 0 ? known : [st.attachment(id, "")]) a.holdings.push(holding);
  }
  return rules;
}

/** Firewall-plugin rules of CNI-* chains that name an address of a known attachment. */
function matchAddressRules(st: NetworkState, rules: readonly SavedRule[]): void {
  for (const a of st.attachments.values()) {
    if (a.addresses.size === 0) continue;
    const wanted = new Set([...a.addresses].flatMap((ip) => [`${ip}/32`, `${ip}/128`]));
    const hits = rules.filter((r) => r.table === "filter" && r.chain.startsWith("CNI-") && r.args.some((t) => wanted.has(t)) && ruleComment(r.args) === undefined);
    if (hits.length > 0) a.holdings.push({ kind: "iptables", what: `${hits.length} filter rule${hits.length === 1 ? "" : "s"} naming ${[...a.addresses].join(", ")} (${[...new Set(hits.map((h) => h.chain))].join(", ")})` });
  }
}

function readNft(st: NetworkState, r: SourceReaders): void {
  st.read("nft list ruleset", () => {
    const text = r.nftRuleset();
    if (text === undefined) return;
    const doc = JSON.parse(text) as { nftables?: { rule?: { family?: string; table?: string; chain?: string; comment?: string } }[] };
    const commented = (doc.nftables ?? []).map((o) => o.rule).filter((x): x is NonNullable<typeof x> => x !== undefined && typeof x.comment === "string");
    for (const a of st.attachments.values()) {
      if (a.containerID === "") continue;
      const masq = a.ifName === "" ? undefined : masqInstanceHash(st.network.name, a.ifName, a.containerID);
      const hits = commented.filter((x) => x.comment === masq || x.comment!.includes(a.containerID));
      if (hits.length === 0) continue;
      const tables = [...new Set(hits.map((h) => `${h.family} ${h.table}`))].join(", ");
      a.holdings.push({ kind: "nftables", what: `${hits.length} rule${hits.length === 1 ? "" : "s"} in ${tables}` });
    }
  });
}

function readTuning(st: NetworkState, r: SourceReaders): void {
  const dirs = dirsOf(st.network, (p) => (p.type !== "tuning" ? undefined : typeof p.dataDir === "string" && p.dataDir !== "" ? p.dataDir : TUNING_DATA_DIR));
  for (const dir of dirs) {
    st.read(`tuning backups ${dir}`, () => {
      const names = new Set(namesIn(r, dir));
      // Backup files carry no network name: only attachments seen elsewhere can be matched.
      for (const a of st.attachments.values()) {
        const name = `${a.containerID}_${a.ifName}.json`;
        if (a.ifName !== "" && names.has(name)) a.holdings.push({ kind: "tuning", what: join(dir, name) });
      }
    });
  }
}

/** Everything the node holds for `network`. */
export async function readNetworkState(network: NetworkList, cacheDir: string, r: SourceReaders = systemReaders): Promise<NetworkState> {
  const st = new NetworkState(network);
  readCache(st, r, cacheDir);
  readHostLocal(st, r);
  await readClusterLocal(st, r);
  readDhcp(st, r);
  readIfbs(st, r);
  const rules = readIptables(st, r);
  matchAddressRules(st, rules);
  readNft(st, r);
  readTuning(st, r);
  return st;
}
