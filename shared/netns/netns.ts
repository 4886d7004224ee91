/**
 * An open handle on a network namespace (an fd on its nsfs/procfs file). Opening validates the
 * path like upstream `ns.GetNS`; entering happens only through {@link withNetNS} in `enter.ts`.
 */

import { O_RDONLY, NSFS_MAGIC, PROC_SUPER_MAGIC, THREAD_NETNS_PATH } from "../sys/constants.ts";
import { ENOENT, errnoMessage, SyscallError } from "../sys/errno.ts";
import { OwnedFd } from "../sys/fd.ts";
import { fstat, open } from "../sys/file.ts";
import { statfs } from "../sys/libc.ts";
import { NetnsError, NetnsNotFoundError, NotANetnsError } from "./errors.ts";


/**
 * Checks that `path` is a namespace file (upstream `IsNSorErr`): statfs magic must be nsfs or
 * procfs. Throws {@link NetnsNotFoundError}, {@link NotANetnsError} or {@link NetnsError}.
 */
export function checkNetnsPath(path: string): void {
  let magic: number;
  try {
    magic = statfs(path).type;
  } catch (err) {
    if (!(err instanceof SyscallError)) throw err;
    const msg = `failed to Statfs ${JSON.stringify(path)}: ${errnoMessage(err.errno)}`;
    if (err.errno === ENOENT) throw new NetnsNotFoundError(path, msg, { cause: err });
    throw new NetnsError(path, msg, { cause: err });
  }
  if (magic !== NSFS_MAGIC && magic !== PROC_SUPER_MAGIC) throw new NotANetnsError(path, magic);
}

/** Opens `path` read-only with O_CLOEXEC (SyscallError "open" on failure). */
function openNsFile(path: string): OwnedFd {
  return new OwnedFd(open(path, O_RDONLY));
}

export class NetNS {
  /** The path this namespace was opened from. */
  readonly path: string;
  readonly #file: OwnedFd;

  private constructor(path: string, file: OwnedFd) {
    this.path = path;
    this.#file = file;
  }

  /**
   * Opens the namespace at `path` (e.g. `/var/run/netns/x` or `/proc/<pid>/ns/net`) after checking
   * it with {@link checkNetnsPath}.
   */
  static open(path: string): NetNS {
    checkNetnsPath(path);
    let file: OwnedFd;
    try {
      file = openNsFile(path);
    } catch (err) {
      if (err instanceof SyscallError && err.errno === ENOENT) {
        throw new NetnsNotFoundError(path, err.message, { cause: err });
      }
      throw new NetnsError(path, err instanceof Error ? err.message : String(err), { cause: err });
    }
    return new NetNS(path, file);
  }

  /** The calling thread's current network namespace. */
  static current(): NetNS {
    return new NetNS(THREAD_NETNS_PATH, openNsFile(THREAD_NETNS_PATH));
  }

  /** The open descriptor (for setns, IFLA_NET_NS_FD, ...). Throws after close. */
  get fd(): number {
    return this.#file.fd;
  }

  /** True until closed. */
  get isOpen(): boolean {
    return this.#file.isOpen;
  }

  /** Closes the descriptor. Idempotent. */
  close(): void {
    this.#file.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** True when both handles refer to the same namespace (same nsfs device and inode). */
export function isSameNetNS(a: NetNS, b: NetNS): boolean {
  const sa = fstat(a.fd);
  const sb = fstat(b.fd);
  return sa.dev === sb.dev && sa.ino === sb.ino;
}
