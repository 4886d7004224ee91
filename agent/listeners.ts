/**
 * The agent's listening sockets: passed by systemd (socket activation: LISTEN_FDS, LISTEN_PID,
 * LISTEN_FDNAMES, sd_listen_fds(3)), inherited from the agent itself across a graceful restart, or
 * created at their paths. Every listener is a plain fd, so a restart hands all of them to the new
 * process image unchanged: no call ever finds the socket missing.
 *
 * Names: "agent" for the plugin socket and "dhcp" for the dhcp daemon's (FileDescriptorName= in
 * deploy/systemd/cni-plugins.socket and deploy/systemd/cni-plugins-dhcp.socket); a single unnamed fd is the agent's.
 * Across a restart a listener whose file the agent created itself is passed as "<name>+owned", so
 * the new image still removes the file when it finally stops.
 */
import { unlinkIfExists } from "../shared/sys/file.ts";
import { dupAbove, keepAcrossExec, listenUnix } from "../shared/sys/process.ts";
import { listenPrivately } from "../shared/sys/socket-file.ts";

/** SD_LISTEN_FDS_START */
const FIRST_FD = 3;

export interface Listener {
  name: "agent" | "dhcp";
  fd: number;
  /** The socket file this process created (removed at the final stop), or undefined. */
  ownedPath: string | undefined;
}

/** The listeners passed in `env` to this process (pid `pid`), by name; none when LISTEN_PID is not ours. */
export function inheritedListeners(env: Readonly<Record<string, string | undefined>>, pid: number, paths: Record<Listener["name"], string>): Map<string, Listener> {
  const out = new Map<string, Listener>();
  if (env.LISTEN_PID !== String(pid)) return out;
  const count = Number(env.LISTEN_FDS ?? "0");
  if (!Number.isInteger(count) || count <= 0) return out;
  const names = (env.LISTEN_FDNAMES ?? "").split(":");
  for (let i = 0; i < count; i++) {
    const raw = names[i] ?? "";
    const owned = raw.endsWith("+owned");
    const label = owned ? raw.slice(0, -"+owned".length) : raw;
    const name: Listener["name"] | undefined = label === "dhcp" ? "dhcp" : label === "agent" || (label === "" && count === 1) || label === "unknown" ? "agent" : undefined;
    if (name === undefined || out.has(name)) continue;
    out.set(name, { name, fd: FIRST_FD + i, ownedPath: owned ? paths[name] : undefined });
  }
  return out;
}

/** A new listener at `path` (directory 0700 and checked, socket born 0600, a stale socket replaced: listenPrivately). */
export async function createListener(name: Listener["name"], path: string, log: (line: string) => void): Promise<Listener> {
  const fd = await listenPrivately(path, () => listenUnix(path), log);
  return { name, fd, ownedPath: path };
}

/** Removes the socket file of a listener this process created. */
export function removeSocketFile(l: Listener): void {
  if (l.ownedPath !== undefined) unlinkIfExists(l.ownedPath);
}

/**
 * Prepares `listeners` to be inherited by a new process image of this pid: their fds become 3, 4,
 * … (FD_CLOEXEC cleared) and the returned variables describe them (added to the environment).
 */
export function passAcrossExec(listeners: readonly Listener[], pid: number): Record<string, string> {
  // First out of the way (close-on-exec copies above every target), then into place: a target
  // number may hold another listener.
  const moved = listeners.map((l) => dupAbove(l.fd, FIRST_FD + listeners.length));
  moved.forEach((fd, i) => keepAcrossExec(fd, FIRST_FD + i));
  return {
    LISTEN_PID: String(pid),
    LISTEN_FDS: String(listeners.length),
    LISTEN_FDNAMES: listeners.map((l) => (l.ownedPath !== undefined ? `${l.name}+owned` : l.name)).join(":"),
  };
}
