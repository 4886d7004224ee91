/**
 * Differences from the Go 1.1.1 binaries that are intended. Each entry excuses matching lines of
 * the differential suite and is summarised in DIFFERENCES.md (keep the two in step). `kind`:
 * - "head": we follow upstream HEAD, which is newer than Debian's 1.1.1 (upstream-matrix.md §6.1);
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
      "container-side veth txqueuelen is the kernel default 1000 (HEAD creates the peer with default attributes); 1.1.1 leaves 0 on both ends",
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
    reason: "portmap CHECK of an IPv4-only container passes; Go 1.1.1 looks for an ip6tables DNAT chain and fails (upstream #819, fixed after 1.1.1)",
  },
  {
    rows: /firewall ingressPolicy/,
    path: /^(afterAdd|afterDel)\.host\.iptables$/,
    when: (go, ours) => sameLines(go, ours, (l) => l.replaceAll("same-bridge|isolated", "same-bridge")),
    kind: "head",
    reason: "firewall isolation rules carry HEAD's comment '(ingressPolicy: same-bridge|isolated)'; 1.1.1 writes '(ingressPolicy: same-bridge)'",
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

/** The entry that excuses `path` in `row`, if any. */
export function knownDifference(row: string, path: string, go?: unknown, ours?: unknown): KnownDifference | undefined {
  return KNOWN_DIFFERENCES.find((k) => k.rows.test(row) && k.path.test(path) && (k.when === undefined || k.when(go, ours)));
}
