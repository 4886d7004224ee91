/**
 * `dhcp daemon` flags with Go `flag` package syntax (upstream plugins/ipam/dhcp/main.go): `-name value`,
 * `-name=value`, `--name` forms; booleans take no value unless written `-name=false`; parsing stops
 * at the first non-flag argument or `--`. Durations use Go syntax (`10s`, `1m30s`, `250ms`).
 */
import { parseGoDuration } from "../../../shared/cni/go-duration.ts";

export interface DaemonFlags {
  socketPath: string;
  pidFile: string;
  hostPrefix: string;
  broadcast: boolean;
  /** Per-exchange read timeout, ms. */
  timeoutMs: number;
  /** Longest delay between retries, ms. */
  resendMaxMs: number;
  /** Overall deadline of one acquire/renew retry sequence, ms. */
  resendTimeoutMs: number;
  /** Where leases are persisted (ours; not upstream). */
  leaseDir: string;
}

/** Where the daemon keeps its leases unless `-leasedir` says otherwise. */
export const DEFAULT_LEASE_DIR = "/var/lib/cni/dhcp";

export const DEFAULT_FLAGS: Readonly<DaemonFlags> = {
  socketPath: "/run/cni/dhcp.sock",
  pidFile: "",
  hostPrefix: "",
  broadcast: false,
  timeoutMs: 10_000,
  resendMaxMs: 62_000,
  resendTimeoutMs: 208_000,
  leaseDir: DEFAULT_LEASE_DIR,
};

/** A bad command line: the message is Go's text; the caller prints usage and exits 2. */
export class FlagError extends Error {
  override name = "FlagError";
}

type Setter = (f: DaemonFlags, v: string) => void;

const STRING_FLAGS: Readonly<Record<string, Setter>> = {
  socketpath: (f, v) => void (f.socketPath = v),
  pidfile: (f, v) => void (f.pidFile = v),
  hostprefix: (f, v) => void (f.hostPrefix = v),
  leasedir: (f, v) => void (f.leaseDir = v),
  timeout: (f, v) => void (f.timeoutMs = parseGoDuration(v)),
  resendmax: (f, v) => void (f.resendMaxMs = parseGoDuration(v)),
  resendtimeout: (f, v) => void (f.resendTimeoutMs = parseGoDuration(v)),
};
const BOOL_FLAGS: Readonly<Record<string, Setter>> = {
  broadcast: (f, v) => {
    if (!["1", "t", "T", "true", "TRUE", "True", "0", "f", "F", "false", "FALSE", "False"].includes(v)) {
      throw new FlagError(`invalid boolean value ${JSON.stringify(v)} for -broadcast: parse error`);
    }
    f.broadcast = ["1", "t", "T", "true", "TRUE", "True"].includes(v);
  },
};

/** The usage text Go's flag package would print. */
export function usage(): string {
  return [
    "Usage of dhcp daemon:",
    "  -broadcast",
    "    \tBroadcast DHCP leases (accepted; the broadcast flag is always set while unconfigured)",
    "  -hostprefix string",
    "    \tOptional prefix to netns",
    "  -leasedir string",
    `    \tDirectory where leases are persisted (default "${DEFAULT_FLAGS.leaseDir}")`,
    "  -pidfile string",
    "    \toptional path to write daemon PID to",
    "  -resendmax duration",
    "    \toptional max resend time for packets (default 1m2s)",
    "  -resendtimeout duration",
    "    \toptional dhcp client resend timeout (default 3m28s)",
    "  -socketpath string",
    `    \toptional dhcp server socketpath (default "${DEFAULT_FLAGS.socketPath}")`,
    "  -timeout duration",
    "    \toptional dhcp client timeout duration (default 10s)",
    "",
  ].join("\n");
}

/** Parses the arguments after `daemon`. Throws {@link FlagError}; `-h`/`-help` throw a FlagError with message "help". */
export function parseDaemonFlags(argv: readonly string[]): DaemonFlags {
  const f: DaemonFlags = { ...DEFAULT_FLAGS };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--") break;
    if (!arg.startsWith("-") || arg === "-") break;
    let body = arg.slice(arg.startsWith("--") ? 2 : 1);
    if (body === "" || body.startsWith("-") || body.startsWith("=")) throw new FlagError(`bad flag syntax: ${arg}`);
    let value: string | undefined;
    const eq = body.indexOf("=");
    if (eq >= 0) {
      value = body.slice(eq + 1);
      body = body.slice(0, eq);
    }
    if (body === "h" || body === "help") throw new FlagError("help");
    const bool = Object.hasOwn(BOOL_FLAGS, body) ? BOOL_FLAGS[body] : undefined;
    if (bool !== undefined) {
      bool(f, value ?? "true");
      continue;
    }
    const set = Object.hasOwn(STRING_FLAGS, body) ? STRING_FLAGS[body] : undefined;
    if (set === undefined) throw new FlagError(`flag provided but not defined: -${body}`);
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: -${body}`);
      value = argv[++i] ?? "";
    }
    try {
      set(f, value);
    } catch (err) {
      throw new FlagError(`invalid value ${JSON.stringify(value)} for flag -${body}: parse error`, { cause: err });
    }
  }
  return f;
}
