/**
 * Synchronous stdin/stdout for plugin processes, through libc read(2)/write(2) (shared/sys/file.ts):
 * - stdin is read with a loop that tolerates EAGAIN (an O_NONBLOCK pipe or a socket; node's
 *   `readFileSync(0)` throws EAGAIN there, and "/dev/stdin" cannot open a socket);
 * - output is written with a loop that also tolerates EAGAIN, so a large result is never truncated
 *   by an exit that follows. `process.stdout`/`process.stdin` are never touched: creating them
 *   costs milliseconds, and `process.stdout` loses output past 64 KiB when `process.exit` follows.
 * Neither needs node:fs, whose loading costs a plugin process 4-5 ms (docs/performance.md).
 */
import { readAll, writeAll } from "../sys/file.ts";

let pause: Int32Array | undefined;

/** Sleeps the thread briefly (no timers, no event loop): used only between EAGAIN retries. */
function backoff(): void {
  pause ??= new Int32Array(new SharedArrayBuffer(4));
  Atomics.wait(pause, 0, 0, 1);
}

/** Reads a file descriptor to EOF. EAGAIN waits and retries; EINTR retries. */
export function readAllSync(fd: number): Uint8Array {
  return readAll(fd, 65535, backoff);
}

/** Writes all of `text` to `fd`, retrying on EAGAIN/EINTR until every byte is out. */
export function writeAllSync(fd: number, text: string | Uint8Array): void {
  writeAll(fd, text, backoff);
}
