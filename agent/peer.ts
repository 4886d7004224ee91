/**
 * Whether a caller may be served by the agent: only when a fresh plugin process started by that
 * caller would see what the agent sees (docs/resident.md, "When the agent serves a call").
 *
 * - The caller is the process the kernel says connected (SO_PEERCRED), and the pid it sent agrees.
 * - It runs as root or as the agent's own user.
 * - Its network namespace, mount namespace and root directory are the agent's own (kernel identity:
 *   device and inode of /proc/<pid>/ns/net, /proc/<pid>/ns/mnt and /proc/<pid>/root). A caller under
 *   `ip netns exec`, in a container or a chroot is not served; its shim runs the standalone
 *   executable where it is.
 * Its working directory and umask are not checked: the worker adopts both for the call.
 */
import { stat, type FileStat } from "../shared/sys/file.ts";
import { peerCredentials, type PeerCredentials } from "../shared/sys/process.ts";

/** What makes two processes see the same files and network. */
export interface Identity {
  net: FileStat;
  mnt: FileStat;
  root: FileStat;
}

/** The identity of process `pid` ("self" for the agent), read from /proc. */
export function identityOf(pid: number | "self"): Identity {
  return { net: stat(`/proc/${pid}/ns/net`), mnt: stat(`/proc/${pid}/ns/mnt`), root: stat(`/proc/${pid}/root`) };
}

function same(a: FileStat, b: FileStat): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** The agent's own identity and user, against which callers are judged. */
export interface Self {
  identity: Identity;
  uid: number;
}

/** Why a caller is not served ("" when it is). */
export function refusalFor(fd: number, claimedPid: number, self: Self, credentials: (fd: number) => PeerCredentials = peerCredentials): string {
  let cred: PeerCredentials;
  try {
    cred = credentials(fd);
  } catch (err) {
    return `no peer credentials: ${(err as Error).message}`;
  }
  if (cred.pid !== claimedPid) return `the caller says pid ${claimedPid}, the kernel says ${cred.pid}`;
  if (cred.uid !== 0 && cred.uid !== self.uid) return `uid ${cred.uid} is neither root nor the agent's (${self.uid})`;
  let theirs: Identity;
  try {
    theirs = identityOf(cred.pid);
  } catch (err) {
    return `pid ${cred.pid} cannot be examined: ${(err as Error).message}`;
  }
  if (!same(theirs.net, self.identity.net)) return `pid ${cred.pid} is in another network namespace`;
  if (!same(theirs.mnt, self.identity.mnt)) return `pid ${cred.pid} is in another mount namespace`;
  if (!same(theirs.root, self.identity.root)) return `pid ${cred.pid} has another root directory`;
  return "";
}
