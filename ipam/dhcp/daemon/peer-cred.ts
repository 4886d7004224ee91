/**
 * Who is calling: the daemon answers only root and its own user (SO_PEERCRED on the accepted
 * unix socket). The socket file is 0600 already; this also holds when an operator
 * loosens its mode, passes a socket by activation, or shares it into a container.
 */
import type { Socket } from "node:net";
import * as libc from "../../../shared/sys/libc.ts";
import { SOL_SOCKET } from "../../../shared/sys/constants.ts";

// <asm-generic/socket.h>
const SO_PEERCRED = 17;

/** struct ucred (12 bytes): pid, uid, gid of the process that connected. */
export interface PeerCred {
  pid: number;
  uid: number;
  gid: number;
}

/** The kernel fd under a node:net socket (Bun exposes it on the handle), or undefined. */
export function socketFdOf(conn: Socket): number | undefined {
  const fd = (conn as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

/** getsockopt(SO_PEERCRED) on a connected unix socket. */
export function peerCredOf(fd: number): PeerCred {
  const buf = new Uint8Array(12);
  libc.getsockopt(fd, SOL_SOCKET, SO_PEERCRED, buf);
  const dv = new DataView(buf.buffer);
  return { pid: dv.getInt32(0, true), uid: dv.getUint32(4, true), gid: dv.getUint32(8, true) };
}

/**
 * Undefined when the peer may call, else the refusal text. Unknown credentials are refused
 * (fail closed).
 */
export function refusePeer(conn: Socket, ownUid: number): string | undefined {
  const fd = socketFdOf(conn);
  if (fd === undefined) return "permission denied: cannot determine the caller's credentials";
  let cred: PeerCred;
  try {
    cred = peerCredOf(fd);
  } catch (err) {
    return `permission denied: SO_PEERCRED failed: ${(err as Error).message}`;
  }
  if (cred.uid === 0 || cred.uid === ownUid) return undefined;
  return `permission denied: caller uid ${cred.uid} (pid ${cred.pid}) is neither root nor the daemon's user (uid ${ownUid})`;
}
