/** An owned file descriptor that is closed exactly once (explicitly or by `using`). */

import { close } from "./libc.ts";

export class OwnedFd {
  #fd: number;

  /** Takes ownership of `fd`; the caller must not close it itself. */
  constructor(fd: number) {
    if (!Number.isInteger(fd) || fd < 0) throw new RangeError(`invalid fd ${fd}`);
    this.#fd = fd;
  }

  /** The descriptor; throws once closed so a stale number is never reused by mistake. */
  get fd(): number {
    if (this.#fd < 0) throw new Error("fd already closed");
    return this.#fd;
  }

  /** True until {@link close} has run. */
  get isOpen(): boolean {
    return this.#fd >= 0;
  }

  /** Closes the descriptor; later calls do nothing. */
  close(): void {
    const fd = this.#fd;
    if (fd < 0) return;
    this.#fd = -1;
    close(fd);
  }

  /** Gives up ownership without closing: the descriptor, which the caller must close itself. */
  release(): number {
    const fd = this.fd;
    this.#fd = -1;
    return fd;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
