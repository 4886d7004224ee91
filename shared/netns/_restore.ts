/**
 * Returning the thread to its original netns. Failure here is unrecoverable: continuing would run
 * the rest of the process (stdout, IPAM, state files, other handles) in the wrong namespace, so the
 * process writes a message to stderr and aborts — the counterpart of Go's `ns.Do` leaving the
 * broken OS thread locked so the runtime discards it.
 */

import { CLONE_NEWNET } from "../sys/constants.ts";
import { writeAll } from "../sys/file.ts";
import { setns } from "../sys/libc.ts";

/** setns back to `origFd`, or report on stderr and abort the process. */
export function restoreOrAbort(origFd: number, enteredPath: string): void {
  try {
    setns(origFd, CLONE_NEWNET);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    try {
      writeAll(2, `fatal: failed to switch back to the original network namespace after entering ${JSON.stringify(enteredPath)}: ${why}\n`);
    } finally {
      process.abort();
    }
  }
}
