/**
 * Who is calling: the daemon answers only root and its own user (SO_PEERCRED on the accepted
 * unix socket). The socket file is 0600 already; this also holds when an operator
 * loosens its mode, passes a socket by activation, or shares it into a container.
 */
import type { Socket } from "node:net";
import { peerCredentials, type PeerCredentials } from "../../../shared/sys/process.ts";

/** The kernel fd under a node:net socket (Bun exposes it on the handle), or undefined. */
export function socketFdOf(conn: Socket): number | undefined {
  const fd = (conn as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

/**
 * Undefined when the peer may call, else the refusal text. Unknown credentials are refused
 * (fail closed).
 */
export function refusePeer(conn: Socket, ownUid: number): string | undefined {
  const fd = socketFdOf(conn);
  if (fd === undefined) return "permission denied: cannot determine the caller's credentials";
  let cred: PeerCredentials;
  try {
    cred = peerCredentials(fd);
  } catch (err) {
    return `permission denied: SO_PEERCRED failed: ${(err as Error).message}`;
  }
  if (cred.uid === 0 || cred.uid === ownUid) return undefined;
  return `permission denied: caller uid ${cred.uid} (pid ${cred.pid}) is neither root nor the daemon's user (uid ${ownUid})`;
}
