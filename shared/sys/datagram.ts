/**
 * Unix datagram sockets for messages that may be lost: a sender that never waits (a full or absent
 * receiver drops the message) and a receiver read without blocking. Used for the reports standalone
 * plugin processes send the resident agent (agent/report-socket.ts).
 */
import { AF_UNIX, MSG_DONTWAIT, SO_RCVBUF, SO_RCVBUFFORCE, SOCK_CLOEXEC, SOCK_DGRAM, SOCK_NONBLOCK, SOL_SOCKET } from "./constants.ts";
import { EAGAIN, SyscallError } from "./errno.ts";
import { bind, close, recvfrom, sendto, setsockoptInt, socket } from "./libc.ts";
import { unixAddress } from "./sockaddr.ts";

/**
 * Sends `message` to the datagram socket at `path` without waiting: false when it is not sent (no
 * socket there, nobody reading it, its buffer full, the message too large). Never throws.
 */
export function sendDatagram(path: string, message: Uint8Array): boolean {
  let fd = -1;
  try {
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    return sendto(fd, message, MSG_DONTWAIT, unixAddress(path)) === message.byteLength;
  } catch {
    return false;
  } finally {
    if (fd >= 0) close(fd);
  }
}

/**
 * A non-blocking datagram socket bound at `path` (which must not exist; its mode follows the
 * umask), its receive buffer `bufferBytes` where the kernel allows. Returns its fd (close-on-exec).
 */
export function bindDatagram(path: string, bufferBytes: number): number {
  const fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  try {
    bind(fd, unixAddress(path));
    try {
      setsockoptInt(fd, SOL_SOCKET, SO_RCVBUFFORCE, bufferBytes);
    } catch {
      setsockoptInt(fd, SOL_SOCKET, SO_RCVBUF, bufferBytes);
    }
  } catch (err) {
    close(fd);
    throw err;
  }
  return fd;
}

/** One datagram waiting on `fd` into `buf`: its length (truncated to the buffer), or -1 when none waits. */
export function receiveDatagram(fd: number, buf: Uint8Array): number {
  try {
    return Math.min(recvfrom(fd, buf, MSG_DONTWAIT), buf.byteLength);
  } catch (err) {
    if (err instanceof SyscallError && err.errno === EAGAIN) return -1;
    throw err;
  }
}
