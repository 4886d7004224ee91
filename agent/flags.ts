/** Command line of `cni-plugins serve` (docs/resident.md). */
import { availableParallelism } from "node:os";
import { DEFAULT_SOCKET } from "./socket-paths.ts";

export interface ServeFlags {
  /** The unix socket (`--socket`); ignored when systemd passes one. */
  socket: string;
  /** Worker threads kept running (`--min-workers`). */
  minWorkers: number;
  /** Most worker threads, i.e. calls running at once (`--max-workers`); more wait. */
  maxWorkers: number;
  /** Restart after this many calls (`--max-requests`; 0: never). */
  maxRequests: number;
  /** Restart when the resident set exceeds this many MiB (`--max-rss`; 0: never). */
  maxRssMiB: number;
  /** End a call that runs longer than this many seconds (`--call-timeout`; 0: never), as if its caller had gone. */
  callTimeoutS: number;
  /** Exit after this many seconds without a call (`--idle-exit`; 0: never; ignored with the dhcp daemon); for socket activation. */
  idleExitS: number;
  /** Also serve the dhcp daemon (`--dhcp`), with these `dhcp daemon` flags (after `--`). */
  dhcp: string[] | undefined;
  /** Log every call: served (with its exit status and time) or refused (with the reason) (`--verbose`). */
  verbose: boolean;
  /** Serve GET /metrics here (`--metrics-address HOST:PORT`; undefined: no metrics endpoint). */
  metricsAddress: MetricsAddress | undefined;
}

/** Where the metrics endpoint listens. */
export interface MetricsAddress {
  hostname: string;
  port: number;
}

/**
 * The default `--max-workers` on a machine whose process may run on `cpus` CPUs: one more thread
 * than CPUs, between 2 and 16. A call's work is CPU (its own, and that of the iptables or nft it
 * runs, while its thread waits), so more threads than that only add memory (each thread is a
 * JavaScript VM of its own, 25-30 MiB once warm) and colder code; the calls beyond them wait for a
 * thread instead (docs/resident.md). `--min-workers` above it raises it.
 */
export function defaultMaxWorkers(cpus: number): number {
  return Math.min(16, Math.max(2, cpus + 1));
}

/** The port docs/observability.md, the DaemonSet and the systemd unit use for the metrics endpoint. */
export const METRICS_PORT = 9584;

export const SERVE_USAGE = `usage: cni-plugins serve [flags] [--dhcp [-- DHCP-DAEMON-FLAGS]]
Serves plugin calls forwarded by the exec shims of the CNI bin directory, so a call costs no
process start (docs/resident.md). Shims fall back to the standalone executable whenever this agent
cannot serve a call, so stopping it never breaks a call.
flags:
  --socket PATH        the unix socket (default ${DEFAULT_SOCKET}; shims read CNI_PLUGINS_SOCKET);
                       a socket passed by systemd (LISTEN_FDS) is used instead
  --min-workers N      worker threads kept running (default 2)
  --max-workers N      most calls running at once (default: CPUs + 1, at least 2, at most 16); a
                       call that finds none free waits (unaccepted, up to 10 s, and only while a
                       thread works) or runs standalone
  --call-timeout SECONDS
                       end a call that runs longer (default 300; 0: never), as a runtime's kill
                       would end a plugin process: its delegates are killed, its waits end (code 11)
  --max-requests N     restart gracefully after N calls (default 100000; 0: never)
  --max-rss MIB        restart gracefully when the resident set exceeds MIB MiB (default 512; 0: never)
  --idle-exit SECONDS  exit after SECONDS without a call (default 0: never; never while it runs the
                       dhcp daemon); with socket activation
  --verbose            log every call: served (plugin, command, status, time) or refused (why)
  --metrics-address HOST:PORT
                       serve Prometheus metrics at http://HOST:PORT/metrics (off unless given;
                       ${"$"}{METRICS_PORT} is the documented port, e.g. 127.0.0.1:${"$"}{METRICS_PORT}, [::]:${"$"}{METRICS_PORT})
  --dhcp               also run the dhcp IPAM daemon (\`dhcp daemon\`) in this process; the flags
                       after -- are its own (e.g. -- -socketpath /run/cni/dhcp.sock)
`;

export class ServeUsageError extends Error {
  override name = "ServeUsageError";
}

function count(flag: string, text: string | undefined, min: number): number {
  if (text === undefined || !/^\d+$/.test(text)) throw new ServeUsageError(`${flag} needs a whole number, got ${JSON.stringify(text ?? "")}`);
  const n = Number(text);
  if (n < min) throw new ServeUsageError(`${flag} must be at least ${min}`);
  return n;
}

/** `HOST:PORT`, `[IPv6]:PORT`: where the metrics endpoint listens. */
function metricsAddress(text: string | undefined): MetricsAddress {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\[\]]+)):(\d{1,5})$/.exec(text ?? "");
  const port = Number(m?.[3]);
  if (m === null || port > 65535) throw new ServeUsageError(`--metrics-address needs HOST:PORT (e.g. 127.0.0.1:${METRICS_PORT}), got ${JSON.stringify(text ?? "")}`);
  return { hostname: m[1] ?? m[2]!, port };
}

/** Parses the arguments after `serve`; throws ServeUsageError ("help" for --help). */
export function parseServeFlags(args: readonly string[]): ServeFlags {
  const flags: ServeFlags = {
    socket: DEFAULT_SOCKET,
    minWorkers: 2,
    maxWorkers: 0,
    maxRequests: 100_000,
    maxRssMiB: 512,
    callTimeoutS: 300,
    idleExitS: 0,
    dhcp: undefined,
    verbose: false,
    metricsAddress: undefined,
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [name, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = (): string | undefined => inline ?? args[++i];
    switch (name) {
      case "--help":
      case "-h":
        throw new ServeUsageError("help");
      case "--socket": {
        const v = value();
        if (v === undefined || !v.startsWith("/")) throw new ServeUsageError(`--socket needs an absolute path, got ${JSON.stringify(v ?? "")}`);
        flags.socket = v;
        break;
      }
      case "--min-workers":
        flags.minWorkers = count(name, value(), 1);
        break;
      case "--max-workers":
        flags.maxWorkers = count(name, value(), 1);
        break;
      case "--max-requests":
        flags.maxRequests = count(name, value(), 0);
        break;
      case "--max-rss":
        flags.maxRssMiB = count(name, value(), 0);
        break;
      case "--call-timeout":
        flags.callTimeoutS = count(name, value(), 0);
        break;
      case "--idle-exit":
        flags.idleExitS = count(name, value(), 0);
        break;
      case "--dhcp":
        flags.dhcp = [];
        break;
      case "--verbose":
        flags.verbose = true;
        break;
      case "--metrics-address":
        flags.metricsAddress = metricsAddress(value());
        break;
      case "--":
        if (flags.dhcp === undefined) throw new ServeUsageError("flags after -- are the dhcp daemon's: give --dhcp first");
        flags.dhcp = args.slice(i + 1);
        i = args.length;
        break;
      default:
        throw new ServeUsageError(`unknown flag ${JSON.stringify(arg)}`);
    }
  }
  if (flags.maxWorkers === 0) flags.maxWorkers = Math.max(flags.minWorkers, defaultMaxWorkers(availableParallelism()));
  if (flags.maxWorkers < flags.minWorkers) throw new ServeUsageError(`--max-workers (${flags.maxWorkers}) is below --min-workers (${flags.minWorkers})`);
  return flags;
}
