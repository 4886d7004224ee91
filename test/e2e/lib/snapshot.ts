/**
 * Normalised kernel and firewall state of one namespace, for comparing what the Go plugins and ours
 * left behind. Read only with independent tools (iproute2, tc, bridge, iptables-save, nft) run via
 * `nsenter --net`. Random things are normalised away: MAC addresses, `veth` + 8-hex host names,
 * ifindexes, IPv6 link-local addresses (derived from the random MAC), counters, lifetimes.
 */

export type Snapshot = Record<string, unknown>;

const VETH_RANDOM = /^veth[0-9a-f]{8}$/;

/** `veth1a2b3c4d` → `veth*`; other names unchanged. */
export function normName(name: unknown): unknown {
  return typeof name === "string" && VETH_RANDOM.test(name) ? "veth*" : name;
}

function inNs(ns: string, argv: string[]): string {
  const run = Bun.spawnSync(["nsenter", `--net=${ns}`, "--", ...argv], { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) return `<${argv[0]} failed: ${run.stderr.toString().trim()}>`;
  return run.stdout.toString();
}

function json(ns: string, argv: string[]): any[] {
  const text = inNs(ns, argv).trim();
  if (text === "" ) return [];
  try {
    const v = JSON.parse(text);
    return Array.isArray(v) ? v : [v];
  } catch {
    return [text];
  }
}

const byJson = (a: unknown, b: unknown): number => JSON.stringify(a).localeCompare(JSON.stringify(b));

function links(ns: string): any[] {
  return json(ns, ["ip", "-j", "-d", "link", "show"])
    .map((l) => ({
      ifname: normName(l.ifname),
      kind: l.linkinfo?.info_kind ?? l.link_type,
      slaveKind: l.linkinfo?.info_slave_kind,
      // Carrier follows the peer / the ports asynchronously (linkwatch), so carrier-derived state
      // (NO-CARRIER, LOWER_UP, operstate) is not compared; the administrative UP flag is.
      flags: [...(l.flags ?? [])].filter((f: string) => f !== "NO-CARRIER" && f !== "LOWER_UP").sort(),
      mtu: l.mtu,
      master: normName(l.master),
      promiscuity: l.promiscuity,
      allmulti: l.allmulti,
      // kind-specific settings that plugins choose (hairpin, vlan id, macvlan mode, ...)
      data: pick(l.linkinfo?.info_data, ["mode", "id", "protocol", "vlan_filtering", "vlan_default_pvid", "stp_state"]),
      slaveData: pick(l.linkinfo?.info_slave_data, ["hairpin", "learning", "isolated", "state"]),
    }))
    .sort(byJson);
}

/** `name=txqlen` per link: kept apart so the 1.1.1-vs-HEAD veth txqueuelen difference has its own path. */
function txqlens(ns: string): string[] {
  return json(ns, ["ip", "-j", "link", "show"])
    .map((l) => `${normName(l.ifname)}=${l.txqlen}`)
    .sort();
}

function pick(obj: Record<string, unknown> | undefined, keys: string[]): Record<string, unknown> | undefined {
  if (obj === undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const k of keys) if (obj[k] !== undefined) out[k] = obj[k];
  return Object.keys(out).length > 0 ? out : undefined;
}

function addrs(ns: string): any[] {
  const out: any[] = [];
  for (const l of json(ns, ["ip", "-j", "addr", "show"])) {
    for (const a of l.addr_info ?? []) {
      if (a.family === "inet6" && String(a.local).startsWith("fe80:")) continue;
      out.push({ dev: normName(l.ifname), addr: `${a.local}/${a.prefixlen}`, scope: a.scope, flags: flagsOf(a) });
    }
  }
  return out.sort(byJson);
}

function flagsOf(a: Record<string, unknown>): string[] {
  return ["noprefixroute", "nodad", "permanent", "dynamic", "tentative", "dadfailed"].filter((f) => a[f] === true);
}

function routes(ns: string, family: "-4" | "-6"): any[] {
  return json(ns, ["ip", "-j", family, "route", "show", "table", "all"])
    .filter((r) => {
      const dst = String(r.dst ?? "");
      return !(family === "-6" && (dst.startsWith("fe80:") || dst.startsWith("ff00:") || dst === "multicast"));
    })
    .map((r) => {
      const { expires: _e, pref: _p, ...rest } = r;
      const flags = Array.isArray(r.flags) ? r.flags.filter((f: string) => f !== "linkdown") : r.flags;
      return { ...rest, flags, dev: normName(r.dev) };
    })
    .sort(byJson);
}

const SYSCTL_GLOBAL = ["net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding", "net/ipv4/conf/all/route_localnet"];
const SYSCTL_V4 = ["forwarding", "route_localnet", "arp_notify", "proxy_arp", "rp_filter"];
const SYSCTL_V6 = ["forwarding", "accept_ra", "accept_dad", "disable_ipv6", "keep_addr_on_down"];

function sysctls(ns: string, ifnames: string[]): Record<string, string> {
  const files = [...SYSCTL_GLOBAL.map((p) => `/proc/sys/${p}`)];
  for (const ifn of ifnames) {
    if (ifn === "lo") continue;
    for (const k of SYSCTL_V4) files.push(`/proc/sys/net/ipv4/conf/${ifn}/${k}`);
    for (const k of SYSCTL_V6) files.push(`/proc/sys/net/ipv6/conf/${ifn}/${k}`);
  }
  const script = 'for f in "$@"; do v=$(cat "$f" 2>/dev/null) || v="<absent>"; printf "%s=%s\\n" "$f" "$v"; done';
  const text = inNs(ns, ["sh", "-c", script, "sh", ...files]);
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const i = line.indexOf("=");
    if (i <= 0) continue;
    const key = line.slice("/proc/sys/".length, i).replace(/\/(veth[0-9a-f]{8})\//, "/veth*/");
    out[key] = line.slice(i + 1);
  }
  return out;
}

/** iptables-save / ip6tables-save without comments, counters and the generated-by header. */
function iptables(ns: string, tool: "iptables-save" | "ip6tables-save"): string[] {
  return inNs(ns, [tool])
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => l.replace(/ \[\d+:\d+\]$/, ""));
}

const IPTABLES_NFT_TABLES = new Set(["filter", "nat", "mangle", "raw", "security"]);

/** nft tables other than the ones iptables-nft owns (those are compared through iptables-save). */
function nftTables(ns: string): string[] {
  const listing = json(ns, ["nft", "-j", "list", "tables"]);
  const tables: string[] = [];
  for (const item of (listing[0] as any)?.nftables ?? []) {
    const t = item.table;
    if (t === undefined) continue;
    if ((t.family === "ip" || t.family === "ip6") && IPTABLES_NFT_TABLES.has(t.name)) continue;
    tables.push(`${t.family} ${t.name}`);
  }
  return tables
    .sort()
    .map((t) =>
      inNs(ns, ["nft", "list", "table", ...t.split(" ")])
        .replace(/ # handle \d+/g, "")
        .replace(/veth[0-9a-f]{8}/g, "veth*")
        .replace(/([0-9a-f]{2}:){5}[0-9a-f]{2}/gi, "<mac>")
        .trim(),
    );
}

function bridgeVlans(ns: string): any[] {
  return json(ns, ["bridge", "-j", "vlan", "show"]).map((e) => ({ ...e, ifname: normName(e.ifname) })).sort(byJson);
}

function qdiscs(ns: string): any[] {
  return json(ns, ["tc", "-j", "qdisc", "show"])
    .filter((q) => q.kind !== "noqueue" && q.kind !== "noop")
    .map((q) => ({ kind: q.kind, dev: normName(q.dev), handle: q.handle, root: q.root, options: q.options }))
    .sort(byJson);
}

function rules(ns: string, family: "-4" | "-6"): any[] {
  return json(ns, ["ip", "-j", family, "rule", "show"]);
}

/** Everything the plugins can change in a namespace, normalised. */
export function snapshot(ns: string): Snapshot {
  const rawNames = json(ns, ["ip", "-j", "link", "show"]).map((l) => String(l.ifname));
  return {
    links: links(ns),
    txqlen: txqlens(ns),
    addrs: addrs(ns),
    routes4: routes(ns, "-4"),
    routes6: routes(ns, "-6"),
    rules4: rules(ns, "-4"),
    rules6: rules(ns, "-6"),
    bridgeVlans: bridgeVlans(ns),
    qdiscs: qdiscs(ns),
    sysctls: sysctls(ns, rawNames),
    iptables: iptables(ns, "iptables-save"),
    ip6tables: iptables(ns, "ip6tables-save"),
    nft: nftTables(ns),
  };
}
