/**
 * Go's `*fs.PathError` for a failed file operation: the message reads `<op> <path>: <errno text>`
 * (`open /proc/sys/net/x: no such file or directory`), as upstream's plugins print them. Built from
 * the error the call threw (a SyscallError of shared/sys, or a node:fs error); the original stays
 * reachable as `cause`.
 */
import { errnoMessage } from "./errno.ts";

export class PathError extends Error {
  override name = "PathError";
  /** The operation (`open`, `lstat`, …). */
  readonly op: string;
  readonly path: string;
  /** Positive errno, or 0 when the cause carried none. */
  readonly errno: number;

  constructor(op: string, path: string, cause: unknown) {
    const raw = (cause as { errno?: unknown } | undefined)?.errno;
    const errno = typeof raw === "number" ? Math.abs(raw) : 0;
    const why = errno !== 0 ? errnoMessage(errno) : cause instanceof Error ? cause.message : String(cause);
    super(`${op} ${path}: ${why}`, { cause });
    this.op = op;
    this.path = path;
    this.errno = errno;
  }
}
