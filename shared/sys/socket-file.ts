/**
 * The socket file of a long-running listener (the dhcp daemon, the resident agent): its directory
 * is created 0700 and must be this process's and closed to others all the way from / (see
 * checkSocketDirectory), a socket left by a process that died is replaced, a live one is never
 * taken over, and the new socket is born 0600 (made under umask 0177, so no client ever sees it
 * wider, and nothing changes a mode by path afterwards).
 */
import { createConnection } from "node:net";
import { lstat, lstatIfExists, mkdirAll, unlinkIfExists, type FileStat } from "./file.ts";

/** The path cannot take a new listener (not absolute, an unsafe directory, not a socket, or another process listens). */
export class SocketPathError extends Error {
  override name = "SocketPathError";
}

/** Mode bits: written by group or others; the sticky bit (only an entry's owner may remove or rename it). */
const GROUP_OR_OTHER_WRITE = 0o022;
const STICKY = 0o1000;

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

/** The directories from / down to `dir` (absolute), each as written (no link resolved): "/", "/run", "/run/cni". */
function pathFromRoot(dir: string): string[] {
  const names = dir.split("/").filter((n) => n !== "");
  return ["/", ...names.map((_, i) => `/${names.slice(0, i + 1).join("/")}`)];
}

/** Why `st` (of `path`, an ancestor of the socket's directory) lets another user move what is below it, or undefined. */
function ancestorProblem(path: string, st: FileStat, euid: number): string | undefined {
  if (st.uid !== 0 && st.uid !== euid) return `${path} on the way to it is owned by uid ${st.uid}, neither root nor this process's uid ${euid}`;
  if ((st.mode & GROUP_OR_OTHER_WRITE) !== 0 && (st.mode & STICKY) === 0) return `${path} on the way to it is writable by group or others without the sticky bit (mode ${octal(st.mode)})`;
  return undefined;
}

/** Why `st` (the socket's directory) lets another user replace the socket, or undefined. */
function directoryProblem(st: FileStat, euid: number): string | undefined {
  if (st.uid !== euid) return `it is owned by uid ${st.uid}, not by this process's uid ${euid}`;
  if ((st.mode & GROUP_OR_OTHER_WRITE) !== 0) return `it is writable by group or others (mode ${octal(st.mode)})`;
  return undefined;
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8)}`;
}

/**
 * Throws SocketPathError unless nobody but this process's user (`euid`) and root can replace the
 * socket that is to be made in `dir` (absolute) or what it is reached through: every component of
 * the path from / is reached without a symbolic link (each lstat'ed, so a link anywhere is seen,
 * not followed), `dir` is owned by `euid` and not writable by group or others, and each directory
 * above it is owned by root or `euid` and, when writable by group or others, sticky (as /tmp is:
 * others may add entries there but not move ours). Otherwise another user could move the socket
 * aside and listen in its place, and callers would send it their calls.
 */
export function checkSocketDirectory(dir: string, euid: number): void {
  const refuse = (reason: string, cause?: unknown): never => {
    throw new SocketPathError(`unsafe socket directory ${JSON.stringify(dir)}: ${reason}`, cause === undefined ? undefined : { cause });
  };
  const chain = pathFromRoot(dir);
  for (const [i, path] of chain.entries()) {
    let st: FileStat;
    try {
      st = lstat(path);
    } catch (err) {
      return refuse(`${path}: ${(err as Error).message}`, err);
    }
    if (st.isSymbolicLink()) refuse(`${path} is a symbolic link`);
    if (!st.isDirectory()) refuse(`${path} is not a directory`);
    const problem = i === chain.length - 1 ? directoryProblem(st, euid) : ancestorProblem(path, st, euid);
    if (problem !== undefined) refuse(problem);
  }
}

/** This process's effective user id (node's typings make geteuid optional: Windows has none). */
function effectiveUid(): number {
  return process.geteuid!();
}

/**
 * Runs `listen`, which must create the listening socket at `path`, after readying the path: the
 * directory made 0700 when missing and checked (checkSocketDirectory), a stale socket (connection
 * refused) removed — `log` says so — and under umask 0177, so the socket is born 0600. Returns what
 * `listen` returns.
 */
export async function listenPrivately<T>(path: string, listen: () => T | Promise<T>, log: (line: string) => void): Promise<T> {
  if (!path.startsWith("/")) throw new SocketPathError(`socket path ${JSON.stringify(path)} is not absolute`);
  const dir = path.slice(0, path.lastIndexOf("/")) || "/";
  try {
    mkdirAll(dir, 0o700);
  } catch (err) {
    throw new SocketPathError(`failed to create the socket directory ${JSON.stringify(dir)}: ${(err as Error).message}`, { cause: err });
  }
  checkSocketDirectory(dir, effectiveUid());
  const existing = lstatIfExists(path);
  if (existing !== undefined) {
    if (!existing.isSocket()) throw new SocketPathError(`${path} exists and is not a socket; refusing to replace it`);
    if (await socketIsLive(path)) throw new SocketPathError(`another process is already listening on ${path}`);
    log(`removing stale socket ${path} (connection refused: its process is gone)`);
    unlinkIfExists(path);
  }
  const oldMask = process.umask(0o177);
  try {
    return await listen();
  } catch (err) {
    throw new SocketPathError(`failed to listen on ${path}: ${(err as Error).message}`, { cause: err });
  } finally {
    process.umask(oldMask);
  }
}
