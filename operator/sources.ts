/**
 * What the node holds for one network, read from every place the plugins of this suite (and the
 * Go ones, whose names and files are the same) leave state behind:
 * - the runtimes' libcni cache (`<cacheDir>/results/<network>-<containerID>-<ifName>`);
 * - what each plugin the network names keeps of its own, as the registry describes it
 *   (shared/node-state/ownership.ts: host-local reservations, cluster-local's in etcd, dhcp leases,
 *   bandwidth IFBs, tuning backups), read by the plugin's own state source;
 * - iptables rules whose comment names the network and container (ipMasq's
 *   `name: "<net>" id: "<cid>"`, portmap's `dnat name: …`), and rules of CNI-* chains naming an
 *   address the attachment holds (the firewall plugin's per-address rules);
 * - nftables rules whose comment is or contains the container ID, or is the ipMasq instance hash.
 * Reading never changes anything. Each source that cannot be read is reported, not fatal.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { findExecutable, runCommand } from "../shared/firewall/exec.ts";
import { hostIptablesMode, systemIptables } from "../shared/firewall/iptables/system.ts";
import { tokenize } from "../shared/firewall/iptables/save-format.ts";
import { ruleComment } from "../shared/firewall/iptables/rule.ts";
import { toolsFor } from "../shared/firewall/iptables/variant.ts";
import { formatComment, masqInstanceHash } from "../shared/firewall/naming.ts";
import { Handle } from "../shared/netlink/handle.ts";
import { namesIn, NetworkState, type Holding, type HostReaders } from "../shared/node-state/network-state.ts";
import { ipamOf, type PluginOwnerships, type StatePhase } from "../shared/node-state/ownership.ts";
import { CacheEntryError, parseCacheEntry, resultAddresses, RESULTS_SUBDIR, type CacheEntry } from "./cache-entry.ts";
import type { NetworkList } from "./networks.ts";

/** Reads the environment touches: injectable for tests. */
export interface SourceReaders extends HostReaders {
  /** `iptables-save -t <table>` text of one family, or undefined without iptables. */
  iptablesSave(family: 4 | 6, table: string): string | undefined;
  /** `nft -j list ruleset` text, or undefined without nft. */
  nftRuleset(): string | undefined;
}

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
  links(kind) {
    using nl = Handle.open();
    return nl.linkList().filter((l) => l.kind === kind).map((l) => ({ name: l.name, alias: l.alias }));
  },
};
/**
 * The state sources of `phase` of the plugins the network names (as a plugin's `type` or its
 * `ipam.type`), each once with every plugin object that names it, in the order the network first
 * names them.
 */
async function readPluginState(st: NetworkState, r: SourceReaders, owners: PluginOwnerships, phase: StatePhase): Promise<void> {
  const users = new Map<string, Record<string, unknown>[]>();
  for (const plugin of st.network.plugins) {
    for (const type of [plugin.type, ipamOf(plugin)?.type]) {
      if (typeof type !== "string") continue;
      const list = users.get(type) ?? [];
      list.push(plugin);
      users.set(type, list);
    }
  }
  for (const [type, plugins] of users) {
    const source = owners.get(type)?.state;
    if (source?.phase === phase) await source.read(st, plugins, r);
  }
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

/**
 * Everything the node holds for `network`: the runtimes' cache, what each plugin it names keeps
 * (`owners`: the registry's descriptions, by CNI type), and the firewall rules that name its attachments.
 */
export async function readNetworkState(
  network: NetworkList,
  cacheDir: string,
  r: SourceReaders,
  owners: PluginOwnerships,
): Promise<NetworkState> {
  const st = new NetworkState(network);
  readCache(st, r, cacheDir);
  await readPluginState(st, r, owners, "discover");
  const rules = readIptables(st, r);
  matchAddressRules(st, rules);
  readNft(st, r);
  await readPluginState(st, r, owners, "match");
  return st;
}
