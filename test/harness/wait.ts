/** Waiting in tests for what happens in its own time (a kernel's deferred cleanup, a daemon's lease). */

/** Polls `cond` every 100 ms until it holds; throws after `ms`. */
export async function waitFor(what: string, cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}
