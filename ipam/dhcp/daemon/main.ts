/**
 * `dhcp daemon [flags]`: the long-running lease daemon (upstream plugins/ipam/dhcp/daemon.go,
 * and main.go). One thread, no Workers: every DHCP socket is non-blocking and polled
 * (dhcp-socket.ts), and the only netns windows are synchronous socket/netlink opens.
 *
 * Listener: systemd socket activation (exactly one fd in LISTEN_FDS, for our LISTEN_PID), else a
 * unix socket at `-hostprefix` + `-socketpath`: the directory is created 0700, the socket is made
 * 0600. An existing socket file is probed: connection refused ⇒ stale (crashed daemon), unlinked
 * and replaced; a live daemon ⇒ refuse to start. SIGTERM/SIGINT: stop maintenance, release
 * nothing, keep the persisted leases, remove the socket (unless socket-activated) and pidfile.
 * Protocol: Go net/rpc over HTTP (rpc-server.ts). Only root and the daemon's own user are
 * answered (SO_PEERCRED, peer-cred.ts).
 * Leases persisted under `-leasedir` are resumed at start.
 */
import { rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { isAbsolute } from "node:path";
import { writeAllSync } from "../../../shared/cni/stdio.ts";
import { listenPrivately, SocketPathError } from "../../../shared/sys/socket-file.ts";
import { FlagError, parseDaemonFlags, usage, type DaemonFlags } from "./flags.ts";
import { Lease4 } from "./lease4.ts";
import { Lease6 } from "./lease6.ts";
import type { LeaseEvents } from "./lease.ts";
import { LeaseStore } from "./lease-store.ts";
import { serveConnections } from "./rpc-server.ts";
import { LeaseManager, daemonMethods } from "./server.ts";

/** First fd passed by systemd (SD_LISTEN_FDS_START). */
const SD_LISTEN_FDS_START = 3;

export class DaemonStartError extends Error {
  override name = "DaemonStartError";
}

function pad(n: number): string {
  return String(n).padStart(2, "0");
}

/** Go `log` style line on stderr: `2006/01/02 15:04:05 msg`. */
function log(line: string): void {
  const d = new Date();
  const stamp = `${d.getFullYear()}/${pad(d.getMonth() + 1)}/${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  writeAllSync(2, `${stamp} ${line}\n`);
}

function listenOn(server: Server, target: { fd: number } | { path: string }): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once("error", onError);
    server.listen(target, () => {
      server.off("error", onError);
      resolve();
    });
  });
}

/**
 * How the daemon runs inside another process (the resident agent, `cni-plugins serve --dhcp`):
 * that process owns the listening socket and the signals.
 */
export interface HostedDaemon {
  /** The listening socket, already bound (the daemon neither creates nor removes a socket file). */
  listenFd: number;
  /** Resolves with the reason to shut down (instead of SIGTERM/SIGINT). */
  stop: Promise<string>;
  /** Whoever counts the daemon's work (the agent's metrics). */
  events?: LeaseEvents | undefined;
}

/** Socket activation or our own socket file; returns the path we own (undefined when activated). */
async function openListener(server: Server, flags: DaemonFlags, env: Readonly<Record<string, string | undefined>>, hosted: HostedDaemon | undefined): Promise<string | undefined> {
  if (hosted !== undefined) {
    await listenOn(server, { fd: hosted.listenFd });
    log("listening on the socket of the process it runs in");
    return undefined;
  }
  const pidMatches = env["LISTEN_PID"] === undefined || env["LISTEN_PID"] === String(process.pid);
  const fds = pidMatches ? Number(env["LISTEN_FDS"] ?? "0") || 0 : 0;
  if (fds > 1) throw new DaemonStartError(`Too many (${fds}) FDs passed through socket activation`);
  if (fds === 1) {
    await listenOn(server, { fd: SD_LISTEN_FDS_START });
    log("listening on the socket passed by systemd");
    return undefined;
  }
  const path = flags.hostPrefix + flags.socketPath;
  try {
    await listenPrivately(path, () => listenOn(server, { path }), log);
  } catch (err) {
    throw err instanceof SocketPathError ? new DaemonStartError(err.message, { cause: err }) : err;
  }
  log(`listening on ${path}`);
  return path;
}

/** Runs the daemon until SIGTERM/SIGINT (or `hosted.stop`); resolves with the exit status. */
export async function runDhcpDaemon(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  hosted?: HostedDaemon,
): Promise<number> {
  let flags: DaemonFlags;
  try {
    flags = parseDaemonFlags(argv);
  } catch (err) {
    if (err instanceof FlagError) {
      if (err.message === "help") {
        writeAllSync(2, usage());
        return 0;
      }
      writeAllSync(2, `${err.message}\n${usage()}`);
      return 2;
    }
    throw err;
  }
  if (flags.pidFile !== "" && !isAbsolute(flags.pidFile)) {
    log(`Error writing pidfile ${JSON.stringify(flags.pidFile)}: path not absolute`);
    return 1;
  }

  const store = new LeaseStore(flags.leaseDir);
  const manager = new LeaseManager({ flags, store, log, events: hosted?.events });
  const server = createServer();
  serveConnections(server, daemonMethods(manager), log, process.getuid?.() ?? 0);
  let ownedPath: string | undefined;
  try {
    ownedPath = await openListener(server, flags, env, hosted);
    if (flags.pidFile !== "") writeFileSync(flags.pidFile, String(process.pid), { mode: 0o644 });
  } catch (err) {
    log(`${(err as Error).message}`);
    server.close();
    return 1;
  }

  for (const record of store.loadAll((file, why) => log(`ignoring unreadable lease file ${file}: ${why}`))) {
    try {
      const deps = { flags, store, log };
      const lease = record.family === 6 ? Lease6.resume(record, deps) : Lease4.resume(record, deps);
      manager.adopt(lease);
      log(`${lease.tag}: resumed lease on ${lease.address}`);
    } catch (err) {
      log(`${record.key}: cannot resume persisted lease: ${(err as Error).message}`);
      store.remove(record.key, record.family ?? 4);
    }
  }

  const signal = await (hosted?.stop ??
    new Promise<string>((resolve) => {
      process.once("SIGTERM", () => resolve("SIGTERM"));
      process.once("SIGINT", () => resolve("SIGINT"));
    }));
  log(`${signal}: shutting down; ${manager.size} lease(s) kept for the next start`);
  await manager.stopAll();
  server.close(); // in-flight calls get no answer; their plugins report the broken connection
  if (ownedPath !== undefined) rmSync(ownedPath, { force: true });
  if (flags.pidFile !== "") rmSync(flags.pidFile, { force: true });
  return 0;
}
