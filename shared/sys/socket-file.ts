/**
 * The socket file of a long-running listener (the dhcp daemon, the resident agent): its directory
 * is created 0700, a socket left by a process that died is replaced, a live one is never taken
 * over, and the new socket is born 0600 (made under umask 0177, so no client ever sees it wider).
 */
import { createConnection } from "node:net";
import { mkdirAll, unlinkIfExists } from "./file.ts";

/** The path cannot take a new listener (not absolute, not a socket, or another process listens). */
export class SocketPathError extends Error {
  override name = "SocketPathError";
}

/** True when something accepts connections on the unix socket at `path`. */
export function socketIsLive(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection({ path });
    c.on("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.on("error", () => resolve(false));
  });
}

/**
 * Runs `listen`, which must create the listening socket at `path`, after readying the path: the
 * directory made 0700 when missing, a stale socket (connection refused) removed — `log` says so —
 * and under umask 0177; the socket is then chmod 0600. Returns what `listen` returns.
 */
export async function listenPrivately<T>(path: string, listen: () => T | Promise<T>, log: (line: string) => void): Promise<T> {
  if (!path.startsWith("/")) throw new SocketPathError(`socket path ${JSON.stringify(path)} is not absolute`);
  const dir = path.slice(0, path.lastIndexOf("/")) || "/";
  try {
    mkdirAll(dir, 0o700);
  } catch (err) {
    throw new SocketPathError(`failed to create the socket directory ${JSON.stringify(dir)}: ${(err as Error).message}`, { cause: err });
  }
  // Loaded here: only daemons call this (node:fs costs a plugin process milliseconds at load).
  const fs = require("node:fs") as typeof import("node:fs");
  const existing = fs.lstatSync(path, { throwIfNoEntry: false });
  if (existing !== undefined) {
    if (!existing.isSocket()) throw new SocketPathError(`${path} exists and is not a socket; refusing to replace it`);
    if (await socketIsLive(path)) throw new SocketPathError(`another process is already listening on ${path}`);
    log(`removing stale socket ${path} (connection refused: its process is gone)`);
    unlinkIfExists(path);
  }
  const oldMask = process.umask(0o177);
  let listener: T;
  try {
    listener = await listen();
  } catch (err) {
    throw new SocketPathError(`failed to listen on ${path}: ${(err as Error).message}`, { cause: err });
  } finally {
    process.umask(oldMask);
  }
  fs.chmodSync(path, 0o600);
  return listener;
}
