/**
 * Synchronous stdin/stdout for plugin processes:
 * - stdin is read with a `readSync` loop that tolerates EAGAIN (an O_NONBLOCK pipe or a socket;
 *   `readFileSync(0)` throws EAGAIN there, and "/dev/stdin" cannot open a socket);
 * - output is written with a `writeSync` loop that also tolerates EAGAIN, so a large result is never
 *   truncated by an exit that follows. `process.stdout`/`process.stdin` are never touched: creating
 *   them costs milliseconds, and `process.stdout` loses output past 64 KiB when `process.exit`
 *   follows.
 * node:fs is loaded on first use (loading it costs milliseconds; docs/performance.md).
 */
type Fs = typeof import("node:fs");
let fs: Fs | undefined;
function nodeFs(): Fs {
  return (fs ??= require("node:fs") as Fs);
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/** Sleeps the thread briefly (no timers, no event loop): used only between EAGAIN retries. */
function backoff(ms: number): void {
  Atomics.wait(pause, 0, 0, ms);
}

function isErrno(err: unknown, code: string): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === code;
}

/** Reads a file descriptor to EOF. EAGAIN waits and retries; EINTR retries. */
export function readAllSync(fd: number): Uint8Array {
  const chunks: Buffer[] = [];
  let total = 0;
  const buf = Buffer.allocUnsafe(65536);
  for (;;) {
    let n: number;
    try {
      n = nodeFs().readSync(fd, buf, 0, buf.length, null);
    } catch (err) {
      if (isErrno(err, "EAGAIN") || isErrno(err, "EWOULDBLOCK")) {
        backoff(1);
        continue;
      }
      if (isErrno(err, "EINTR")) continue;
      if (isErrno(err, "EOF")) break;
      throw err;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
    total += n;
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

/** Writes all of `text` to `fd`, retrying on EAGAIN/EINTR until every byte is out. */
export function writeAllSync(fd: number, text: string | Uint8Array): void {
  const data = typeof text === "string" ? Buffer.from(text, "utf8") : text;
  let off = 0;
  while (off < data.length) {
    try {
      off += nodeFs().writeSync(fd, data, off, data.length - off);
    } catch (err) {
      if (isErrno(err, "EAGAIN") || isErrno(err, "EWOULDBLOCK")) {
        backoff(1);
        continue;
      }
      if (isErrno(err, "EINTR")) continue;
      throw err;
    }
  }
}

/**
 * Writes one newline-terminated text to stdout through `console.log`, which Bun writes
 * synchronously and completely (also to an O_NONBLOCK pipe) and which needs no node:fs. Used for
 * VERSION, the most frequent call, so it costs no more than a hello-world (docs/performance.md).
 */
export function writeLineToStdout(text: string): void {
  if (!text.endsWith("\n")) throw new Error("writeLineToStdout: text must end with a newline");
  console.log(text.slice(0, -1));
}

