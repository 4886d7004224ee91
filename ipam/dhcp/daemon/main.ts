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
import { mkdirSync, rmSync, lstatSync, chmodSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Server } from "node:net";
import { dirname, isAbsolute } from "node:path";
import { writeAllSync } from "../../../shared/cni/stdio.ts";
import { FlagError, parseDaemonFlags, usage, type DaemonFlags } from "./flags.ts";
import { Lease4 } from "./lease4.ts";
import { Lease6 } from "./lease6.ts";
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

/** True when something accepts connections on the unix socket at `path`. */
function socketIsLive(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection({ path });
    c.on("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.on("error", () => resolve(false));
  });
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

/** Socket activation or our own socket file; returns the path we own (undefined when activated). */
async function openListener(server: Server, flags: DaemonFlags, env: Readonly<Record<string, string | undefined>>): Promise<string | undefined> {
  const pidMatches = env["LISTEN_PID"] === undefined || env["LISTEN_PID"] === String(process.pid);
  const fds = pidMatches ? Number(env["LISTEN_FDS"] ?? "0") || 0 : 0;
  if (fds > 1) throw new DaemonStartError(`Too many (${fds}) FDs passed through socket activation`);
  if (fds === 1) {
    await listenOn(server, { fd: SD_LISTEN_FDS_START });
    log("listening on the socket passed by systemd");
    return undefined;
  }
  const path = flags.hostPrefix + flags.socketPath;
  if (!isAbsolute(path)) throw new DaemonStartError(`socket path ${JSON.stringify(path)} is not absolute`);
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new DaemonStartError(`failed to create the socket directory ${JSON.stringify(dirname(path))}: ${(err as Error).message}`, { cause: err });
  }
  let existing;
  try {
    existing = lstatSync(path);
  } catch {
    existing = undefined;
  }
  if (existing !== undefined) {
    if (!existing.isSocket()) throw new DaemonStartError(`${path} exists and is not a socket; refusing to replace it`);
    if (await socketIsLive(path)) throw new DaemonStartError(`another dhcp daemon is already listening on ${path}`);
    log(`removing stale socket ${path} (connection refused: its daemon is gone)`);
    rmSync(path, { force: true });
  }
  // The socket is born 0600 (umask), so no client can ever see it wider; chmod below is belt and braces.
  const oldMask = process.umask(0o177);
  try {
    await listenOn(server, { path });
  } catch (err) {
    throw new DaemonStartError(`failed to listen on ${path}: ${(err as Error).message}`, { cause: err });
  } finally {
    process.umask(oldMask);
  }
  chmodSync(path, 0o600);
  log(`listening on ${path}`);
  return path;
}

/** Runs the daemon until SIGTERM/SIGINT; resolves with the exit status. */
export async function runDhcpDaemon(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
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
  const manager = new LeaseManager({ flags, store, log });
  const server = createServer();
  serveConnections(server, daemonMethods(manager), log, process.getuid?.() ?? 0);
  let ownedPath: string | undefined;
  try {
    ownedPath = await openListener(server, flags, env);
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

  const signal = await new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  log(`${signal}: shutting down; ${manager.size} lease(s) kept for the next start`);
  await manager.stopAll();
  server.close(); // in-flight calls get no answer; their plugins report the broken connection
  if (ownedPath !== undefined) rmSync(ownedPath, { force: true });
  if (flags.pidFile !== "") rmSync(flags.pidFile, { force: true });
  return 0;
}
