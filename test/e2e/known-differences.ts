/**
 * Differences from the Go 1.1.1 binaries that are intended. Each entry excuses matching lines of
 * the differential suite and is summarised in DIFFERENCES.md (keep the two in step). `kind`:
 * - "head": we follow upstream HEAD, which is newer than Debian's 1.1.1;
 * - "fix": an upstream bug we fix on purpose.
 */
export interface KnownDifference {
  /** Rows it applies to (matched against the row name). */
  rows: RegExp;
  /** Difference paths it excuses (see lib/compare.ts for the path format). */
  path: RegExp;
  kind: "head" | "fix";
  reason: string;
  /** Optional further condition on the values (e.g. only go=999 ours=7). */
  when?: (go: unknown, ours: unknown) => boolean;
}

export const KNOWN_DIFFERENCES: KnownDifference[] = [
  {
    rows: /.*/,
    path: /^version\.supportedVersions$/,
    kind: "head",
    reason: "VERSION lists spec 1.1.0 as supported (HEAD); 1.1.1 stops at 1.0.0",
  },
  {
    rows: /.*/,
    path: /^version\.cniVersion$/,
    kind: "head",
    reason: "VERSION answers with cniVersion 1.1.0 (HEAD); 1.1.1 answers 1.0.0",
  },
  {
    rows: /.*/,
    path: /^(afterAdd|afterDel)\.(container|host)\.txqlen$/,
    kind: "head",
    reason:
      "links the interface plugins create (both veth ends, macvlan, ipvlan, vlan) keep the kernel's default txqueuelen 1000 (HEAD: the container veth end); 1.1.1 creates them with 0",
  },
  {
    rows: /.*/,
    path: /^afterAdd\.container\.sysctls\.net\/ipv6\/conf\/[^/]+\/keep_addr_on_down$/,
    kind: "head",
    reason: "container interface gets net.ipv6.conf.<if>.keep_addr_on_down=1 (HEAD v1.7.0 ConfigureIface); 1.1.1 leaves 0",
  },
  {
    rows: /^bad: /,
    path: /^add\.status\.code$/,
    when: (go, ours) => go === 999 && ours === 7,
    kind: "fix",
    reason: "configuration errors are CNI code 7 (invalid network config) with upstream's text; Go uses the catch-all 999",
  },
  {
    rows: /L2 only/,
    path: /^check\.status\./,
    kind: "fix",
    reason: "bridge CHECK works in L2 mode (empty ipam); upstream always delegates IPAM CHECK and fails with 'no plugin name provided'",
  },
  {
    rows: /^ptp .*dual-stack/,
    path: /^afterAdd\.host\.(addrs|routes6)$/,
    kind: "fix",
    reason: "ptp's IPv6 gateway on the host veth is added with nodad, so it answers as soon as ADD returns (Go: tentative for ~1 s)",
  },
  {
    rows: /portmap/,
    path: /^(afterAdd|afterDel)\.host\.iptables$/,
    when: (go, ours) => isEmpty(go) && onlyLines(ours, /LOCALNET|^\*filter$|^:(INPUT|FORWARD|OUTPUT) ACCEPT$|^COMMIT$/),
    kind: "fix",
    reason: "portmap adds the CNI-HOSTPORT-LOCALNET guard (drops non-loopback traffic to 127.0.0.0/8 while route_localnet is on; upstream #729)",
  },
  {
    rows: /portmap/,
    path: /^afterDel\.host\.sysctls\.net\/ipv4\/conf\/[^/]+\/route_localnet$/,
    when: (go, ours) => go === "1" && ours === "0",
    kind: "fix",
    reason: "portmap turns route_localnet back off when the last attachment relying on it is deleted (upstream never does: #729)",
  },
  {
    rows: /portmap/,
    path: /^afterDel\.host\.ip6tables$/,
    when: (go, ours) => isEmpty(ours) && onlyLines(go, /^\*nat$|^:(PREROUTING|INPUT|OUTPUT|POSTROUTING) ACCEPT$|^COMMIT$/),
    kind: "fix",
    reason: "portmap does not touch ip6tables for an IPv4-only container (Go 1.1.1 creates an empty ip6 nat table)",
  },
  {
    rows: /portmap/,
    path: /^check\.status\./,
    kind: "fix",
    reason: "portmap CHECK passes; Go 1.1.1 looks for the IPv4 DNAT chain/rules in ip6tables and fails, for IPv4-only and dual-stack containers alike (upstream #819, fixed after 1.1.1)",
  },
  {
    rows: /firewall ingressPolicy/,
    path: /^(afterAdd|afterDel)\.host\.iptables$/,
    when: (go, ours) => sameLines(go, ours, (l) => l.replaceAll("same-bridge|isolated", "same-bridge")),
    kind: "head",
    reason: "firewall isolation rules carry HEAD's comment '(ingressPolicy: same-bridge|isolated)'; 1.1.1 writes '(ingressPolicy: same-bridge)'",
  },
  {
    rows: /^bridge vlan/,
    path: /^(afterAdd|afterDel)\.host\.bridgeVlans$/,
    when: (go, ours) => sameEntries(go, ours, withoutDefaultVlan),
    kind: "head",
    reason: "a bridge port with `vlan` loses the default VLAN 1 (HEAD ≥1.3.0, preserveDefaultVlan defaults to false); 1.1.1 keeps 1 as an untagged member",
  },
  {
    rows: /vrf/,
    path: /^afterAdd\.container\.routes[46]$/,
    when: (go, ours) => entriesAll(go, (r) => r.protocol === "kernel") && entriesAll(ours, (r) => r.table !== "main"),
    kind: "head",
    reason: "vrf moves the interface's routes (ptp's gateway routes, the default route) into the VRF table (HEAD v1.7.0); 1.1.1 loses them and keeps only the kernel's connected route",
  },
  {
    rows: /sbr/,
    path: /^del2\.status\./,
    kind: "fix",
    reason: "sbr DEL succeeds when the interface is already gone (repeated DEL); Go 1.1.1 fails",
  },
  {
    rows: /host-device/,
    path: /^del2\.status\./,
    kind: "fix",
    reason: "host-device DEL is idempotent (a repeated DEL succeeds); Go fails",
  },
];

function lines(v: unknown): string[] {
  return Array.isArray(v) ? v.map((x) => { try { return String(JSON.parse(String(x))); } catch { return String(x); } }) : [];
}

function isEmpty(v: unknown): boolean {
  return Array.isArray(v) && v.length === 0;
}

/** Every entry of a one-sided iptables difference matches `re`. */
function onlyLines(v: unknown, re: RegExp): boolean {
  const l = lines(v);
  return l.length > 0 && l.every((x) => re.test(x));
}

/** Both sides' one-sided lines are equal once `norm` is applied to ours. */
function sameLines(go: unknown, ours: unknown, norm: (l: string) => string): boolean {
  const a = lines(go).sort();
  const b = lines(ours).map(norm).sort();
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Both sides' one-sided entries (JSON texts of objects) are equal once `norm` is applied to Go's. */
function sameEntries(go: unknown, ours: unknown, norm: (entry: string) => string): boolean {
  if (!Array.isArray(go) || !Array.isArray(ours)) return false;
  const a = go.map((x) => norm(String(x))).sort();
  const b = ours.map(String).sort();
  return a.length > 0 && a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Every one-sided entry (JSON text of an object) satisfies `pred`. */
function entriesAll(v: unknown, pred: (entry: Record<string, unknown>) => boolean): boolean {
  if (!Array.isArray(v)) return false;
  try {
    return v.every((x) => pred(JSON.parse(String(x)) as Record<string, unknown>));
  } catch {
    return false;
  }
}

/** A `bridge -j vlan show` entry (JSON text) without the untagged default VLAN 1. */
function withoutDefaultVlan(entry: string): string {
  try {
    const e = JSON.parse(entry) as { vlans?: { vlan: number; flags?: string[] }[] };
    const isDefault = (v: { vlan: number; flags?: string[] }) => v.vlan === 1 && JSON.stringify(v.flags) === JSON.stringify(["Egress Untagged"]);
    return JSON.stringify({ ...e, vlans: (e.vlans ?? []).filter((v) => !isDefault(v)) });
  } catch {
    return entry;
  }
}

/** The entry that excuses `path` in `row`, if any. */
export function knownDifference(row: string, path: string, go?: unknown, ours?: unknown): KnownDifference | undefined {
  return KNOWN_DIFFERENCES.find((k) => k.rows.test(row) && k.path.test(path) && (k.when === undefined || k.when(go, ours)));
}
