/**
 * Admission (pool.ts) with scripted threads: a call is accepted only once a thread is its own; it
 * waits unaccepted only behind a thread that works, for at most the admission bound; it is refused
 * at once when every thread waits on another process or on its caller; the calls of one attachment
 * run in order, and a call whose caller is gone is ended so the next one starts. (The real
 * threads, through the protocol: agent.test.ts.)
 */
import { describe, expect, test } from "bun:test";
import { END, EndReason, WAIT_SINCE, WAITING, clockMs } from "./call-cells.ts";
import type { FromWorker, ToWorker } from "./messages.ts";
import { QUEUED_RENEW_MS, WorkerPool, type Job, type PoolOptions } from "./pool.ts";

/** A thread the test drives: it says ready when told, and answers the calls it was given when told. */
class ScriptedThread {
  onmessage: ((event: MessageEvent<FromWorker>) => void) | undefined;
  onerror: ((event: ErrorEvent) => void) | undefined;
  readonly runs: Extract<ToWorker, { t: "run" }>[] = [];
  readonly ends: Extract<ToWorker, { t: "end" }>[] = [];
  terminated = false;
  addEventListener(): void {}
  postMessage(msg: ToWorker): void {
    if (msg.t === "run") this.runs.push(msg);
    if (msg.t === "end") this.ends.push(msg);
  }
  terminate(): void {
    this.terminated = true;
  }
  ready(): void {
    this.onmessage?.({ data: { t: "ready" } } as MessageEvent<FromWorker>);
  }
  /** The cells shared with the pool for the current call. */
  cells(): Int32Array {
    return new Int32Array(this.runs.at(-1)!.cells);
  }
  /** Its current call now waits on another process (a delegate), since `msAgo` ms, or works again. */
  waiting(on: boolean, msAgo = 1_000): void {
    Atomics.store(this.cells(), WAITING, on ? 1 : 0);
    Atomics.store(this.cells(), WAIT_SINCE, on ? clockMs() - msAgo : 0);
  }
  done(status = 0): void {
    const id = this.runs.at(-1)!.id;
    this.onmessage?.({ data: { t: "done", id, stdout: `out ${id}`, stderr: "", status, retire: false } } as MessageEvent<FromWorker>);
  }
}

/** A call as the pool's offerer sees it: what it was told, in order. */
class Caller {
  readonly events: string[] = [];
  /** Since when its stdin is awaited (undefined: it has arrived). */
  stdinSince: number | undefined = undefined;
  /** How often it was told that it waits (kept out of `events`: how often depends on time). */
  queued = 0;
  readonly env: Record<string, string>;
  constructor(env: Record<string, string> = {}) {
    this.env = env;
  }
  job(attachment?: string): Job {
    return {
      argv: ["/opt/cni/bin/loopback"],
      plugin: "loopback",
      env: this.env,
      pid: 1,
      umask: 0o022,
      attachment,
      accept: () => this.events.push("accepted"),
      queued: () => this.queued++,
      refuse: (r) => this.events.push(`refused: ${r.reason}: ${r.text}`),
      stdin: () => Promise.resolve(new Uint8Array()),
      stdinPendingSince: () => this.stdinSince,
      finish: (out) => this.events.push(`finished ${out.status}`),
    };
  }
}

function pool(opts: Partial<PoolOptions> = {}): { pool: WorkerPool; threads: ScriptedThread[] } {
  const threads: ScriptedThread[] = [];
  const p = new WorkerPool({
    min: 0,
    max: 2,
    idleMs: 60_000,
    admissionWaitMs: 200,
    maxWaiting: 8,
    callTimeoutMs: 0,
    spawn: () => {
      const t = new ScriptedThread();
      threads.push(t);
      return t as unknown as Worker;
    },
    log: () => {},
    ...opts,
  });
  return { pool: p, threads };
}

/** Two calls running, each on its own ready thread. */
function busyPool(opts: Partial<PoolOptions> = {}) {
  const made = pool(opts);
  const callers = [new Caller(), new Caller()];
  for (const c of callers) made.pool.offer(c.job());
  for (const t of made.threads) t.ready();
  return { ...made, callers };
}

describe("WorkerPool admission", () => {
  test("a call is accepted once a thread is its own: an idle one, or one started for it", () => {
    const { pool: p, threads } = pool({ min: 1 });
    threads[0]!.ready();
    const first = new Caller();
    p.offer(first.job());
    expect(first.events).toEqual(["accepted"]);
    expect(threads[0]!.runs).toHaveLength(1);
    const second = new Caller();
    p.offer(second.job());
    expect(second.events).toEqual(["accepted"]); // a thread was started for it ...
    expect(threads).toHaveLength(2);
    expect(threads[1]!.runs).toHaveLength(0); // ... and gets the call once it is ready
    threads[1]!.ready();
    expect(threads[1]!.runs).toHaveLength(1);
  });

  test("all threads working: a call waits unaccepted and is accepted when one frees up", () => {
    const { pool: p, threads } = busyPool();
    const third = new Caller();
    p.offer(third.job());
    expect(third.events).toEqual([]);
    threads[0]!.done();
    expect(third.events).toEqual(["accepted"]);
    expect(threads[0]!.runs).toHaveLength(2);
  });

  test("all threads working for longer than the admission bound: the waiting call is refused then", async () => {
    const { pool: p } = busyPool({ admissionWaitMs: 50 });
    const third = new Caller();
    p.offer(third.job());
    await Bun.sleep(120);
    expect(third.events).toEqual(["refused: timeout: no worker thread free within 50 ms"]);
  });

  test("every thread waits on another process: a call is refused at once", () => {
    const { pool: p, threads } = busyPool();
    for (const t of threads) t.waiting(true);
    const third = new Caller();
    p.offer(third.job());
    expect(third.events).toEqual(["refused: stalled: all 2 worker threads run calls that wait on other processes"]);
  });

  test("one thread still works: a call waits for it", () => {
    const { pool: p, threads } = busyPool();
    threads[0]!.waiting(true);
    const third = new Caller();
    p.offer(third.job());
    expect(third.events).toEqual([]);
    threads[1]!.done();
    expect(third.events).toEqual(["accepted"]);
  });

  test("a waiting call is refused as soon as the last working thread starts to wait", async () => {
    const { pool: p, threads } = busyPool({ admissionWaitMs: 5_000 });
    threads[0]!.waiting(true);
    const third = new Caller();
    p.offer(third.job());
    threads[1]!.waiting(true);
    await Bun.sleep(60);
    expect(third.events).toEqual(["refused: stalled: all 2 worker threads run calls that wait on other processes"]);
  });

  test("a call whose caller has not sent its stdin counts as waiting on its caller", () => {
    const made = pool();
    const callers = [new Caller(), new Caller()];
    for (const c of callers) {
      c.stdinSince = clockMs() - 1_000;
      made.pool.offer(c.job());
    }
    for (const t of made.threads) t.ready();
    const third = new Caller();
    made.pool.offer(third.job());
    expect(third.events[0]).toStartWith("refused: stalled: all 2 worker threads");
  });

  test("a wait that has just begun is part of a call's work: a call waits for such threads rather than being refused", () => {
    const made = pool();
    const callers = [new Caller(), new Caller()];
    callers[0]!.stdinSince = clockMs() - 5; // its stdin on its way
    for (const c of callers) made.pool.offer(c.job());
    for (const t of made.threads) t.ready();
    made.threads[1]!.waiting(true, 5); // a lock held for a moment by another call
    const third = new Caller();
    made.pool.offer(third.job());
    expect(third.events).toEqual([]);
    made.threads[0]!.done();
    expect(third.events).toEqual(["accepted"]);
  });

  test("a waiting call's caller is told so at once and every QUEUED_RENEW_MS until it is accepted, then no more", async () => {
    const { pool: p, threads, callers } = busyPool({ admissionWaitMs: 5_000 });
    expect(callers.map((c) => c.queued)).toEqual([0, 0]); // accepted at once: never told to wait
    const third = new Caller();
    p.offer(third.job());
    expect(third.queued).toBe(1);
    await Bun.sleep(QUEUED_RENEW_MS * 2 + 150);
    expect(third.queued).toBe(3);
    threads[0]!.done();
    expect(third.events).toEqual(["accepted"]);
    await Bun.sleep(QUEUED_RENEW_MS + 100);
    expect(third.queued).toBe(3);
  });

  test("a call refused at once is not told to wait, nor one refused because no thread works", async () => {
    const { pool: p, threads } = busyPool({ maxWaiting: 1, admissionWaitMs: 5_000 });
    const waiting = new Caller();
    p.offer(waiting.job());
    const over = new Caller();
    p.offer(over.job());
    expect(over.events[0]).toStartWith("refused: busy");
    expect(over.queued).toBe(0);
    for (const t of threads) t.waiting(true);
    await Bun.sleep(QUEUED_RENEW_MS + 100);
    expect(waiting.events[0]).toStartWith("refused: stalled");
    expect(waiting.queued).toBe(1); // told once, when it began to wait; not after it was refused
  });

  test("no more than maxWaiting calls wait; the next is refused at once", () => {
    const { pool: p } = busyPool({ maxWaiting: 2 });
    const waiting = [new Caller(), new Caller()];
    for (const c of waiting) p.offer(c.job());
    const over = new Caller();
    p.offer(over.job());
    expect(waiting.map((c) => c.events)).toEqual([[], []]);
    expect(over.events).toEqual(["refused: busy: 2 calls already wait for a worker thread"]);
  });

  test("a thread still starting is working: a call waits for it rather than being refused", () => {
    const { pool: p } = pool();
    const callers = [new Caller(), new Caller(), new Caller()];
    for (const c of callers) p.offer(c.job());
    expect(callers.map((c) => c.events)).toEqual([["accepted"], ["accepted"], []]);
  });
});

describe("WorkerPool: one attachment at a time, and calls ended", () => {
  test("a DEL waits for the ADD of its attachment; another attachment's call overlaps it", () => {
    const { pool: p, threads } = pool({ min: 3 });
    for (const t of threads) t.ready();
    const add = new Caller();
    const del = new Caller();
    const other = new Caller();
    p.offer(add.job("c1/eth0"));
    p.offer(del.job("c1/eth0"));
    p.offer(other.job("c2/eth0"));
    expect([add.events, del.events, other.events]).toEqual([["accepted"], [], ["accepted"]]);
    const addThread = threads.find((t) => t.runs.length === 1 && t.runs[0]!.env === add.env)!;
    addThread.done();
    expect(del.events).toEqual(["accepted"]);
  });

  test("the ADD's caller goes away: the ADD is ended (END set, the thread told), and its DEL starts when it has ended", () => {
    const { pool: p, threads } = pool({ min: 2 });
    for (const t of threads) t.ready();
    const add = new Caller();
    const offered = p.offer(add.job("c1/eth0"));
    const thread = threads.find((t) => t.runs.length === 1)!;
    thread.waiting(true); // hung in its IPAM
    const del = new Caller();
    p.offer(del.job("c1/eth0"));
    offered.gone();
    expect(Atomics.load(thread.cells(), END)).toBe(EndReason.CALLER_GONE);
    expect(thread.ends).toEqual([{ t: "end", id: thread.runs[0]!.id, reason: EndReason.CALLER_GONE }]);
    expect(del.events).toEqual([]);
    thread.done(1); // the ended ADD unwinds
    expect(del.events).toEqual(["accepted"]);
  });

  test("an attachment's call that does not end within the admission bound: the next one is refused", async () => {
    const { pool: p, threads } = pool({ min: 2, admissionWaitMs: 50 });
    for (const t of threads) t.ready();
    p.offer(new Caller().job("c1/eth0"));
    const del = new Caller();
    p.offer(del.job("c1/eth0"));
    await Bun.sleep(120);
    expect(del.events).toEqual(["refused: timeout: a call of the same attachment still runs after 50 ms"]);
  });

  test("a caller gone before its call was accepted: the call is dropped, never run", () => {
    const { pool: p, threads } = busyPool();
    const third = new Caller();
    const offered = p.offer(third.job());
    offered.gone();
    threads[0]!.done();
    expect(third.events).toEqual([]);
    expect(threads[0]!.runs).toHaveLength(1);
    expect(p.inFlight).toBe(1);
  });

  test("a call ended while its thread starts runs ended (END is set when it is posted)", () => {
    const { pool: p, threads } = pool();
    const offered = p.offer(new Caller().job());
    offered.gone();
    threads[0]!.ready();
    expect(Atomics.load(threads[0]!.cells(), END)).toBe(EndReason.CALLER_GONE);
  });

  test("a call running longer than callTimeoutMs is ended with TIME_UP; the next call on its thread starts clean", async () => {
    const { pool: p, threads } = pool({ min: 1, callTimeoutMs: 50 });
    threads[0]!.ready();
    p.offer(new Caller().job());
    await Bun.sleep(100);
    expect(threads[0]!.ends.map((e) => e.reason)).toEqual([EndReason.TIME_UP]);
    threads[0]!.done(1);
    p.offer(new Caller().job());
    expect(Atomics.load(threads[0]!.cells(), END)).toBe(0);
  });

  test("drained() waits for calls waiting unaccepted as well as running ones", async () => {
    const { pool: p, threads } = busyPool();
    p.offer(new Caller().job());
    let drained = false;
    void p.drained().then(() => (drained = true));
    threads[0]!.done();
    threads[1]!.done();
    await Bun.sleep(0);
    expect(drained).toBe(false);
    threads[0]!.done();
    await Bun.sleep(0);
    expect(drained).toBe(true);
  });
});
