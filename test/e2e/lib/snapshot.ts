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

/** One section of a snapshot: a tool's stdout, or `<tool failed: …>` when it exited non-zero. */
type Sections = Map<string, string>;

/** `ip -batch` commands (one JSON line each) and the section each line becomes. */
const IP4_BATCH = [
  { section: "links", cmd: "link show" },
  { section: "routes4", cmd: "route show table all" },
  { section: "rules4", cmd: "rule show" },
];
const IP6_BATCH = [
  { section: "routes6", cmd: "route show table all" },
  { section: "rules6", cmd: "rule show" },
];

/**
 * The commands of one snapshot, run by ONE `nsenter --net=<ns> sh` (a process per tool, none per
 * sysctl file: in the VM lane every exec costs up to a second). Each section is framed by a RS
 * (0x1e) line with its name and one with the tool's exit status; stdout only, as before.
 */
const SECTIONS: Record<string, string> = {
  ip4: `printf '${IP4_BATCH.map((b) => b.cmd).join("\\n")}\\n' | ip -j -d -4 -batch -`,
  addrs: "ip -j addr show",
  ip6: `printf '${IP6_BATCH.map((b) => b.cmd).join("\\n")}\\n' | ip -j -d -6 -batch -`,
  bridgeVlans: "bridge -j vlan show",
  qdiscs: "tc -j qdisc show",
  iptables: "iptables-save",
  ip6tables: "ip6tables-save",
  nft: "nft list ruleset",
  sysctls: "read_sysctls",
};

const SYSCTL_GLOBAL = ["net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding", "net/ipv4/conf/all/route_localnet"];
const SYSCTL_V4 = ["forwarding", "route_localnet", "arp_notify", "proxy_arp", "rp_filter"];
const SYSCTL_V6 = ["forwarding", "accept_ra", "accept_dad", "disable_ipv6", "keep_addr_on_down"];

/** Prints `<path>=<value>` for the global sysctls and those of every interface but lo (shell builtins only). */
const READ_SYSCTLS = `read_sysctls() {
  for p in ${SYSCTL_GLOBAL.join(" ")}; do show "$p"; done
  for d in /proc/sys/net/ipv4/conf/*; do
    i=\${d##*/}
    case $i in all|default|lo) continue;; esac
    for k in ${SYSCTL_V4.join(" ")}; do show "net/ipv4/conf/$i/$k"; done
    for k in ${SYSCTL_V6.join(" ")}; do show "net/ipv6/conf/$i/$k"; done
  done
}
show() { v=; if [ -e "/proc/sys/$1" ] && { read -r v < "/proc/sys/$1"; [ -n "$v" ]; } 2>/dev/null; then printf '%s=%s\\n' "$1" "$v"; else printf '%s=<absent>\\n' "$1"; fi; }`;

function collect(ns: string): Sections {
  const script = [
    READ_SYSCTLS,
    ...Object.entries(SECTIONS).map(([name, cmd]) => `printf '\\036%s\\n' ${name}; ${cmd}; printf '\\036rc %s\\n' $?`),
  ].join("\n");
  const run = Bun.spawnSync(["nsenter", `--net=${ns}`, "--", "/bin/sh", "-c", script], { stdout: "pipe", stderr: "pipe" });
  const out: Sections = new Map();
  if (run.exitCode !== 0 && run.stdout.length === 0) {
    for (const name of Object.keys(SECTIONS)) out.set(name, `<nsenter failed: ${run.stderr.toString().trim()}>`);
    return out;
  }
  // "\x1e<name>\n<output>\x1erc <status>\n" per section.
  const parts = run.stdout.toString().split("\x1e");
  for (let i = 1; i + 1 < parts.length; i += 2) {
    const head = parts[i]!;
    const name = head.slice(0, head.indexOf("\n"));
    const body = head.slice(head.indexOf("\n") + 1);
    const rc = parts[i + 1]!.replace(/^rc /, "").trim();
    out.set(name, rc === "0" ? body : `<${name} failed (exit ${rc}): ${run.stderr.toString().trim()}>`);
  }
  // One line of JSON per `ip -batch` command, in order.
  for (const [name, batch] of [["ip4", IP4_BATCH], ["ip6", IP6_BATCH]] as const) {
    const text = out.get(name) ?? "";
    const lines = text.split("\n").filter((l) => l !== "");
    for (const [i, b] of batch.entries()) {
      out.set(b.section, text.startsWith("<") || lines.length !== batch.length ? `<ip ${b.cmd}: ${text.trim()}>` : lines[i]!);
    }
  }
  return out;
}

function json(sections: Sections, name: string): any[] {
  const text = (sections.get(name) ?? "").trim();
  if (text === "") return [];
  try {
    const v = JSON.parse(text);
    return Array.isArray(v) ? v : [v];
  } catch {
    return [text];
  }
}

const byJson = (a: unknown, b: unknown): number => JSON.stringify(a).localeCompare(JSON.stringify(b));

function links(sec: Sections): any[] {
  return json(sec, "links")
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
function txqlens(sec: Sections): string[] {
  return json(sec, "links")
    .map((l) => `${normName(l.ifname)}=${l.txqlen}`)
    .sort();
}

function pick(obj: Record<string, unknown> | undefined, keys: string[]): Record<string, unknown> | undefined {
  if (obj === undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const k of keys) if (obj[k] !== undefined) out[k] = obj[k];
  return Object.keys(out).length > 0 ? out : undefined;
}

function addrs(sec: Sections): any[] {
  const out: any[] = [];
  for (const l of json(sec, "addrs")) {
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

function routes(sec: Sections, family: "-4" | "-6"): any[] {
  return json(sec, family === "-4" ? "routes4" : "routes6")
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

function sysctls(sec: Sections): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of (sec.get("sysctls") ?? "").split("\n")) {
    const i = line.indexOf("=");
    if (i <= 0) continue;
    const key = line.slice(0, i).replace(/\/(veth[0-9a-f]{8})\//, "/veth*/");
    out[key] = line.slice(i + 1);
  }
  return out;
}

/** iptables-save / ip6tables-save without comments, counters and the generated-by header. */
function iptables(sec: Sections, name: "iptables" | "ip6tables"): string[] {
  return (sec.get(name) ?? "")
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => l.replace(/ \[\d+:\d+\]$/, ""));
}

const IPTABLES_NFT_TABLES = new Set(["filter", "nat", "mangle", "raw", "security"]);

/**
 * The nft tables of `nft list ruleset` other than the ones iptables-nft owns (those are compared
 * through iptables-save), one normalised text block per table, sorted.
 */
function nftTables(sec: Sections): string[] {
  const text = sec.get("nft") ?? "";
  if (text.startsWith("<")) return [text];
  const tables: string[] = [];
  let current: { head: string; lines: string[] } | undefined;
  for (const line of text.split("\n")) {
    const m = /^table (\S+) (\S+) \{$/.exec(line);
    if (m !== null) {
      current = { head: `${m[1]} ${m[2]}`, lines: [line] };
      continue;
    }
    if (current === undefined) continue;
    current.lines.push(line);
    if (line === "}") {
      const [family, name] = current.head.split(" ");
      const ownedByIptables = (family === "ip" || family === "ip6") && IPTABLES_NFT_TABLES.has(name ?? "");
      if (!ownedByIptables) tables.push(current.lines.join("\n"));
      current = undefined;
    }
  }
  return tables
    .sort()
    .map((t) =>
      t
        .replace(/ # handle \d+/g, "")
        .replace(/veth[0-9a-f]{8}/g, "veth*")
        .replace(/([0-9a-f]{2}:){5}[0-9a-f]{2}/gi, "<mac>")
        .trim(),
    );
}

function bridgeVlans(sec: Sections): any[] {
  return json(sec, "bridgeVlans").map((e) => ({ ...e, ifname: normName(e.ifname) })).sort(byJson);
}

function qdiscs(sec: Sections): any[] {
  return json(sec, "qdiscs")
    .filter((q) => q.kind !== "noqueue" && q.kind !== "noop")
    .map((q) => ({ kind: q.kind, dev: normName(q.dev), handle: q.handle, root: q.root, options: q.options }))
    .sort(byJson);
}

function rules(sec: Sections, family: "-4" | "-6"): any[] {
  return json(sec, family === "-4" ? "rules4" : "rules6");
}

/** Everything the plugins can change in a namespace, normalised. */
export function snapshot(ns: string): Snapshot {
  const sec = collect(ns);
  return {
    links: links(sec),
    txqlen: txqlens(sec),
    addrs: addrs(sec),
    routes4: routes(sec, "-4"),
    routes6: routes(sec, "-6"),
    rules4: rules(sec, "-4"),
    rules6: rules(sec, "-6"),
    bridgeVlans: bridgeVlans(sec),
    qdiscs: qdiscs(sec),
    sysctls: sysctls(sec),
    iptables: iptables(sec, "iptables"),
    ip6tables: iptables(sec, "ip6tables"),
    nft: nftTables(sec),
  };
}
