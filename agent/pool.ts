/**
 * The agent's worker threads (worker.ts) and who gets one: admission (docs/resident.md, "Failure
 * modes and limits").
 *
 * A call is accepted only once a thread is its own: an idle thread (the most recently idle one, its
 * code is the warmest), or a thread started for it while fewer than `max` run. Otherwise it is not
 * accepted yet, and its shim, which has not sent its stdin, can still run the standalone
 * executable. It waits, unaccepted, only where waiting can pay: behind a thread that works (not one
 * that waits on another process: a delegate, the dhcp daemon, a lock held by someone else, or the
 * caller's own stdin), at most `admissionWaitMs`, and never with more than `maxWaiting` others.
 * When no thread works, or when the wait is over, the call is refused at once and runs standalone.
 * So a pool whose every thread hangs in an IPAM that never answers still answers every other call
 * at once: with a refusal.
 *
 * A waiting call's caller is told that it waits (`queued`), when it starts to and every
 * QUEUED_RENEW_MS while it does: its shim gives up on an agent that stops saying so, and keeps
 * waiting for one that does. Waiting pays in a burst: a call served here costs a fraction of the
 * CPU of the same call standalone, and in a burst the CPU is what every call waits for, so a
 * refusal there makes every other call slower too.
 *
 * Calls of one attachment (container and interface) run one after another, in the order they
 * came: a runtime that gave up on an ADD and sends DEL gets the DEL once the ADD has ended. A call
 * whose caller goes away (the shim was killed at the runtime's timeout) is ended as a killed
 * process would be (`gone`: its waits end, its delegates are killed), so the DEL behind it starts
 * within moments; a call that waits for its attachment longer than `admissionWaitMs` is refused.
 * A call running longer than `callTimeoutMs` is ended too.
 *
 * A thread that retires (it saw an uncaught error) or dies is replaced; a call it was running ends
 * with an internal error (999), never the agent. Threads beyond `min` that stay idle for `idleMs`
 * end.
 */
import { END, EndReason, WAIT_SINCE, WAITING, ageMs, bump, clockMs, newCallCells, newReleasesCell } from "./call-cells.ts";
import type { CallTelemetrySettings, FromWorker, StdinError, ToWorker } from "./messages.ts";
import type { CallReport } from "../shared/telemetry/report.ts";
import { Refusal } from "./refusal.ts";

/** One call, as the pool sees it: its inputs, how it is answered, and where its stdin comes from. */
export interface Job {
  argv: string[];
  /** The plugin the call runs (registry/registry.ts `pluginNameOf` of `argv`, worked out once by the agent). */
  plugin: string;
  env: Record<string, string>;
  pid: number;
  umask: number;
  /** The attachment the call acts on (calls with the same one never overlap); undefined: none. */
  attachment?: string | undefined;
  /** A thread is the call's: tell the caller (its stdin is asked for). Called at most once, before `stdin`. */
  accept(): void;
  /** The call waits, unaccepted, for a thread or its attachment: tell the caller (when it starts to wait, then every QUEUED_RENEW_MS). */
  queued(): void;
  /** No thread for the call: tell the caller, whose shim then runs standalone. Called at most once, instead of `accept`. */
  refuse(reason: Refusal): void;
  /** The call's stdin (sent to its thread when complete): the bytes, or why they cannot be had. */
  stdin(): Promise<Uint8Array | StdinError>;
  /** Since when (clockMs, call-cells.ts) the accepted call's thread waits for its stdin; undefined once it has all arrived. */
  stdinPendingSince(): number | undefined;
  /** The call ended (exactly once, after `accept`). */
  finish(out: CallOutcome): void;
}

/** How a call ended: its answer, and its invocations' telemetry (none when it records none, or its thread died). */
export interface CallOutcome {
  stdout: string;
  stderr: string;
  status: number;
  reports: CallReport[];
}

/** What the offerer of a job keeps: to say that its caller went away. */
export interface Offered {
  /** The caller went away: an unaccepted call is dropped, a running one is ended. */
  gone(): void;
}

export interface PoolOptions {
  min: number;
  max: number;
  idleMs: number;
  /** The longest a call waits, unaccepted, for a thread or for its attachment before it is refused. */
  admissionWaitMs: number;
  /** The most calls waiting unaccepted at once; more are refused at once. */
  maxWaiting: number;
  /** A call running longer is ended (0: no limit). */
  callTimeoutMs: number;
  /** A new worker thread. */
  spawn(): Worker;
  /** How calls record their telemetry (undefined: they record none). */
  telemetry?: CallTelemetrySettings | undefined;
  log(line: string): void;
}

/** A call and what the pool keeps about it. */
interface Call {
  id: number;
  job: Job;
  /** Its admission deadline (waiting) or its time limit (running). */
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Its thread, once accepted. */
  slot: Slot | undefined;
  /** Why it was ended, once it was. */
  ended: EndReason | undefined;
  /** While it waits: when (clockMs) its caller was last told so. */
  toldQueuedAt: number;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  /** Shared with the thread (call-cells.ts). */
  cells: Int32Array;
  /** The call this thread is reserved for or runs. */
  call: Call | undefined;
  /** Posted to the thread (not merely reserved). */
  running: boolean;
  idleTimer: ReturnType<typeof setTimeout> | undefined;
}

/** While calls wait unaccepted, how often the pool looks whether any thread still works. */
const STALL_CHECK_MS = 20;
/**
 * How often a waiting call's caller is told again that it waits: well inside the shim's budget
 * between two such messages (REQUEST_BUDGET_MS, shim/cni-shim.c), so that only an agent that no
 * longer runs its event loop loses its waiting calls to the shims' fallback.
 */
export const QUEUED_RENEW_MS = 500;
/**
 * A thread waiting on another process or on its caller for this long counts as not working. A
 * shorter wait is part of any call's work (the caller's stdin a moment after the acceptance, a lock
 * held for a millisecond by another call, a delegate's exec); a call hung in one waits this long
 * before it holds anyone back, and then no longer does.
 */
const OPEN_ENDED_WAIT_MS = 100;

/** The error JSON of a call whose thread died under it. */
function lostCall(detail: string): string {
  return JSON.stringify({ code: 999, msg: "the agent's worker thread running this call ended unexpectedly", details: detail }, null, 4);
}

export class WorkerPool {
  readonly #opts: PoolOptions;
  readonly #slots = new Set<Slot>();
  /** Idle, ready slots; the last one is the most recently used. */
  readonly #idle: Slot[] = [];
  /** Calls not accepted yet, in the order they came. */
  readonly #waiting: Call[] = [];
  /** Attachments with a call accepted. */
  readonly #busy = new Set<string>();
  /** Shared by every thread: bumped by each lock release, and here by each call ended (call-cells.ts). */
  readonly #releases = newReleasesCell();
  #stallTimer: ReturnType<typeof setInterval> | undefined;
  #nextId = 1;
  #closed = false;
  #drained: (() => void) | undefined;

  constructor(opts: PoolOptions) {
    this.#opts = opts;
    for (let i = 0; i < opts.min; i++) this.#start(undefined);
  }

  /** Calls accepted (running, or reserved a thread that is starting) or waiting to be. */
  get inFlight(): number {
    let accepted = 0;
    for (const s of this.#slots) if (s.call !== undefined) accepted++;
    return this.#waiting.length + accepted;
  }

  get threads(): number {
    return this.#slots.size;
  }

  /** Takes `job`: accepts it now, later, or refuses it (always one of them, soon). */
  offer(job: Job): Offered {
    const call: Call = { id: this.#nextId++, job, timer: undefined, slot: undefined, ended: undefined, toldQueuedAt: 0 };
    const offered: Offered = { gone: () => this.#gone(call) };
    if (this.#closed) {
      job.refuse(new Refusal("draining", "the agent is stopping"));
      return offered;
    }
    if (this.#admit(call)) return offered;
    const why = this.#whyNotWait(call);
    if (why !== undefined) {
      job.refuse(why);
      return offered;
    }
    this.#waiting.push(call);
    call.timer = setTimeout(() => this.#refuseWaiting(call, this.#waitOverReason(call)), this.#opts.admissionWaitMs);
    call.toldQueuedAt = clockMs();
    job.queued();
    this.#stallTimer ??= setInterval(() => this.#whileCallsWait(), STALL_CHECK_MS);
    return offered;
  }

  /** Resolves when no call is running or waiting. */
  drained(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#drained = resolve;
    });
  }

  /** Ends every thread (after drained(): no call is lost); calls still waiting are refused. */
  close(): void {
    this.#closed = true;
    for (const call of [...this.#waiting]) this.#refuseWaiting(call, new Refusal("draining", "the agent is stopping"));
    for (const slot of this.#slots) {
      clearTimeout(slot.idleTimer);
      clearTimeout(slot.call?.timer);
      slot.worker.terminate();
    }
    this.#slots.clear();
    this.#idle.length = 0;
  }

  /** Gives `call` a thread if one is its to have now (and accepts it); false otherwise. */
  #admit(call: Call): boolean {
    const { attachment } = call.job;
    if (attachment !== undefined && this.#busy.has(attachment)) return false;
    let slot = this.#idle.pop();
    if (slot === undefined) {
      if (this.#slots.size >= this.#opts.max) return false;
      slot = this.#start(call);
    } else {
      clearTimeout(slot.idleTimer);
      slot.call = call;
    }
    call.slot = slot;
    if (attachment !== undefined) this.#busy.add(attachment);
    call.job.accept();
    if (this.#opts.callTimeoutMs > 0) call.timer = setTimeout(() => this.#end(call, EndReason.TIME_UP), this.#opts.callTimeoutMs);
    if (slot.ready) this.#dispatch(slot);
    return true;
  }

  /** Why `call` may not wait for a thread or its attachment (undefined: it may). */
  #whyNotWait(call: Call): Refusal | undefined {
    if (this.#waiting.length >= this.#opts.maxWaiting) return new Refusal("busy", `${this.#waiting.length} calls already wait for a worker thread`);
    const { attachment } = call.job;
    if (attachment !== undefined && this.#busy.has(attachment)) return undefined;
    return this.#stalled() ? this.#stalledReason() : undefined;
  }

  /**
   * True when every thread has a call and none of them works: each has waited on another process
   * or on its caller for OPEN_ENDED_WAIT_MS at least.
   */
  #stalled(): boolean {
    if (this.#idle.length > 0 || this.#slots.size < this.#opts.max) return false;
    const now = clockMs();
    const waitedLong = (since: number | undefined) => since !== undefined && since !== 0 && ageMs(since, now) >= OPEN_ENDED_WAIT_MS;
    for (const slot of this.#slots) {
      const call = slot.call;
      if (call === undefined || !slot.running) return false;
      if (!waitedLong(Atomics.load(slot.cells, WAIT_SINCE)) && !waitedLong(call.job.stdinPendingSince())) return false;
    }
    return true;
  }

  #stalledReason(): Refusal {
    return new Refusal("stalled", `all ${this.#slots.size} worker threads run calls that wait on other processes`);
  }

  #waitOverReason(call: Call): Refusal {
    const { attachment } = call.job;
    const ms = this.#opts.admissionWaitMs;
    return new Refusal(
      "timeout",
      attachment !== undefined && this.#busy.has(attachment) ? `a call of the same attachment still runs after ${ms} ms` : `no worker thread free within ${ms} ms`,
    );
  }

  /**
   * While calls wait for a thread: those that wait for nothing (no thread works) are refused now;
   * the callers of the others are told again that they wait, when it is time to.
   */
  #whileCallsWait(): void {
    if (this.#waiting.length === 0) {
      clearInterval(this.#stallTimer);
      this.#stallTimer = undefined;
      return;
    }
    if (this.#stalled()) {
      for (const call of [...this.#waiting]) {
        const { attachment } = call.job;
        if (attachment === undefined || !this.#busy.has(attachment)) this.#refuseWaiting(call, this.#stalledReason());
      }
    }
    const now = clockMs();
    for (const call of this.#waiting) {
      if (ageMs(call.toldQueuedAt, now) < QUEUED_RENEW_MS) continue;
      call.toldQueuedAt = now;
      call.job.queued();
    }
  }

  #refuseWaiting(call: Call, reason: Refusal): void {
    const at = this.#waiting.indexOf(call);
    if (at < 0) return;
    this.#waiting.splice(at, 1);
    clearTimeout(call.timer);
    call.job.refuse(reason);
    this.#checkDrained();
  }

  /** Accepts the calls waiting that may start now, in the order they came. */
  #admitWaiting(): void {
    for (let i = 0; i < this.#waiting.length; ) {
      const call = this.#waiting[i]!;
      const deadline = call.timer;
      if (this.#admit(call)) {
        clearTimeout(deadline);
        this.#waiting.splice(i, 1);
      } else {
        i++;
      }
    }
  }

  /** The caller of `call` went away. */
  #gone(call: Call): void {
    if (call.slot === undefined) {
      const at = this.#waiting.indexOf(call);
      if (at >= 0) {
        this.#waiting.splice(at, 1);
        clearTimeout(call.timer);
        this.#checkDrained();
      }
      return;
    }
    this.#end(call, EndReason.CALLER_GONE);
  }

  /** Ends the running (or reserved) `call`: its thread's waits end now (call-cells.ts, worker-loop.ts). */
  #end(call: Call, reason: EndReason): void {
    const slot = call.slot;
    if (slot === undefined || slot.call !== call || call.ended !== undefined) return;
    call.ended = reason;
    if (reason === EndReason.TIME_UP) this.#opts.log(`call of ${call.job.argv[0] ?? ""} (pid ${call.job.pid}) ended: it ran longer than ${this.#opts.callTimeoutMs / 1000} s`);
    Atomics.store(slot.cells, END, reason);
    bump(this.#releases); // wakes the call if it sleeps in a lock's back-off
    if (slot.running) this.#post(slot, { t: "end", id: call.id, reason });
  }

  #start(call: Call | undefined): Slot {
    const slot: Slot = { worker: this.#opts.spawn(), ready: false, cells: newCallCells(), call, running: false, idleTimer: undefined };
    this.#slots.add(slot);
    slot.worker.onmessage = (event: MessageEvent<FromWorker>) => this.#onMessage(slot, event.data);
    slot.worker.onerror = (event: ErrorEvent) => this.#lose(slot, `worker error: ${event.message}`);
    slot.worker.addEventListener("close", () => this.#lose(slot, "the thread exited"));
    return slot;
  }

  #post(slot: Slot, message: ToWorker): void {
    slot.worker.postMessage(message);
  }

  #onMessage(slot: Slot, msg: FromWorker): void {
    switch (msg.t) {
      case "ready":
        slot.ready = true;
        if (slot.call !== undefined) this.#dispatch(slot);
        else this.#becomeIdle(slot);
        return;
      case "done": {
        const call = slot.call;
        if (call?.id !== msg.id) return;
        this.#release(slot);
        call.job.finish({ stdout: msg.stdout, stderr: msg.stderr, status: msg.status, reports: msg.reports });
        if (msg.retire) {
          this.#opts.log(`worker thread retired after an uncaught error in a call of ${call.job.argv[0]}`);
          this.#remove(slot);
          slot.worker.terminate();
          if (this.#slots.size < this.#opts.min) this.#start(undefined);
          this.#admitWaiting();
        } else {
          this.#becomeIdle(slot);
        }
        this.#checkDrained();
        return;
      }
    }
  }

  #becomeIdle(slot: Slot): void {
    this.#idle.push(slot);
    this.#admitWaiting();
    if (!this.#idle.includes(slot) || this.#slots.size <= this.#opts.min) return;
    slot.idleTimer = setTimeout(() => {
      const at = this.#idle.indexOf(slot);
      if (at < 0 || this.#slots.size <= this.#opts.min) return;
      this.#idle.splice(at, 1);
      this.#remove(slot);
      slot.worker.terminate();
    }, this.#opts.idleMs);
    slot.idleTimer.unref?.();
  }

  /** Runs the call `slot` is reserved for (the slot is ready). */
  #dispatch(slot: Slot): void {
    const call = slot.call;
    if (call === undefined) return;
    // A call ended while its thread was starting starts ended (the worker's scope reads END first).
    Atomics.store(slot.cells, END, call.ended ?? 0);
    Atomics.store(slot.cells, WAITING, 0);
    Atomics.store(slot.cells, WAIT_SINCE, 0);
    slot.running = true;
    const { plugin, env, pid, umask } = call.job;
    this.#post(slot, {
      t: "run",
      id: call.id,
      plugin,
      env,
      pid,
      umask,
      cells: slot.cells.buffer as SharedArrayBuffer,
      releases: this.#releases.buffer as SharedArrayBuffer,
      telemetry: this.#opts.telemetry,
    });
    // The call's stdin follows as soon as it is complete, unasked: the call finds it there when it reads.
    void call.job.stdin().then((got) => {
      if (slot.call !== call) return;
      if (got instanceof Uint8Array) this.#post(slot, { t: "stdin", id: call.id, data: got });
      else this.#post(slot, { t: "stdin-error", id: call.id, error: got });
    });
  }

  /** The slot's call ended: its attachment is free. */
  #release(slot: Slot): void {
    const call = slot.call;
    slot.call = undefined;
    slot.running = false;
    if (call === undefined) return;
    clearTimeout(call.timer);
    if (call.job.attachment !== undefined) this.#busy.delete(call.job.attachment);
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
    const call = slot.call;
    this.#release(slot);
    call?.job.finish({ stdout: lostCall(why), stderr: `${why}\n`, status: 1, reports: [] });
    if (this.#slots.size < this.#opts.min) this.#start(undefined);
    this.#admitWaiting();
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
