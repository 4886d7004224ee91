/**
 * The agent's worker threads (worker.ts): each runs one call at a time. Calls go to the most
 * recently idle thread (its code is the warmest); when none is idle a thread is started, up to
 * `max`, and the call waits for whichever thread frees up or starts first. Threads beyond `min`
 * that stay idle for `idleMs` end. A thread that retires (it saw an uncaught error) or dies is
 * replaced; a call it was running ends with an internal error (999), never the agent.
 *
 * Calls of one attachment run one after another, in the order they came: a runtime that gave up on
 * an ADD (it killed the shim at its timeout) and sends DEL gets the DEL after the ADD has ended, as
 * a killed plugin process would have ended, so the DEL removes everything the ADD made.
 */
import type { FromWorker, StdinError, ToWorker } from "./messages.ts";

/** One call, as the pool sees it: its inputs, and where its stdin comes from and its answer goes. */
export interface Job {
  argv: string[];
  env: Record<string, string>;
  pid: number;
  umask: number;
  /** The attachment the call acts on (calls with the same one never overlap); undefined: none. */
  attachment?: string | undefined;
  /** The call's stdin (sent to its thread when complete): the bytes, or why they cannot be had. */
  stdin(): Promise<Uint8Array | StdinError>;
  /** The call ended (exactly once). */
  finish(out: { stdout: string; stderr: string; status: number }): void;
}

export interface PoolOptions {
  min: number;
  max: number;
  idleMs: number;
  /** A new worker thread. */
  spawn(): Worker;
  log(line: string): void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job: { id: number; job: Job } | undefined;
  idleTimer: ReturnType<typeof setTimeout> | undefined;
}

/** The error JSON of a call whose thread died under it. */
function lostCall(detail: string): string {
  return JSON.stringify({ code: 999, msg: "the agent's worker thread running this call ended unexpectedly", details: detail }, null, 4);
}

export class WorkerPool {
  readonly #opts: PoolOptions;
  readonly #slots = new Set<Slot>();
  /** Idle, ready slots; the last one is the most recently used. */
  readonly #idle: Slot[] = [];
  readonly #queue: { id: number; job: Job }[] = [];
  /** Attachments with a call running. */
  readonly #busy = new Set<string>();
  #nextId = 1;
  #closed = false;
  #drained: (() => void) | undefined;

  constructor(opts: PoolOptions) {
    this.#opts = opts;
    for (let i = 0; i < opts.min; i++) this.#start();
  }

  /** Calls running or waiting. */
  get inFlight(): number {
    return this.#queue.length + [...this.#slots].filter((s) => s.job !== undefined).length;
  }

  get threads(): number {
    return this.#slots.size;
  }

  /** Runs `job` on a thread (now, or when one frees up). */
  run(job: Job): void {
    if (this.#closed) throw new Error("the pool is closed");
    this.#queue.push({ id: this.#nextId++, job });
    if (this.#runnable() < 0) return;
    const slot = this.#idle.pop();
    if (slot !== undefined) this.#dispatch(slot);
    else if (this.#slots.size < this.#opts.max) this.#start();
  }

  /** Where in the queue the first call that may start now is (-1: none; the others wait for their attachment). */
  #runnable(): number {
    return this.#queue.findIndex((q) => q.job.attachment === undefined || !this.#busy.has(q.job.attachment));
  }

  /** Resolves when no call is running or waiting. */
  drained(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#drained = resolve;
    });
  }

  /** Ends every thread (after drained(): no call is lost). */
  close(): void {
    this.#closed = true;
    for (const slot of this.#slots) {
      clearTimeout(slot.idleTimer);
      slot.worker.terminate();
    }
    this.#slots.clear();
    this.#idle.length = 0;
  }

  #start(): void {
    const slot: Slot = { worker: this.#opts.spawn(), ready: false, job: undefined, idleTimer: undefined };
    this.#slots.add(slot);
    slot.worker.onmessage = (event: MessageEvent<FromWorker>) => this.#onMessage(slot, event.data);
    slot.worker.onerror = (event: ErrorEvent) => this.#lose(slot, `worker error: ${event.message}`);
    slot.worker.addEventListener("close", () => this.#lose(slot, "the thread exited"));
  }

  #post(slot: Slot, message: ToWorker): void {
    slot.worker.postMessage(message);
  }

  #onMessage(slot: Slot, msg: FromWorker): void {
    switch (msg.t) {
      case "ready":
        slot.ready = true;
        this.#becomeIdle(slot);
        return;
      case "done": {
        const running = slot.job;
        if (running?.id !== msg.id) return;
        this.#release(slot);
        running.job.finish({ stdout: msg.stdout, stderr: msg.stderr, status: msg.status });
        if (msg.retire) {
          this.#opts.log(`worker thread retired after an uncaught error in a call of ${running.job.argv[0]}`);
          this.#remove(slot);
          slot.worker.terminate();
          if (this.#slots.size < this.#opts.min || this.#queue.length > 0) this.#start();
        } else {
          this.#becomeIdle(slot);
        }
        this.#checkDrained();
        return;
      }
    }
  }

  #becomeIdle(slot: Slot): void {
    if (this.#runnable() >= 0) {
      this.#dispatch(slot);
      return;
    }
    this.#idle.push(slot);
    if (this.#slots.size > this.#opts.min) {
      slot.idleTimer = setTimeout(() => {
        const at = this.#idle.indexOf(slot);
        if (at < 0 || this.#slots.size <= this.#opts.min) return;
        this.#idle.splice(at, 1);
        this.#remove(slot);
        slot.worker.terminate();
      }, this.#opts.idleMs);
      slot.idleTimer.unref?.();
    }
  }

  /** Starts the first runnable call on `slot` (idle and ready); callers check that there is one (#runnable). */
  #dispatch(slot: Slot): void {
    const at = this.#runnable();
    if (at < 0) return;
    const [next] = this.#queue.splice(at, 1);
    if (next === undefined) return;
    clearTimeout(slot.idleTimer);
    slot.job = next;
    if (next.job.attachment !== undefined) this.#busy.add(next.job.attachment);
    const { argv, env, pid, umask } = next.job;
    this.#post(slot, { t: "run", id: next.id, argv, env, pid, umask });
    // The call's stdin follows as soon as it is complete, unasked: the call finds it there when it reads.
    void next.job.stdin().then((got) => {
      if (slot.job?.id !== next.id) return;
      if (got instanceof Uint8Array) this.#post(slot, { t: "stdin", id: next.id, data: got });
      else this.#post(slot, { t: "stdin-error", id: next.id, error: got });
    });
  }

  /** The slot's call ended: its attachment is free, and a call waiting for it may start on an idle thread. */
  #release(slot: Slot): void {
    const attachment = slot.job?.job.attachment;
    slot.job = undefined;
    if (attachment === undefined) return;
    this.#busy.delete(attachment);
    if (this.#runnable() < 0) return;
    const idle = this.#idle.pop();
    if (idle !== undefined) this.#dispatch(idle);
  }

  #remove(slot: Slot): void {
    clearTimeout(slot.idleTimer);
    this.#slots.delete(slot);
    const at = this.#idle.indexOf(slot);
    if (at >= 0) this.#idle.splice(at, 1);
  }

  /** A thread died: its call (if any) fails with 999, and it is replaced. */
  #lose(slot: Slot, why: string): void {
    if (!this.#slots.has(slot) || this.#closed) return;
    this.#remove(slot);
    this.#opts.log(`worker thread lost: ${why}`);
    const running = slot.job;
    this.#release(slot);
    running?.job.finish({ stdout: lostCall(why), stderr: `${why}\n`, status: 1 });
    if (this.#slots.size < this.#opts.min || this.#queue.length > 0) this.#start();
    this.#checkDrained();
  }

  #checkDrained(): void {
    if (this.#drained !== undefined && this.inFlight === 0) {
      const resolve = this.#drained;
      this.#drained = undefined;
      resolve();
    }
  }
}
