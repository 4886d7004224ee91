/**
 * Command line of `cni-plugins inspect`, `cni-plugins gc` and `cni-plugins reload` (docs/operator.md).
 */

export type OperatorVerb = "inspect" | "gc" | "reload";

export interface OperatorFlags {
  /** Where the network configurations live (`--conf-dir`, default /etc/cni/net.d). */
  confDir: string;
  /** Only these networks (`--network`, repeatable); empty: every network in confDir. */
  networks: string[];
  /** The runtimes' libcni cache root (`--cache-dir`, default /var/lib/cni; results/ below it). */
  cacheDir: string;
  /** Where GC finds the plugins (`--bin-dir`, colon-separated; CNI_PATH semantics). */
  binDirs: string;
  /**
   * Attachments the operator declares live (`--valid CID` or `--valid CID/IFNAME`, repeatable, and
   * the lines of `--valid-file`); undefined when neither flag was given (the cache decides).
   */
  valid: ValidSpec[] | undefined;
  /** Print one JSON document instead of text (`--json`). */
  json: boolean;
  /** gc only: run GC (default: dry run, print what GC would be given). */
  apply: boolean;
  /** reload only: check, write nothing (`--dry-run`). */
  dryRun: boolean;
  /** reload only: keep running and restore after every flush or firewalld reload (`--watch`). */
  watch: boolean;
  /** reload --watch: period of the check that runs whatever the notifications say, ms (`--interval SECONDS`; 0: none). */
  intervalMs: number;
}

export interface ValidSpec {
  containerID: string;
  /** Undefined: every interface of the container. */
  ifName?: string;
}

export class UsageError extends Error {
  override name = "UsageError";
}

export const DEFAULT_CONF_DIR = "/etc/cni/net.d";
export const DEFAULT_CACHE_DIR = "/var/lib/cni";
export const DEFAULT_BIN_DIRS = "/opt/cni/bin:/usr/lib/cni";
export const DEFAULT_INTERVAL_SECONDS = 60;

export const USAGE = `usage: cni-plugins inspect|gc|reload [flags]
  inspect   list what the node holds for each network (host-local and cluster-local
            reservations, libcni cache entries, iptables and nftables rules, bandwidth IFBs,
            tuning backups, dhcp leases), grouped by attachment, and whether each attachment is live
  gc        the same, then the spec's GC with cni.dev/valid-attachments for every network:
            a dry run unless --apply is given
  reload    put back the firewall rules of every live attachment in the runtimes' cache that a
            firewall reload or flush removed (ipMasq, portmap, the firewall plugin's rules and
            firewalld zones, bridge spoof-check), with the plugins' own ADD code
flags:
  --conf-dir DIR       network configurations (default ${DEFAULT_CONF_DIR})
  --network NAME       only this network (repeatable)
  --cache-dir DIR      libcni cache root of the runtimes (default ${DEFAULT_CACHE_DIR})
  --bin-dir DIRS       plugin directories for GC, colon-separated (default: this executable's
                       directory, then ${DEFAULT_BIN_DIRS})
  --valid ID[/IF]      a live container (all its interfaces, or one); repeatable
  --valid-file FILE    live containers, one ID[/IF] per line ('#' comments); '-' reads stdin
  --json               one JSON document on stdout (reload --watch: one per pass and line)
  --apply              gc only: run GC (without it gc changes nothing)
  --dry-run            reload only: say what would be restored, change nothing
  --watch              reload only: keep running; restore after every nf_tables flush or
                       deletion, firewalld reload or restart, and periodic check
  --interval SECONDS   reload --watch: the periodic check (default ${DEFAULT_INTERVAL_SECONDS}; 0: none), the
                       only way iptables-legacy flushes are noticed
                       (the DaemonSet's container)
`;

/** Parses a `CID` or `CID/IFNAME` entry. */
export function parseValidSpec(text: string, where: string): ValidSpec {
  const t = text.trim();
  const cut = t.indexOf("/");
  const containerID = cut < 0 ? t : t.slice(0, cut);
  const ifName = cut < 0 ? undefined : t.slice(cut + 1);
  if (containerID === "" || ifName === "" || /\s/.test(t)) throw new UsageError(`${where}: ${JSON.stringify(text)} is not ID or ID/IFNAME`);
  return ifName === undefined ? { containerID } : { containerID, ifName };
}

/** Parses the lines of a valid-file (blank lines and `#` comments skipped). */
export function parseValidFile(text: string, name: string): ValidSpec[] {
  const out: ValidSpec[] = [];
  text.split("\n").forEach((line, i) => {
    const t = line.replace(/#.*/, "").trim();
    if (t !== "") out.push(parseValidSpec(t, `${name}:${i + 1}`));
  });
  return out;
}

/**
 * Parses argv (after the verb). `readFile` reads --valid-file (`-` is stdin); `selfDir` is the
 * directory of this executable, searched first by GC.
 */
export function parseFlags(verb: OperatorVerb, argv: readonly string[], readFile: (path: string) => string, selfDir: string): OperatorFlags {
  const f: OperatorFlags = {
    confDir: DEFAULT_CONF_DIR,
    networks: [],
    cacheDir: DEFAULT_CACHE_DIR,
    binDirs: `${selfDir}:${DEFAULT_BIN_DIRS}`,
    valid: undefined,
    json: false,
    apply: false,
    dryRun: false,
    watch: false,
    intervalMs: DEFAULT_INTERVAL_SECONDS * 1000,
  };
  const reloadOnly = (flag: string): void => {
    if (verb !== "reload") throw new UsageError(`${flag} is a flag of reload`);
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const [name, inline] = flag.startsWith("--") && flag.includes("=") ? [flag.slice(0, flag.indexOf("=")), flag.slice(flag.indexOf("=") + 1)] : [flag, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") throw new UsageError(`${name} needs a value`);
      return v;
    };
    switch (name) {
      case "--conf-dir":
        f.confDir = value();
        break;
      case "--network":
        f.networks.push(value());
        break;
      case "--cache-dir":
        f.cacheDir = value();
        break;
      case "--bin-dir":
        f.binDirs = value();
        break;
      case "--valid":
        f.valid = [...(f.valid ?? []), parseValidSpec(value(), "--valid")];
        break;
      case "--valid-file": {
        const path = value();
        f.valid = [...(f.valid ?? []), ...parseValidFile(readFile(path), path)];
        break;
      }
      case "--json":
        f.json = true;
        break;
      case "--apply":
        if (verb !== "gc") throw new UsageError("--apply is a flag of gc");
        f.apply = true;
        break;
      case "--dry-run":
        reloadOnly(name);
        f.dryRun = true;
        break;
      case "--watch":
        reloadOnly(name);
        f.watch = true;
        break;
      case "--interval": {
        reloadOnly(name);
        const text = value();
        const seconds = Number(text);
        if (!/^\d+(\.\d+)?$/.test(text) || !Number.isFinite(seconds)) throw new UsageError(`--interval: ${JSON.stringify(text)} is not a number of seconds`);
        f.intervalMs = Math.round(seconds * 1000);
        break;
      }
      case "-h":
      case "--help":
        throw new UsageError("");
      default:
        throw new UsageError(`unknown flag ${JSON.stringify(flag)}`);
    }
  }
  if (f.dryRun && f.watch) throw new UsageError("--dry-run and --watch exclude each other");
  return f;
}
